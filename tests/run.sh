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
skipped=0
failed_names=""
log=$(mktemp)
times=""
for t in "$@"; do
    echo "== $t"
    t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$dir/$t" 2>&1 | tee "$log"
    # Each binary's seconds, for the summary: CI's time budget is watched.
    times="$times$(($(date +%s) - t0)) $t
"
    # A binary may run several cmocka groups (test_make_run runs two): each
    # prints "Running N", then "PASSED N" and, with failures, "FAILED N".
    # Their sums are the binary's; fewer ended than ran means it died.
    sum() { sed -n "s/$1/\\1/p" "$log" | awk '{ n += $1 } END { print n + 0 }'; }
    ran=$(sum '^\[==========\] Running \([0-9]*\) test(s)\..*')
    p=$(sum '^\[  PASSED  \] \([0-9]*\) test(s)\..*')
    f=$(sum '^\[  FAILED  \] \([0-9]*\) test(s), listed below:.*')
    # A test that cannot run here (test_hosts without root) skips with a line
    # saying why: it ended, and is counted apart.
    k=$(sum '^\[  SKIPPED \] \([0-9]*\) test(s), listed below:.*')
    passed=$((passed + p))
    skipped=$((skipped + k))
    if [ "$ran" -eq 0 ] || [ $((p + f + k)) -lt "$ran" ]; then
        echo "== $t: ended without a summary (crash or time limit)"
        lost=$((ran - p - f - k))
        [ "$lost" -gt 0 ] || lost=1
        f=$((f + lost))
    fi
    if [ "$f" -gt 0 ]; then
        failed=$((failed + f))
        failed_names="$failed_names $t"
    fi
done
rm -f "$log"
echo
echo "slowest binaries (seconds):" $(printf '%s' "$times" | sort -rn | head -12 | tr '\n' ' ')
[ -n "$failed_names" ] && echo "failing binaries:$failed_names"
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
