#!/bin/sh
# run.sh DIR [NAME...] - runs refgate's cmocka test binaries (all test_* in
# DIR, or the NAMEs given), each under a time limit, and ends with one summary
# line "N passed, N failed". A binary that crashes or times out before its
# own summary counts as one failed test. Exit status: 0 only if none failed.
set -u
dir=$1
shift
limit=${REFGATE_TEST_TIMEOUT_S:-900}

if [ $# -eq 0 ]; then
    set -- $(cd "$dir" && ls test_* 2>/dev/null | grep -v '\.[od]$')
fi
[ $# -gt 0 ] || { echo "run.sh: no test binaries in $dir" >&2; exit 1; }

passed=0
failed=0
failed_names=""
log=$(mktemp)
for t in "$@"; do
    echo "== $t"
    timeout --kill-after=10 "$limit" "$dir/$t" 2>&1 | tee "$log"
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\..*/\1/p' "$log" | tail -n 1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:.*/\1/p' "$log" | tail -n 1)
    if [ -z "$p" ] && [ -z "$f" ]; then
        # cmocka prints "[  PASSED  ] N" only when all passed; with failures it
        # prints both lines. Neither means the binary died before the end.
        echo "== $t: ended without a summary (crash or time limit)"
        failed=$((failed + 1))
        failed_names="$failed_names $t"
        continue
    fi
    passed=$((passed + ${p:-0}))
    if [ -n "$f" ] && [ "$f" -gt 0 ]; then
        failed=$((failed + f))
        failed_names="$failed_names $t"
    fi
done
rm -f "$log"
echo
[ -n "$failed_names" ] && echo "failing binaries:$failed_names"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
