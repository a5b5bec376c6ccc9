#!/bin/sh
# run.sh BUILD [--quick] - `make bench`: refgate's floor figures and
# Playwright's on the same Chromium binary and flags, in one run, printed as
# one table with ratios by bench/report.mjs. Measures; asserts nothing.
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
node "$here/report.mjs" "$out/refgate.json" "$out/playwright.json"
rm -rf "$out"
