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

# Node.js and npm from Debian when missing, then the pinned packages.
sh "$here/../../scripts/npm-pinned.sh" "$here" agent-browser/bin/agent-browser-linux-x64

# playwright-core 1.62 and later declare node >=20; Debian 12's own nodejs is 18.
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
    echo "install.sh: warning: node $(node --version) is older than playwright-core wants (>=20)" >&2
fi

# agent-browser ships one binary per platform; bench/loop.c runs the Linux x64 one.
ab="$here/node_modules/agent-browser/bin/agent-browser-linux-x64"
[ -x "$ab" ] || chmod +x "$ab"
