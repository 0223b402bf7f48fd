#!/usr/bin/env bash
# Install the Debian packages that reshard's build, tests and servers need.
# Idempotent and quiet: when everything is already installed it prints
# nothing and asks no package index.  Usage: integration/install-deps.sh
set -euo pipefail

packages=(
	build-essential cmake pkg-config git
	libpq-dev libmariadb-dev libuv1-dev libconfig-dev libsqlite3-dev
	libssl-dev libjansson-dev libcmocka-dev
	sqlite3 python3
	man-db groff-base
	clang-format clang-tidy cppcheck
	postgresql postgresql-client mariadb-server mariadb-client
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
# Package scripts must not start system-wide servers: the tests start their
# own on loopback ports, as an unprivileged user, in a temporary directory.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
	$sudo chmod 755 /usr/sbin/policy-rc.d
	trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
