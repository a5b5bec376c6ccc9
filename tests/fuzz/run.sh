#!/bin/sh
# run.sh DIR SECONDS TARGET... - runs the libFuzzer binaries DIR/fuzz_TARGET,
# FUZZ_JOBS of them at a time (2: the machine's cores; CI runs nothing else
# meanwhile), each for SECONDS seconds from its checked-in seeds, with its
# dictionary. New corpus
# entries go to DIR/corpus/TARGET, crashes to DIR/artifacts/TARGET, the whole
# log to DIR/TARGET.log. Prints one line per target (executions, speed,
# coverage) and the crash report of any that failed. Exit status: 0 only if
# no target found a crash, a leak, undefined behaviour or a broken property.
set -u
dir=$1
secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)

# Longest input per target: a little over each parser's own limit, so that
# the limit itself is exercised (URLs: 8192 bytes; targets: 4096; a SOCKS5
# greeting and request: 519).
max_len() {
    case $1 in
    url) echo 9000 ;;
    target) echo 4200 ;;
    addr) echo 400 ;;
    socks) echo 600 ;;
    view_token) echo 300 ;;
    find) echo 4096 ;;
    cdp) echo 16384 ;;
    *) echo 8192 ;;
    esac
}

jobs=${FUZZ_JOBS:-2}

# One target: its log, and its line and exit status in DIR/TARGET.line, .rc.
run_one() {
    t=$1
    bin=$dir/fuzz_$t
    work=$dir/corpus/$t
    art=$dir/artifacts/$t
    log=$dir/$t.log
    mkdir -p "$work" "$art"
    dict=""
    [ -f "$here/dict/$t.dict" ] && dict="-dict=$here/dict/$t.dict"
    # shellcheck disable=SC2086
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0:${ASAN_OPTIONS:-} \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-} \
        "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len="$(max_len "$t")" -print_final_stats=1 -artifact_prefix="$art/" $dict \
        "$work" "$here/corpus/$t" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
    echo "fuzz_$t: ${runs:-?} runs, ${speed:-?} exec/s, ${cov:-no coverage line}" >"$dir/$t.line"
    echo "$rc" >"$dir/$t.rc"
}

# In batches of $jobs, each batch waited for whole.
n=0
for t in "$@"; do
    echo "== fuzz_$t: ${secs}s"
    rm -f "$dir/$t.line" "$dir/$t.rc"
    run_one "$t" &
    n=$((n + 1))
    if [ "$n" -ge "$jobs" ]; then
        wait
        n=0
    fi
done
wait

failed=""
summary=""
for t in "$@"; do
    line=$(cat "$dir/$t.line" 2>/dev/null || echo "fuzz_$t: did not report")
    rc=$(cat "$dir/$t.rc" 2>/dev/null || echo 1)
    if [ "$rc" -ne 0 ]; then
        line="$line, FAILED (exit $rc)"
        failed="$failed $t"
        echo "-- fuzz_$t failed; the end of $dir/$t.log:"
        tail -n 60 "$dir/$t.log"
        ls "$dir/artifacts/$t" | sed "s|^|-- artifact: $dir/artifacts/$t/|"
    fi
    summary="$summary$line
"
done
echo
printf '%s' "$summary"
if [ -n "$failed" ]; then
    echo "fuzz: failing targets:$failed"
    exit 1
fi
echo "fuzz: no target found anything"
