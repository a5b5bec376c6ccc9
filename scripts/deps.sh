#!/bin/sh
# deps.sh - installs the Debian 12 packages refgate needs, and nothing when
# they are all present. Called by `make deps`, which `make test` and
# `make run` depend on, so a fresh machine needs no other step.
#
# The list is the single source of truth: add a package here when a module
# starts to need it.
set -eu

PACKAGES="
gcc
make
libc6-dev
pkg-config
chromium
redis-server
nginx
libfcgi-dev
libwebsockets-dev
libmsgpack-dev
libhiredis-dev
libxxhash-dev
libcjson-dev
libssl-dev
libcmocka-dev
procps
iproute2
curl
clang
libclang-rt-14-dev
llvm
"

missing=""
for p in $PACKAGES; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = "installed" ] || missing="$missing $p"
done

if [ -z "$missing" ]; then
    exit 0
fi

echo "deps: installing:$missing"
if [ "$(id -u)" -ne 0 ]; then
    echo "deps: these Debian packages are missing and installing them needs root:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Package lists may be absent (fresh image) or stale: refresh once, then install.
# Another apt (unattended-upgrades, a second `make` started at the same time)
# may hold dpkg's lock: wait for it, within a bound, rather than fail.
lock="-o DPkg::Lock::Timeout=600"
# shellcheck disable=SC2086
apt-get $lock update -q
# shellcheck disable=SC2086
apt-get $lock install -y -q --no-install-recommends $missing
