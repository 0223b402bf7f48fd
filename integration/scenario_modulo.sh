#!/usr/bin/env bash
# A modulo doubling on real servers, PostgreSQL then MariaDB: P primaries
# (RESHARD_PAIRS of integration/servers.sh) with the tables `orders` and
# `items`, mapped by `modulo` over P nodes, become 2P nodes (node i's
# replica is node i + P) by promoting their replicas.  The crash series of
# the slot doublings (a crash after every step and in the middle of verify
# and purge, each resumed, a writer routing by the routing file
# throughout), checked exactly against the oracle; then `reshard verify`
# on fresh data (verify_checks), the fenced verify comparing again what
# changed since pre-verify (recheck_checks); then the replicas are made
# replicas again.
#
# Needs the servers of integration/servers.sh (RESHARD_SERVERS_DIR/env).
# Usage: integration/scenario_modulo.sh   (ENGINE: pg or my, else both;
# ROWS, KEYS: the data size)
if [ -z "${ENGINE:-}" ]; then
	ENGINE=pg "$0"
	pg=$?
	ENGINE=my "$0" && exit "$pg"
	exit 1
fi
MAP=modulo LOGICAL_TABLES="orders items"
ROWS=${ROWS:-50000} KEYS=${KEYS:-5000}
# shellcheck source=integration/doubling_lib.sh
. "$(dirname "$0")/doubling_lib.sh"
begin
crash_series
promoted_checks
verify_checks
recheck_checks
finish
