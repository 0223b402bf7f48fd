#!/usr/bin/env bash
# The three engines behind src/backend/backend.h against real servers:
# build/backend_check (integration/backend_check.c) drives the PostgreSQL,
# MariaDB and SQLite backends on one libuv loop, through the public API
# only, and checks that
#   - the same rows, inserted with each engine's own SQL (NULL and '',
#     unicode and emoji, 30-digit decimals, floats, timestamps with and
#     without zone, booleans, bytes), give equal row hashes and chunk sums,
#     and that changing one value on one engine makes them differ;
#   - rows read from PostgreSQL and upserted into fresh tables on every
#     engine read back equal, repeat upserts change nothing, a changed row
#     is overwritten, after/upto ranges return exactly their rows and
#     delete_keys removes exactly its keys, twice;
#   - names that need quoting (table a"b, columns x`y and
#     "t; drop table z") are written, read and deleted exactly, and the
#     sentinel table z is untouched;
#   - a closed port, a listener that never answers (connect timeout), a
#     wrong password, a missing table and a table without a primary key
#     fail with the right code, the shard name and the masked URL, and
#     never the password;
#   - a connection killed by its server mid-query (pg_terminate_backend,
#     KILL) fails that query within 2 s without a crash;
#   - the operation bound ends a read from a PostgreSQL server process
#     stopped with kill -STOP, a MariaDB SLEEP(5) and an upsert behind
#     FLUSH TABLES WITH READ LOCK, a SQLite write behind another
#     connection's lock and a long SQLite query, naming shard and bound;
#     the server side of a closed connection ends too;
#   - keys of bytes, timestamptz and boolean columns read back canonical
#     and byte-identical on the three engines, in batches and in ranges
#     bounded by PostgreSQL's keys; PostgreSQL's keys delete exactly their
#     rows on MariaDB and SQLite; a SQLite key that does not bind back
#     exactly (text in a BLOB key) fails the read with RS_EKEY;
#   - on every engine with change capture: reads by key return exactly the
#     rows of the keys found (composite, odd, 1,200 at once); capture logs
#     inserts, updates (of the key too) and deletes in position order,
#     repeats without harm, and is removed with its log and triggers;
#   - the libuv loop closes cleanly at the end.
#
# Needs the servers of integration/servers.sh (RESHARD_SERVERS_DIR/env) and
# build/backend_check, built by integration/build.sh (BACKEND_CHECK=path
# overrides).  Drops its tables and temporary directory on exit.
# Usage: integration/scenario_backends.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
source "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}/env"

bin=${BACKEND_CHECK:-build/backend_check}
if [ ! -x "$bin" ]; then
	echo "scenario_backends.sh: $bin not found; run integration/build.sh" >&2
	exit 1
fi
tmp=$(mktemp -d /tmp/reshard-backends.XXXXXX)

pg() { psql -X -w -q -At -v ON_ERROR_STOP=1 "$RESHARD_PG_PRIMARY_URL" -c "$1"; }
my() {
	mariadb --no-defaults --batch --skip-column-names -h "$RESHARD_HOST" \
		-P "$RESHARD_MY_PRIMARY_PORT" -u "$RESHARD_DB_USER" \
		-p"$RESHARD_DB_PASSWORD" "$RESHARD_DB_NAME" -e "$1"
}
cleanup() {
	[ -n "${KEEP:-}" ] && return
	pg 'DROP TABLE IF EXISTS rs_check_types, rs_check_copy, rs_check_nopk,
		rs_check_missing, rs_check_pids, z, "a""b", xkeys, rs_check_cap,
		reshard_chg_rs_check_cap' >/dev/null 2>&1 ||
		true
	# shellcheck disable=SC2016 # backticks quote a MariaDB name
	my 'DROP TABLE IF EXISTS rs_check_types, rs_check_copy, rs_check_nopk,
		rs_check_missing, rs_check_pids, z, `a"b`, xkeys, rs_check_cap,
		reshard_chg_rs_check_cap' >/dev/null 2>&1 ||
		true
	rm -rf "$tmp"
}
trap cleanup EXIT

rc=0
"$bin" "$RESHARD_PG_PRIMARY_URL" "$RESHARD_MY_PRIMARY_URL" "$tmp" || rc=$?
exit "$rc"
