#!/bin/sh
# npm-pinned.sh DIR [FILE...] - installs the npm packages DIR/package.json
# pins (exact versions, from the npm registry) into DIR/node_modules when
# what is there differs, installing Node.js and npm from Debian first if
# they are missing; then checks that each FILE (relative to
# DIR/node_modules) exists. Idempotent and quiet on success. The tests that
# need a client or a library from npm run it in their setup.
set -eu

here=$(cd "$1" && pwd)
shift

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq nodejs npm >/dev/null
fi

# The exact versions package.json pins, and what node_modules holds now.
pinned() {
    node -p 'const d = require(process.argv[1]).dependencies; Object.keys(d).sort().map((k) => k + "@" + d[k]).join(" ")' \
        "$here/package.json"
}
installed() {
    for pkg in $(node -p 'Object.keys(require(process.argv[1]).dependencies).sort().join(" ")' "$here/package.json"); do
        f="$here/node_modules/$pkg/package.json"
        if [ -f "$f" ]; then
            printf '%s@%s ' "$pkg" "$(node -p 'require(process.argv[1]).version' "$f")"
        fi
    done
}
want=$(pinned)
have=$(installed | sed 's/ $//')

if [ "$have" != "$want" ]; then
    log=$(mktemp)
    if ! (cd "$here" && npm install --no-audit --no-fund --no-package-lock --loglevel=error) >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        exit 1
    fi
    rm -f "$log"
fi

# The files the callers use must be there, whatever npm said.
for f in "$@"; do
    if [ ! -f "$here/node_modules/$f" ]; then
        echo "npm-pinned.sh: $here/node_modules/$f is missing after npm install" >&2
        exit 1
    fi
done
