#!/bin/sh
# Installs playwright-core at the version package.json pins, from the npm
# registry (Node.js and npm from Debian if missing); no browser download:
# test_view runs it on /usr/lib/chromium/chromium.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec sh "$here/../../scripts/npm-pinned.sh" "$here" playwright-core/package.json
