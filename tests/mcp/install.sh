#!/bin/sh
# Installs the MCP TypeScript SDK at the version package.json pins, from the
# npm registry (Node.js and npm from Debian if missing). test_mcp runs it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec sh "$here/../../scripts/npm-pinned.sh" "$here" @modelcontextprotocol/sdk/package.json
