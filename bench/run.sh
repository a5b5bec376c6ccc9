#!/bin/sh
# run.sh BUILD [--quick] - `make bench`: refgate's figures and its peers' on
# the same Chromium binary and flags, in one run, then one report with
# ratios (bench/peer/report.mjs). Measures; asserts nothing. The peers come from
# the npm registry (bench/peer/install.sh): playwright-core, the Playwright
# MCP server (@playwright/mcp) and agent-browser; React for the agent loop's
# page too (tests/fixtures/react/install.sh).
#
#   floor     bench/floor.c, bench/peer/floor.mjs: the pipe, cold start,
#             contexts (and Playwright's newContext + newPage 2 s apart, the
#             peer of the gateway's session.create)
#   gateway   bench/gateway.c: everything through nginx on one stack: the
#             trivial command against the raw pipe, observe on the
#             5,000-control page with the default registry cap, navigate,
#             session.create 2 s apart, the agent loop, 8/16/32 parallel
#             sessions with PSS per session, fairness (its click, fill and
#             press by ref under click)
#   loop      bench/loop.c: issue 20's agent loop on the React todo list
#             (tests/fixtures/react/todo.html), rounds interleaved: refgate
#             through nginx (msgpack), refgate-cli and agent-browser's CLI,
#             one process per command
#   parallel  bench/peer/parallel.mjs: Playwright, one context per session
#   mcp       bench/peer/mcp.mjs: @playwright/mcp over stdio: the agent loop
#             on the form page and on the React todo list, browser_click,
#             and (full run) browser_snapshot on every page
#   observe   bench/observe.c, bench/peer/observe.mjs: observe (the full
#             outline, and its size in the interactive mode) against
#             page.ariaSnapshot({mode:'ai'}) on bench/pages/controls.html and
#             the corpus pages (tests/corpus/pages), the two sides in
#             alternating rounds; the snapshots in BUILD/bench-out/snap, for
#             the text coverage
#   click     bench/gateway.c's click section (click, fill and press by ref
#             through nginx) and bench/peer/click.mjs, in alternating
#             rounds; bench/click.c: click by ref in-process
#   park      bench/park.c: park and restore, Redis bytes per parked session
#
# --quick keeps the whole run short (under two minutes on a quiet 2-core
# machine): one cold start, 8 parallel sessions only, one run per page on the
# controls page and 2 corpus pages, few clicks and loops (3 of the React
# loop per side), no MCP page snapshots and no second MCP configuration.
#
# Results and logs stay in BUILD/bench-out (report.md is the report); a bench
# that fails leaves its rows out of the report and makes the run exit 1.
set -u
build=$1
shift
quick=""
for a in "$@"; do
    [ "$a" = "--quick" ] && quick="--quick"
done
here=$(dirname "$0")
sh "$here/peer/install.sh" || exit 1
sh "$here/../tests/fixtures/react/install.sh" || exit 1
out="$build/bench-out"
rm -rf "$out"
mkdir -p "$out"

# Both observe sides get the same page list. Empty: the controls page and
# every corpus page. Quick: the controls page, a middle and a small corpus page.
pages=""
if [ -n "$quick" ]; then
    pages="controls readability-mozilla-1.html readability-google-sre-book-1.html"
fi

now() { date +%s.%N; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg | tr ' ' ','; }
start=$(now)
load_start=$(loadavg)
steps=""
loads=""
failed=""

# step NAME CMD...: runs CMD with stdout to $out/NAME.json and stderr to $out/NAME.log.
step() {
    name=$1
    shift
    echo "bench: $name ${quick:+(quick)}..." >&2
    t0=$(now)
    if ! "$@" >"$out/$name.json" 2>"$out/$name.log"; then
        echo "bench: $name failed, see $out/$name.log" >&2
        rm -f "$out/$name.json"
        failed="$failed $name"
    fi
    secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')
    steps="$steps${steps:+,}\"$name\":$secs"
    loads="$loads${loads:+,}\"$name\":$(cut -d' ' -f1 /proc/loadavg)"
}

step floor-refgate "$build/bench/floor" $quick
step floor-playwright node "$here/peer/floor.mjs" $quick
# Its click section runs apart, below, in rounds with Playwright's.
step gateway-refgate "$build/bench/gateway" $quick --skip click
step loop "$build/bench/loop" $quick
step parallel-playwright node "$here/peer/parallel.mjs" $quick
# shellcheck disable=SC2086 # $pages is a word list
step mcp node "$here/peer/mcp.mjs" $quick $pages
# Both write their snapshots to $out/snap/<side>/<page>.txt; report.mjs measures the
# text coverage of both from them, with one tokenizer. The two sides take
# turns, one run of every page a round (5 rounds, 1 with --quick), so both
# sample the machine over the same minutes; bench/peer/rounds.mjs joins each
# side's rounds into the one file report.mjs reads (medians over the rounds).
rounds=5
[ -n "$quick" ] && rounds=1
r=1
while [ "$r" -le "$rounds" ]; do
    # shellcheck disable=SC2086 # $pages is a word list
    step observe-refgate-r$r "$build/bench/observe" $quick --runs 1 --snap "$out/snap" $pages
    # shellcheck disable=SC2086
    step observe-playwright-r$r node "$here/peer/observe.mjs" $quick --runs 1 --snap "$out/snap" $pages
    r=$((r + 1))
done
for side in refgate playwright; do
    set -- "$out"/observe-$side-r*.json
    [ -e "$1" ] && node "$here/peer/rounds.mjs" "$out/observe-$side.json" "$@"
done
# Click, fill and press through nginx against Playwright's, the same way:
# 5 rounds of 40 timed actions each a side (1 of 30 with --quick), joined
# into gateway-refgate.json's click and into click-playwright.json.
clicks=40
[ -n "$quick" ] && clicks=30
r=1
while [ "$r" -le "$rounds" ]; do
    step click-gateway-r$r "$build/bench/gateway" --only click --clicks $clicks
    step click-playwright-r$r node "$here/peer/click.mjs" --clicks $clicks
    r=$((r + 1))
done
set -- "$out"/click-gateway-r*.json
[ -e "$1" ] && node "$here/peer/rounds.mjs" --acts click "$out/gateway-refgate.json" "$@"
set -- "$out"/click-playwright-r*.json
[ -e "$1" ] && node "$here/peer/rounds.mjs" --acts . "$out/click-playwright.json" "$@"
step click-refgate "$build/bench/click" $quick
step park-refgate "$build/bench/park" $quick

rev=$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$here/.." status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    rev="$rev with uncommitted changes"
fi
total=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')
cat >"$out/meta.json" <<EOF
{"quick":$([ -n "$quick" ] && echo true || echo false),"date":"$(date -u +%Y-%m-%dT%H:%M:%SZ)",
 "git":"$rev","load_start":[$load_start],"load_end":[$(loadavg)],
 "seconds":$total,"steps":{$steps},"load_after_step":{$loads}}
EOF
node "$here/peer/report.mjs" "$out" | tee "$out/report.md"
echo "bench: results and logs in $out" >&2
if [ -n "$failed" ]; then
    echo "bench: failed:$failed" >&2
    exit 1
fi
