#!/bin/sh
# run.sh BUILD [--quick] - `make bench`: refgate's figures and Playwright's on
# the same Chromium binary and flags, in one run, printed as tables with
# ratios by bench/report.mjs. Measures; asserts nothing.
#   floor    bench/floor.c and bench/peer/floor.mjs
#   gateway  bench/gateway.c: a trivial command through nginx and a worker
#            against the raw pipe, and 8 sessions in parallel on 2 workers
#   park     bench/park.c: park and restore against the cold path, Redis
#            bytes per parked session, round trips per observe
#   observe  bench/observe.c and bench/peer/observe.mjs: observe against
#            Playwright's AI snapshot on bench/pages/controls.html and the
#            corpus pages (../shared/corpus/pages), plus Playwright's MCP
#            browser_snapshot on the controls page (full run only).
# --quick keeps the whole run under 2 minutes: shorter floor, 2 runs per page
# instead of 5, and only the controls page and 3 corpus pages.
set -eu
build=$1
shift
quick=""
for a in "$@"; do
    [ "$a" = "--quick" ] && quick="--quick"
done
here=$(dirname "$0")
sh "$here/peer/install.sh"
out=$(mktemp -d /tmp/refgate-bench-out.XXXXXX)

# Both sides get the same page list. Empty: the controls page and every
# corpus page. The quick pages: a large, a middle and a small one that load fast.
pages=""
mcp="--mcp"
if [ -n "$quick" ]; then
    pages="controls readability-wikipedia.html readability-mozilla-1.html readability-google-sre-book-1.html"
    mcp=""
fi

echo "bench: refgate floor ${quick:+(quick)}..." >&2
"$build/bench/floor" $quick >"$out/refgate.json" 2>"$out/refgate.log" || {
    echo "bench: refgate floor failed, see $out/refgate.log" >&2
    exit 1
}
echo "bench: Playwright floor ${quick:+(quick)}..." >&2
node "$here/peer/floor.mjs" $quick >"$out/playwright.json" 2>"$out/playwright.log" || {
    echo "bench: Playwright floor failed, see $out/playwright.log" >&2
    exit 1
}
echo "bench: refgate observe ${quick:+(quick)}..." >&2
# shellcheck disable=SC2086 # $pages is a word list
"$build/bench/observe" $quick $pages >"$out/refgate-observe.json" 2>"$out/refgate-observe.log" || {
    echo "bench: refgate observe failed, see $out/refgate-observe.log" >&2
    exit 1
}
echo "bench: Playwright observe ${quick:+(quick)}..." >&2
# shellcheck disable=SC2086
node "$here/peer/observe.mjs" $quick $mcp $pages >"$out/playwright-observe.json" \
    2>"$out/playwright-observe.log" || {
    echo "bench: Playwright observe failed, see $out/playwright-observe.log" >&2
    exit 1
}
echo "bench: click by ref, refgate and Playwright ${quick:+(quick)}..." >&2
"$build/bench/click" $quick >"$out/refgate-click.json" 2>"$out/refgate-click.log" || {
    echo "bench: refgate click failed, see $out/refgate-click.log" >&2
    exit 1
}
node "$here/peer/click.mjs" $quick >"$out/playwright-click.json" 2>"$out/playwright-click.log" || {
    echo "bench: Playwright click failed, see $out/playwright-click.log" >&2
    exit 1
}
echo "bench: park and restore ${quick:+(quick)}..." >&2
"$build/bench/park" $quick >"$out/refgate-park.json" 2>"$out/refgate-park.log" || {
    echo "bench: refgate park failed, see $out/refgate-park.log" >&2
    exit 1
}
echo "bench: the gateway's own cost ${quick:+(quick)}..." >&2
"$build/bench/gateway" $quick >"$out/refgate-gateway.json" 2>"$out/refgate-gateway.log" || {
    echo "bench: refgate gateway failed, see $out/refgate-gateway.log" >&2
    exit 1
}
node "$here/report.mjs" "$out/refgate.json" "$out/playwright.json" \
    "$out/refgate-observe.json" "$out/playwright-observe.json" \
    "$out/refgate-click.json" "$out/playwright-click.json" "$out/refgate-park.json" \
    "$out/refgate-gateway.json"
rm -rf "$out"
