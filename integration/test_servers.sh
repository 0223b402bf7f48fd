#!/usr/bin/env bash
# Smoke test of integration/servers.sh: start the four test servers, check
# that each replica really replicates from its primary (rows written on the
# primary show up on the replica, same PostgreSQL system identifier, MariaDB
# replication threads running on GTID), that start is idempotent, and that
# stop leaves nothing running.  Prints one "ok"/"not ok" line per check and
# ends with "N passed, M failed"; exits non-zero if any check failed.
#
# Usage: integration/test_servers.sh
# The servers live in a fresh temporary directory (or $RESHARD_SERVERS_DIR)
# and are stopped on exit, whatever happens.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SERVERS="$SCRIPT_DIR/servers.sh"
WAIT=20                                 # seconds a replica may take to catch up
ROWS=100

if [ -n "${RESHARD_SERVERS_DIR:-}" ]; then
	DIR=$RESHARD_SERVERS_DIR
else
	TOP=$(mktemp -d /tmp/reshard-test-servers.XXXXXX)
	chmod 755 "$TOP"               # the server owner must reach DIR
	DIR=$TOP/servers
fi

cleanup() {
	"$SERVERS" stop "$DIR" || echo "test_servers: stopping the servers failed" >&2
	[ -z "${TOP:-}" ] || rmdir "$TOP" 2>/dev/null || true
}
trap cleanup EXIT

passed=0 failed=0

# check DESCRIPTION COMMAND...: run COMMAND; count and report the result.
check() {
	local what=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
		echo "ok - $what"
	else
		failed=$((failed + 1))
		echo "not ok - $what"
	fi
}

# pg URL SQL / my PORT SQL: one query over TCP as the app user, bare output.
pg() { psql -X -w -q -At -v ON_ERROR_STOP=1 "$1" -c "$2"; }
my() {
	mariadb --no-defaults --batch --skip-column-names -h "$RESHARD_HOST" \
		-P "$1" -u "$RESHARD_DB_USER" -p"$RESHARD_DB_PASSWORD" \
		"$RESHARD_DB_NAME" -e "$2"
}

# equals EXPECTED COMMAND...: COMMAND prints exactly EXPECTED.
equals() {
	local expected=$1 actual
	shift
	actual=$("$@" 2>&1) || { echo "  command failed: $actual" >&2; return 1; }
	[ "$actual" = "$expected" ] ||
		{ echo "  expected '$expected', got '$actual'" >&2; return 1; }
}

# eventually_equals EXPECTED COMMAND...: like equals, within $WAIT seconds.
eventually_equals() {
	local deadline=$((SECONDS + WAIT))
	until equals "$@" 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] || { equals "$@"; return; }
		sleep 0.2
	done
}

fails() { ! "$@" >/dev/null 2>&1; }
quiet() { "$@" >/dev/null; }

# -- start ----------------------------------------------------------------
if ! "$SERVERS" start "$DIR" </dev/null; then
	echo "not ok - servers.sh start"
	echo "0 passed, 1 failed"
	exit 1
fi
check "servers.sh start" true
# shellcheck source=/dev/null
source "$DIR/env"
check "env file defines all four URLs" test -n \
	"${RESHARD_PG_PRIMARY_URL:-}" -a -n "${RESHARD_PG_REPLICA_URL:-}" -a \
	-n "${RESHARD_MY_PRIMARY_URL:-}" -a -n "${RESHARD_MY_REPLICA_URL:-}"
check "servers.sh env prints the env file" \
	equals "$(cat "$DIR/env")" "$SERVERS" env "$DIR"
check "servers.sh status: all up" quiet "$SERVERS" status "$DIR"

# -- PostgreSQL -----------------------------------------------------------
pgp=$RESHARD_PG_PRIMARY_URL pgr=$RESHARD_PG_REPLICA_URL
sum=$((ROWS * (ROWS + 1) / 2))
check "pg primary listens on 127.0.0.1 only" \
	equals 127.0.0.1 pg "$pgp" "SHOW listen_addresses"
check "pg primary has wal_level=replica" equals replica pg "$pgp" "SHOW wal_level"
check "pg primary is not in recovery" equals f pg "$pgp" "SELECT pg_is_in_recovery()"
check "pg replica is a hot standby in recovery" \
	equals t pg "$pgr" "SELECT pg_is_in_recovery()"
check "pg replica wal receiver is streaming" \
	equals streaming pg "$pgr" "SELECT status FROM pg_stat_wal_receiver"
check "pg primary sees one streaming replica" \
	equals "streaming" pg "$pgp" "SELECT state FROM pg_stat_replication"
check "pg system identifiers are equal" equals \
	"$(pg "$pgp" "SELECT system_identifier FROM pg_control_system()")" \
	pg "$pgr" "SELECT system_identifier FROM pg_control_system()"
check "pg primary: create table and insert $ROWS rows" pg "$pgp" "
	CREATE TABLE smoke (id int PRIMARY KEY, name text NOT NULL);
	INSERT INTO smoke SELECT i, 'row ' || i FROM generate_series(1, $ROWS) i"
check "pg replica: the $ROWS rows arrive" eventually_equals "$ROWS|$sum" \
	pg "$pgr" "SELECT count(*), sum(id) FROM smoke"
check "pg replica refuses writes" fails pg "$pgr" "INSERT INTO smoke VALUES (0, 'x')"
check "pg app user cannot log in with a wrong password" fails \
	pg "${pgp/reshard:reshard@/reshard:wrong@}" "SELECT 1"

# -- MariaDB --------------------------------------------------------------
myp=$RESHARD_MY_PRIMARY_PORT myr=$RESHARD_MY_REPLICA_PORT
check "my primary binds 127.0.0.1 only" equals 127.0.0.1 my "$myp" "SELECT @@bind_address"
check "my replica binds 127.0.0.1 only" equals 127.0.0.1 my "$myr" "SELECT @@bind_address"
check "my primary: log_bin, ROW, gtid_strict_mode, server_id 1" \
	equals "1	ROW	1	1" my "$myp" \
	"SELECT @@log_bin, @@binlog_format, @@gtid_strict_mode, @@server_id"
check "my replica: log_bin, server_id 2" \
	equals "1	2" my "$myr" "SELECT @@log_bin, @@server_id"
check "my primary: create table and insert $ROWS rows" my "$myp" "
	CREATE TABLE smoke (id int PRIMARY KEY, name varchar(20) NOT NULL);
	INSERT INTO smoke SELECT seq, CONCAT('row ', seq) FROM seq_1_to_$ROWS"
pos=$(my "$myp" "SELECT @@gtid_binlog_pos") || pos=unknown
check "my replica reaches primary GTID $pos (MASTER_GTID_WAIT)" \
	equals 0 my "$myr" "SELECT MASTER_GTID_WAIT('$pos', $WAIT)"
check "my replica: the $ROWS rows arrived" \
	equals "$ROWS	$sum" my "$myr" "SELECT COUNT(*), SUM(id) FROM smoke"
status=$(mariadb --no-defaults -h "$RESHARD_HOST" -P "$myr" -u "$RESHARD_DB_USER" \
	-p"$RESHARD_DB_PASSWORD" -e "SHOW SLAVE STATUS\G" 2>&1 || true)
has() { grep -qE "^ *$1: $2\$" <<<"$status"; }
check "my replica: Slave_IO_Running=Yes" has Slave_IO_Running Yes
check "my replica: Slave_SQL_Running=Yes" has Slave_SQL_Running Yes
check "my replica: Using_Gtid=Slave_Pos" has Using_Gtid Slave_Pos
check "my replica: Master_Port=$myp" has Master_Port "$myp"
check "my app user cannot log in with a wrong password" fails \
	mariadb --no-defaults -h "$RESHARD_HOST" -P "$myp" -u "$RESHARD_DB_USER" \
	-pwrong -e "SELECT 1"

# -- idempotence and stop -------------------------------------------------
pids=$(cat "$DIR/pg-primary/postmaster.pid" "$DIR/pg-replica/postmaster.pid" \
	"$DIR/run/my-primary.pid" "$DIR/run/my-replica.pid" 2>/dev/null |
	awk 'FNR == 1' | tr '\n' ' ' || true)
start_again() {
	local t0=$SECONDS
	"$SERVERS" start "$DIR" </dev/null && [ $((SECONDS - t0)) -le 5 ]
}
check "second start is a quick no-op" start_again
check "second start kept the same server processes" equals "$pids" \
	sh -c "cat '$DIR/pg-primary/postmaster.pid' '$DIR/pg-replica/postmaster.pid' \
		'$DIR/run/my-primary.pid' '$DIR/run/my-replica.pid' |
		awk 'FNR == 1' | tr '\n' ' '"
check "servers.sh stop" "$SERVERS" stop "$DIR"
check "stop removed $DIR" test ! -e "$DIR"
# A zombie waiting for its parent to reap it is not running.
alive() {
	local pid
	for pid in $pids; do
		case $(ps -o stat= -p "$pid" 2>/dev/null) in
		'' | Z*) ;;
		*) echo "  pid $pid still running" >&2; return 0 ;;
		esac
	done
	return 1
}
check "stop left no server process running" fails alive
port_closed() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in "$RESHARD_PG_PRIMARY_PORT" "$RESHARD_PG_REPLICA_PORT" "$myp" "$myr"; do
	check "port $port is closed after stop" port_closed "$port"
done
check "servers.sh status after stop exits non-zero" fails "$SERVERS" status "$DIR"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
