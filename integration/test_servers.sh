#!/usr/bin/env bash
# Smoke test of integration/servers.sh: start a fleet of two pairs
# (RESHARD_PAIRS=2: two PostgreSQL primary/replica pairs, two MariaDB
# primary/replica pairs), check that each replica really replicates from its
# own primary (rows written on a primary show up on its replica and only
# there, pg_stat_wal_receiver.sender_port and Master_Port name the pair's
# primary, MariaDB replication threads running on GTID), that start is
# idempotent, that reset-replicas makes promoted replicas replicas again,
# that a failing reset-replicas says why, that stop leaves nothing running,
# also after a killed start, and that one pair still works (RESHARD_PAIRS=1).
# With RESHARD_DOWNSTREAM=1 the fleet also has pair 1's downstreams
# (pg-downstream, my-downstream): each replicates from pair 1's primary on
# that primary's port + 5, gets its rows, is rebuilt by reset-replicas and
# stopped by stop; the last part (one pair) runs without them, as by default.
# Prints one "ok"/"not ok" line per check and ends with "N passed, M
# failed"; exits non-zero if any check failed.
#
# Usage: integration/test_servers.sh
# The servers live in a fresh temporary directory (or $RESHARD_SERVERS_DIR)
# and are stopped on exit, whatever happens.  Ports come from the usual
# RESHARD_*_PORT variables (pair 2 is each of them + 10).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SERVERS="$SCRIPT_DIR/servers.sh"
WAIT=20                                 # seconds a replica may take to catch up
ROWS=100
export RESHARD_PAIRS=2
PAIRS=(1 2)
DOWNSTREAM=${RESHARD_DOWNSTREAM:-0}
[ "$DOWNSTREAM" = 1 ] || DOWNSTREAM=0
SERVERS_N=$((8 + 2 * DOWNSTREAM))

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

# var NAME K: the value of ${NAME_K} from the env file.
var() { local n="$1_$2"; echo "${!n:-}"; }

# within SECONDS COMMAND...: COMMAND succeeds in at most SECONDS seconds.
within() {
	local limit=$1 t0=$SECONDS
	shift
	if ! "$@" </dev/null || [ $((SECONDS - t0)) -gt "$limit" ]; then
		echo "  failed, or took $((SECONDS - t0))s (limit ${limit}s)" >&2
		return 1
	fi
}

# The first line of every server's pid file: the pairs' PostgreSQL servers
# (lines 1-4), their MariaDB servers (5-8), then, with the downstreams,
# pg-downstream (9) and my-downstream (10).
server_pids() {
	local name
	for name in pg-primary pg-replica pg-primary-2 pg-replica-2; do
		head -n 1 "$DIR/$name/postmaster.pid" 2>/dev/null || echo none
	done
	for name in my-primary my-replica my-primary-2 my-replica-2; do
		head -n 1 "$DIR/run/$name.pid" 2>/dev/null || echo none
	done
	[ "$DOWNSTREAM" = 1 ] || return 0
	head -n 1 "$DIR/pg-downstream/postmaster.pid" 2>/dev/null || echo none
	head -n 1 "$DIR/run/my-downstream.pid" 2>/dev/null || echo none
}

# my_status PORT: SHOW SLAVE STATUS over TCP; has FIELD VALUE greps it.
my_status() {
	mariadb --no-defaults -h "$RESHARD_HOST" -P "$1" -u "$RESHARD_DB_USER" \
		-p"$RESHARD_DB_PASSWORD" -e "SHOW SLAVE STATUS\G" 2>&1 || true
}
has() { grep -qE "^ *$1: $2\$" <<<"$status"; }

# Checks that pair K's replicas replicate from pair K's primaries, with the
# rows table smoke holds there (ROWS rows named 'pair K', plus EXTRA).
check_pg_pair() {
	local k=$1 p r pport
	p=$(var RESHARD_PG_PRIMARY_URL "$k") r=$(var RESHARD_PG_REPLICA_URL "$k")
	pport=$(var RESHARD_PG_PRIMARY_PORT "$k")
	check "pg pair $k: replica is a hot standby in recovery" \
		equals t pg "$r" "SELECT pg_is_in_recovery()"
	check "pg pair $k: replica streams from its own primary (sender_port $pport)" \
		equals "streaming|$pport" pg "$r" "SELECT status, sender_port FROM pg_stat_wal_receiver"
	check "pg pair $k: primary sees one streaming replica on its slot" \
		equals "streaming|$slot_prefix$([ "$k" -eq 1 ] || echo "_$k")|t" pg "$p" "
		SELECT r.state, s.slot_name, s.active FROM pg_stat_replication r
		JOIN pg_replication_slots s ON s.active_pid = r.pid
		WHERE s.slot_name <> 'pg_downstream'"
	check "pg pair $k: system identifiers of primary and replica are equal" equals \
		"$(pg "$p" "SELECT system_identifier FROM pg_control_system()")" \
		pg "$r" "SELECT system_identifier FROM pg_control_system()"
}

check_my_pair() {
	local k=$1 p r
	p=$(var RESHARD_MY_PRIMARY_PORT "$k") r=$(var RESHARD_MY_REPLICA_PORT "$k")
	status=$(my_status "$r")
	check "my pair $k: replica Slave_IO_Running=Yes" has Slave_IO_Running Yes
	check "my pair $k: replica Slave_SQL_Running=Yes" has Slave_SQL_Running Yes
	check "my pair $k: replica Using_Gtid=Slave_Pos" has Using_Gtid Slave_Pos
	check "my pair $k: replica Master_Port=$p (its own primary)" has Master_Port "$p"
}

# Checks that pair 1's downstreams replicate from pair 1's primaries, and
# hold the N rows named 'pair 1' of the smoke table when given N.
check_downstreams() {
	local n=${1:-} pp pd mp md
	pp=$RESHARD_PG_PRIMARY_PORT pd=$RESHARD_PG_DOWNSTREAM_URL_1
	check "pg downstream: a hot standby in recovery" equals t pg "$pd" "SELECT pg_is_in_recovery()"
	check "pg downstream: streams from pair 1's primary (sender_port $pp)" \
		equals "streaming|$pp" pg "$pd" "SELECT status, sender_port FROM pg_stat_wal_receiver"
	check "pg downstream: pair 1's primary streams to it on slot pg_downstream" \
		equals "pg-downstream|streaming|t" pg "$RESHARD_PG_PRIMARY_URL" "
		SELECT r.application_name, r.state, s.active FROM pg_stat_replication r
		JOIN pg_replication_slots s ON s.active_pid = r.pid
		WHERE s.slot_name = 'pg_downstream'"
	mp=$RESHARD_MY_PRIMARY_PORT md=$RESHARD_MY_DOWNSTREAM_PORT_1
	status=$(my_status "$md")
	check "my downstream: Slave_IO_Running=Yes, Slave_SQL_Running=Yes" \
		eval 'has Slave_IO_Running Yes && has Slave_SQL_Running Yes'
	check "my downstream: Using_Gtid=Slave_Pos, Master_Port=$mp (pair 1's primary)" \
		eval "has Using_Gtid Slave_Pos && has Master_Port $mp"
	[ -n "$n" ] || return 0
	check "pg downstream: gets pair 1's $n rows" eventually_equals "$n|pair 1" \
		pg "$pd" "SELECT count(*), string_agg(DISTINCT name, ',') FROM smoke"
	pos=$(my "$mp" "SELECT @@gtid_binlog_pos") || pos=unknown
	check "my downstream: reaches GTID $pos and has pair 1's $n rows" \
		equals "0	$n	pair 1" my "$md" \
		"SELECT MASTER_GTID_WAIT('$pos', $WAIT), COUNT(*), GROUP_CONCAT(DISTINCT name) FROM smoke"
}

# -- start ----------------------------------------------------------------
t0=$SECONDS
if ! "$SERVERS" start "$DIR" </dev/null; then
	echo "not ok - servers.sh start (RESHARD_PAIRS=2)"
	echo "0 passed, 1 failed"
	exit 1
fi
check "servers.sh start (RESHARD_PAIRS=2, $((SECONDS - t0))s)" true
# shellcheck source=/dev/null
source "$DIR/env"
check "env file defines the pair 1 URLs" test -n \
	"${RESHARD_PG_PRIMARY_URL:-}" -a -n "${RESHARD_PG_REPLICA_URL:-}" -a \
	-n "${RESHARD_MY_PRIMARY_URL:-}" -a -n "${RESHARD_MY_REPLICA_URL:-}"
check "env file says RESHARD_PAIRS=2" equals 2 echo "${RESHARD_PAIRS:-}"
env_complete() {
	local k e r
	for k in "${PAIRS[@]}"; do
		for e in PG MY; do
			for r in PRIMARY REPLICA; do
				if [ -z "$(var "RESHARD_${e}_${r}_URL" "$k")" ] ||
					[ -z "$(var "RESHARD_${e}_${r}_PORT" "$k")" ]; then
					echo "  no RESHARD_${e}_${r}_URL_$k or _PORT_$k" >&2
					return 1
				fi
			done
		done
	done
	[ "$RESHARD_PG_PRIMARY_URL_1" = "$RESHARD_PG_PRIMARY_URL" ] &&
		[ "$RESHARD_MY_REPLICA_PORT_1" = "$RESHARD_MY_REPLICA_PORT" ]
}
check "env file defines URL_k and PORT_k for every server of both pairs" env_complete
check "pair 2 ports are pair 1 ports + 10" equals \
	"$((RESHARD_PG_PRIMARY_PORT + 10)) $((RESHARD_PG_REPLICA_PORT + 10)) $((RESHARD_MY_PRIMARY_PORT + 10)) $((RESHARD_MY_REPLICA_PORT + 10))" \
	echo "$RESHARD_PG_PRIMARY_PORT_2 $RESHARD_PG_REPLICA_PORT_2 $RESHARD_MY_PRIMARY_PORT_2 $RESHARD_MY_REPLICA_PORT_2"
check "servers.sh env prints the env file" \
	equals "$(cat "$DIR/env")" "$SERVERS" env "$DIR"
check "servers.sh status: all up" quiet "$SERVERS" status "$DIR"
check "servers.sh status lists all $SERVERS_N servers as running" \
	equals "$SERVERS_N" sh -c "'$SERVERS' status '$DIR' | grep -c ': running '"
if [ "$DOWNSTREAM" = 1 ]; then
	check "env file: RESHARD_DOWNSTREAM=1, downstreams on pair 1's primary ports + 5" equals \
		"1 $((RESHARD_PG_PRIMARY_PORT + 5)) $((RESHARD_MY_PRIMARY_PORT + 5))" \
		echo "${RESHARD_DOWNSTREAM:-} ${RESHARD_PG_DOWNSTREAM_PORT_1:-} ${RESHARD_MY_DOWNSTREAM_PORT:-}"
	check "env file defines the downstreams' URLs" test -n \
		"${RESHARD_PG_DOWNSTREAM_URL_1:-}" -a -n "${RESHARD_MY_DOWNSTREAM_URL_1:-}"
	check "my downstream: server_id 33, log_bin" equals "33	1" \
		my "$RESHARD_MY_DOWNSTREAM_PORT_1" "SELECT @@server_id, @@log_bin"
	check_downstreams
fi

# -- PostgreSQL -----------------------------------------------------------
slot_prefix=pg_replica
sum=$((ROWS * (ROWS + 1) / 2))
for k in "${PAIRS[@]}"; do
	p=$(var RESHARD_PG_PRIMARY_URL "$k")
	check "pg pair $k: primary listens on 127.0.0.1 only" \
		equals 127.0.0.1 pg "$p" "SHOW listen_addresses"
	check "pg pair $k: primary has wal_level=replica" equals replica pg "$p" "SHOW wal_level"
	check "pg pair $k: primary is not in recovery" equals f pg "$p" "SELECT pg_is_in_recovery()"
	check_pg_pair "$k"
	check "pg pair $k: primary: create table and insert $ROWS rows" pg "$p" "
		CREATE TABLE smoke (id int PRIMARY KEY, name text NOT NULL);
		INSERT INTO smoke SELECT i, 'pair $k' FROM generate_series(1, $ROWS) i"
done
check "pg pairs are independent clusters (system identifiers differ)" fails equals \
	"$(pg "$RESHARD_PG_PRIMARY_URL_1" "SELECT system_identifier FROM pg_control_system()")" \
	pg "$RESHARD_PG_PRIMARY_URL_2" "SELECT system_identifier FROM pg_control_system()"
for k in "${PAIRS[@]}"; do
	r=$(var RESHARD_PG_REPLICA_URL "$k")
	check "pg pair $k: replica gets its own primary's $ROWS rows" \
		eventually_equals "$ROWS|$sum|pair $k" \
		pg "$r" "SELECT count(*), sum(id), string_agg(DISTINCT name, ',') FROM smoke"
	check "pg pair $k: replica refuses writes" fails pg "$r" "INSERT INTO smoke VALUES (0, 'x')"
done
check "pg app user cannot log in with a wrong password" fails \
	pg "${RESHARD_PG_PRIMARY_URL/reshard:reshard@/reshard:wrong@}" "SELECT 1"

# -- MariaDB --------------------------------------------------------------
for k in "${PAIRS[@]}"; do
	p=$(var RESHARD_MY_PRIMARY_PORT "$k") r=$(var RESHARD_MY_REPLICA_PORT "$k")
	check "my pair $k: primary binds 127.0.0.1 only" equals 127.0.0.1 my "$p" "SELECT @@bind_address"
	check "my pair $k: replica binds 127.0.0.1 only" equals 127.0.0.1 my "$r" "SELECT @@bind_address"
	check "my pair $k: primary: log_bin, ROW, gtid_strict_mode, server_id $((2 * k - 1))" \
		equals "1	ROW	1	$((2 * k - 1))" my "$p" \
		"SELECT @@log_bin, @@binlog_format, @@gtid_strict_mode, @@server_id"
	check "my pair $k: replica: log_bin, server_id $((2 * k)), read_only" \
		equals "1	$((2 * k))	1" my "$r" "SELECT @@log_bin, @@server_id, @@read_only"
	check_my_pair "$k"
	check "my pair $k: primary: create table and insert $ROWS rows" my "$p" "
		CREATE TABLE smoke (id int PRIMARY KEY, name varchar(20) NOT NULL);
		INSERT INTO smoke SELECT seq, 'pair $k' FROM seq_1_to_$ROWS"
done
for k in "${PAIRS[@]}"; do
	p=$(var RESHARD_MY_PRIMARY_PORT "$k") r=$(var RESHARD_MY_REPLICA_PORT "$k")
	pos=$(my "$p" "SELECT @@gtid_binlog_pos") || pos=unknown
	check "my pair $k: replica reaches its primary's GTID $pos (MASTER_GTID_WAIT)" \
		equals 0 my "$r" "SELECT MASTER_GTID_WAIT('$pos', $WAIT)"
	check "my pair $k: replica got its own primary's $ROWS rows" \
		equals "$ROWS	$sum	pair $k" my "$r" "SELECT COUNT(*), SUM(id), GROUP_CONCAT(DISTINCT name) FROM smoke"
done
[ "$DOWNSTREAM" = 1 ] && check_downstreams "$ROWS"
check "my app user cannot log in with a wrong password" fails \
	mariadb --no-defaults -h "$RESHARD_HOST" -P "$RESHARD_MY_PRIMARY_PORT" -u "$RESHARD_DB_USER" \
	-pwrong -e "SELECT 1"

# -- idempotence ----------------------------------------------------------
pids=$(server_pids | tr '\n' ' ')
check "second start is a quick no-op" within 5 "$SERVERS" start "$DIR"
check "second start kept the same server processes" \
	equals "$pids" sh -c "$(declare -f server_pids); DIR='$DIR' DOWNSTREAM=$DOWNSTREAM; server_pids | tr '\n' ' '"

# -- promote every replica, then reset-replicas ---------------------------
promote_all() {
	local k r
	for k in "${PAIRS[@]}"; do
		r=$(var RESHARD_PG_REPLICA_URL "$k")
		equals t pg "$r" "SELECT pg_promote()" &&
			pg "$r" "CREATE TABLE promoted_era (id int); INSERT INTO promoted_era VALUES (1)" ||
			return 1
		r=$(var RESHARD_MY_REPLICA_PORT "$k")
		my "$r" "STOP SLAVE; RESET SLAVE ALL;
			CREATE TABLE promoted_era (id int); INSERT INTO promoted_era VALUES (1)" ||
			return 1
	done
}
check "promote every replica and write on it" promote_all
pids_before_reset=$(server_pids)
check "servers.sh status after promotion exits non-zero" fails "$SERVERS" status "$DIR"
t0=$SECONDS
check "servers.sh reset-replicas (all) in at most 30s" within 30 "$SERVERS" reset-replicas "$DIR"
echo "# reset-replicas of 4 promoted replicas took $((SECONDS - t0))s"
check "servers.sh status after reset-replicas: all up" quiet "$SERVERS" status "$DIR"
for k in "${PAIRS[@]}"; do
	p=$(var RESHARD_PG_PRIMARY_URL "$k") r=$(var RESHARD_PG_REPLICA_URL "$k")
	check_pg_pair "$k"
	check "pg pair $k: the promoted-era table is gone from the replica" \
		equals "" pg "$r" "SELECT to_regclass('promoted_era')"
	check "pg pair $k: a row written on the primary appears on the replica" \
		pg "$p" "INSERT INTO smoke VALUES ($((ROWS + 1)), 'pair $k')"
	check "pg pair $k: replica has $((ROWS + 1)) rows of its own primary" \
		eventually_equals "$((ROWS + 1))|pair $k" \
		pg "$r" "SELECT count(*), string_agg(DISTINCT name, ',') FROM smoke"

	p=$(var RESHARD_MY_PRIMARY_PORT "$k") r=$(var RESHARD_MY_REPLICA_PORT "$k")
	check_my_pair "$k"
	check "my pair $k: the promoted-era table is gone from the replica" \
		equals 0 my "$r" "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'promoted_era'"
	check "my pair $k: replica's GTID position is its primary's" equals \
		"$(my "$p" "SELECT @@gtid_binlog_pos")" my "$r" "SELECT @@gtid_slave_pos"
	check "my pair $k: a row written on the primary appears on the replica" \
		my "$p" "INSERT INTO smoke VALUES ($((ROWS + 1)), 'pair $k')"
	pos=$(my "$p" "SELECT @@gtid_binlog_pos") || pos=unknown
	check "my pair $k: replica reaches GTID $pos and has $((ROWS + 1)) rows of its own primary" \
		equals "0	$((ROWS + 1))	pair $k" my "$r" \
		"SELECT MASTER_GTID_WAIT('$pos', $WAIT), COUNT(*), GROUP_CONCAT(DISTINCT name) FROM smoke"
	check "my pair $k: root cannot log in to the reset replica over TCP" fails \
		mariadb --no-defaults -h "$RESHARD_HOST" -P "$r" -u root -e "SELECT 1"
done
if [ "$DOWNSTREAM" = 1 ]; then
	check "reset-replicas rebuilt both downstreams (new processes)" fails equals \
		"$(sed -n '9,10p' <<<"$pids_before_reset")" sh -c \
		"$(declare -f server_pids); DIR='$DIR' DOWNSTREAM=1; server_pids | sed -n '9,10p'"
	check_downstreams $((ROWS + 1))
fi

pids=$(server_pids)
check "servers.sh reset-replicas pg" quiet "$SERVERS" reset-replicas pg "$DIR"
check "reset-replicas pg left the MariaDB servers alone" \
	equals "$(sed -n '5,8p;10p' <<<"$pids")" sh -c "$(declare -f server_pids); DIR='$DIR' DOWNSTREAM=$DOWNSTREAM; server_pids | sed -n '5,8p;10p'"
check "reset-replicas pg made new PostgreSQL replicas" fails \
	equals "$(sed -n '2p;4p' <<<"$pids")" sh -c "$(declare -f server_pids); DIR='$DIR'; server_pids | sed -n '2p;4p'"
[ "$DOWNSTREAM" = 1 ] && check "reset-replicas pg made a new pg-downstream" fails \
	equals "$(sed -n '9p' <<<"$pids")" sh -c "$(declare -f server_pids); DIR='$DIR' DOWNSTREAM=1; server_pids | sed -n '9p'"
check "servers.sh status after reset-replicas pg: all up" quiet "$SERVERS" status "$DIR"

# A reset that cannot work says why and changes nothing.
pg2=$(head -n 1 "$DIR/pg-primary-2/postmaster.pid")
kill -INT "$pg2"                        # PostgreSQL's fast shutdown
gone() { ! kill -0 "$1" 2>/dev/null || [[ "$(ps -o stat= -p "$1")" == Z* ]]; }
eventually() {
	local deadline=$((SECONDS + WAIT))
	until "$@"; do [ "$SECONDS" -lt "$deadline" ] || return 1; sleep 0.2; done
}
check "pg-primary-2 stopped by hand" eventually gone "$pg2"
out=$("$SERVERS" reset-replicas pg "$DIR" 2>&1) && rc=0 || rc=$?
check "reset-replicas with a primary down fails" test "$rc" -ne 0
check "reset-replicas with a primary down names it" \
	grep -q "pg-primary-2 is not running" <<<"$out"
check "reset-replicas with a primary down left pg-replica running" \
	quiet sh -c "'$SERVERS' status '$DIR' | grep -q '^pg-replica: running'"
check "start after a server died restarts the fleet" "$SERVERS" start "$DIR" </dev/null
check "servers.sh status after the restart: all up" quiet "$SERVERS" status "$DIR"

# -- stop -----------------------------------------------------------------
pids=$(server_pids | tr '\n' ' ')
ports=()
for k in "${PAIRS[@]}"; do
	for v in RESHARD_PG_PRIMARY_PORT RESHARD_PG_REPLICA_PORT RESHARD_MY_PRIMARY_PORT RESHARD_MY_REPLICA_PORT; do
		ports+=("$(var "$v" "$k")")
	done
done
[ "$DOWNSTREAM" = 0 ] || ports+=("$RESHARD_PG_DOWNSTREAM_PORT_1" "$RESHARD_MY_DOWNSTREAM_PORT_1")
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
# all_closed: every port closed, within 10 s (a server killed while it was
# starting may still be shutting its sockets when stop returns).
all_closed() {
	local port tries=100
	for port in "${ports[@]}"; do
		while ! port_closed "$port" && [ $((tries -= 1)) -gt 0 ]; do
			sleep 0.1
		done
		port_closed "$port" || { echo "  port $port still open" >&2; return 1; }
	done
}
check "all ${#ports[@]} ports are closed after stop" all_closed
check "servers.sh status after stop exits non-zero" fails "$SERVERS" status "$DIR"

# -- settings that cannot work are refused, before anything starts --------
check "overlapping ports are refused" fails env RESHARD_PG_REPLICA_PORT=$((RESHARD_PG_PRIMARY_PORT + 10)) \
	"$SERVERS" start "$DIR"
check "RESHARD_PAIRS=0 is refused" fails env RESHARD_PAIRS=0 "$SERVERS" start "$DIR"
check "a downstream on a replica's port is refused" fails env RESHARD_DOWNSTREAM=1 \
	RESHARD_PG_REPLICA_PORT=$((RESHARD_PG_PRIMARY_PORT + 5)) "$SERVERS" start "$DIR"
check "RESHARD_DOWNSTREAM=yes is refused" fails env RESHARD_DOWNSTREAM=yes "$SERVERS" start "$DIR"
check "a refused start created nothing" test ! -e "$DIR"

# -- a killed start: stop still cleans up ---------------------------------
# No process of DIR's left: server, setup tool or job.
nothing_left() {
	local left
	left=$(ps -eo stat=,pid=,args= | DIRPAT="$DIR/" awk '$1 !~ /^Z/ && index($0, ENVIRON["DIRPAT"])')
	[ -z "$left" ] || { echo "  still running: $left" >&2; return 1; }
}
for after in 1 4; do
	"$SERVERS" start "$DIR" </dev/null >/dev/null 2>&1 &
	sleep "$after"
	kill -KILL $! 2>/dev/null || true
	wait $! 2>/dev/null || true
	check "stop after a start killed after ${after}s" "$SERVERS" stop "$DIR"
	check "stop after a start killed after ${after}s: $DIR removed" test ! -e "$DIR"
	check "stop after a start killed after ${after}s: nothing left running" nothing_left
	check "stop after a start killed after ${after}s: all ports closed" all_closed
done

# -- one pair, no downstream (the default) --------------------------------
check "RESHARD_PAIRS=1 start" env RESHARD_PAIRS=1 RESHARD_DOWNSTREAM=0 "$SERVERS" start "$DIR"
check "RESHARD_PAIRS=1: status lists 4 servers, all up" \
	equals 4 sh -c "'$SERVERS' status '$DIR' | grep -c ': running '"
check "RESHARD_PAIRS=1: env has no downstream" \
	equals "RESHARD_DOWNSTREAM=0 0" sh -c ". '$DIR/env'; echo RESHARD_DOWNSTREAM=\$RESHARD_DOWNSTREAM \$(grep -c DOWNSTREAM_URL '$DIR/env')"
check "RESHARD_PAIRS=1: env has pair 1 only" \
	equals "RESHARD_PAIRS=1 0" sh -c ". '$DIR/env'; echo RESHARD_PAIRS=\$RESHARD_PAIRS \$(grep -c '_2=' '$DIR/env')"
check "RESHARD_PAIRS=1: replica streams" \
	equals streaming pg "$RESHARD_PG_REPLICA_URL" "SELECT status FROM pg_stat_wal_receiver"
check "RESHARD_PAIRS=1 stop" "$SERVERS" stop "$DIR"
check "RESHARD_PAIRS=1: all ports closed after stop" all_closed

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
