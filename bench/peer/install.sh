#!/bin/sh
# Installs the peers of bench/peer/*.mjs and bench/loop.c: Node.js and npm
# from Debian if they are missing, then playwright-core, the Playwright MCP
# server (@playwright/mcp) and agent-browser at the exact versions pinned in
# package.json, from the npm registry (never a browser download: Debian's
# Chromium is used). agent-browser's Linux binary gets its run bit here,
# since its install script may not run (npm's ignore-scripts).
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
    if ! (cd "$here" && npm install --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        exit 1
    fi
    rm -f "$log"
fi

# agent-browser ships one binary per platform; bench/loop.c runs the Linux x64 one.
ab="$here/node_modules/agent-browser/bin/agent-browser-linux-x64"
if [ ! -f "$ab" ]; then
    echo "install.sh: $ab is missing after npm install" >&2
    exit 1
fi
[ -x "$ab" ] || chmod +x "$ab"
