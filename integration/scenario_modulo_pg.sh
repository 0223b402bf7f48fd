#!/usr/bin/env bash
# A modulo doubling on real PostgreSQL servers: P primaries (RESHARD_PAIRS of
# integration/servers.sh) with one table `orders` each, mapped by
# `modulo` over P nodes, become 2P nodes (node i's replica is node i + P)
# by promoting their replicas.  The crash series of the slot doubling
# (a crash after every step and in the middle of verify and purge, each
# resumed, a writer routing by the routing file throughout), checked
# exactly against the oracle; then the replicas are made replicas again.
#
# Needs the servers of integration/servers.sh (RESHARD_SERVERS_DIR/env).
# Usage: integration/scenario_modulo_pg.sh   (ROWS, KEYS: the data size)
ENGINE=pg MAP=modulo LOGICAL_TABLES="orders items"
ROWS=${ROWS:-50000} KEYS=${KEYS:-5000}
# shellcheck source=integration/doubling_lib.sh
. "$(dirname "$0")/doubling_lib.sh"
begin
crash_series
promoted_checks
finish
