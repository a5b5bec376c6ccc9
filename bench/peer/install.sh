#!/bin/sh
# Installs the Playwright peer used by bench/peer/floor.mjs: Node.js and npm
# from Debian if they are missing, then playwright-core at the exact version
# pinned in package.json (never a browser download: Debian's Chromium is used).
# Idempotent and quiet on success; safe to run before every benchmark.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq nodejs npm >/dev/null
fi

# playwright-core 1.62 and later declare node >=20; Debian 12's own nodejs is 18.
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
    echo "install.sh: warning: node $(node --version) is older than playwright-core wants (>=20)" >&2
fi

want=$(node -p 'require(process.argv[1]).dependencies["playwright-core"]' "$here/package.json")
have=
if [ -f "$here/node_modules/playwright-core/package.json" ]; then
    have=$(node -p 'require(process.argv[1]).version' "$here/node_modules/playwright-core/package.json")
fi

if [ "$have" != "$want" ]; then
    log=$(mktemp)
    if ! (cd "$here" && npm install --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        exit 1
    fi
    rm -f "$log"
fi
