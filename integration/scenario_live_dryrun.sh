#!/usr/bin/env bash
# Live dry-run over real shards of three engines: a PostgreSQL database, a
# MariaDB database and a SQLite file (plus a new SQLite node in `to`).
# Rows are placed on their owner under `from`; the live dry-run must give
# exactly the movers and summary that a --keys dry-run over the same keys
# gives, table by table.  Then the errors an operator meets: an unreachable
# shard, a wrong password (never printed), a missing table, a table without
# a primary key, and a PostgreSQL server process stopped (SIGSTOP) in the
# middle of the scan, which options.operation_timeout_seconds must end.
#
# Needs the servers of integration/servers.sh (RESHARD_SERVERS_DIR/env).
# Usage: integration/scenario_live_dryrun.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
source "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}/env"

bin=${RESHARD_BIN:-build/reshard}
tmp=$(mktemp -d /tmp/reshard-live.XXXXXX)
pg_url="postgresql://$RESHARD_DB_USER:$RESHARD_DB_PASSWORD@$RESHARD_HOST:$RESHARD_PG_PRIMARY_PORT/$RESHARD_DB_NAME"
pg() { psql -X -w -q -At -v ON_ERROR_STOP=1 "$pg_url" -c "$1"; }
my() {
	mariadb --no-defaults --batch --skip-column-names -h "$RESHARD_HOST" \
		-P "$RESHARD_MY_PRIMARY_PORT" -u "$RESHARD_DB_USER" \
		-p"$RESHARD_DB_PASSWORD" "$RESHARD_DB_NAME" -e "$1"
}
stopped_pid=
cleanup() {
	# A stopped server process would hold its locks for ever.
	[ -n "$stopped_pid" ] && { kill -CONT "$stopped_pid" 2>/dev/null || true; }
	[ -n "${KEEP:-}" ] && return
	pg "DROP TABLE IF EXISTS orders, events, nopk" || true
	my "DROP TABLE IF EXISTS orders, events, nopk" || true
	rm -rf "$tmp"
}
trap cleanup EXIT

passed=0 failed=0
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

export RESHARD_TEST_PASSWORD=$RESHARD_DB_PASSWORD
write_plan() { # write_plan FILE PG_URL_NO_PASSWORD MY_PORT
	cat >"$1" <<PLAN
version = 1;
name = "live";
tables = (
  { name = "orders"; key = "customer_id"; },
  { name = "events"; key = "account"; }
);
shards = (
  { name = "pg";   url = "$2"; password_env = "RESHARD_TEST_PASSWORD"; },
  { name = "my";   url = "mysql://$RESHARD_DB_USER@$RESHARD_HOST:$3/$RESHARD_DB_NAME";
    password_env = "RESHARD_TEST_PASSWORD"; },
  { name = "lite"; url = "sqlite://$tmp/lite.db"; },
  { name = "new";  url = "sqlite://$tmp/new.db"; }
);
from = { map = "ring"; vnodes = 64; nodes = ["pg", "my", "lite"]; };
to   = { map = "ring"; vnodes = 64; nodes = ["pg", "my", "lite", "new"]; };
strategy = "split";
options = { batch_rows = 97; parallel = 3; };
PLAN
}
plan=$tmp/plan.cfg
write_plan "$plan" \
	"postgresql://$RESHARD_DB_USER@$RESHARD_HOST:$RESHARD_PG_PRIMARY_PORT/$RESHARD_DB_NAME" \
	"$RESHARD_MY_PRIMARY_PORT"

# The same schema on every source shard; events has a composite, text key.
ddl="CREATE TABLE orders (id bigint PRIMARY KEY, customer_id varchar(40) NOT NULL, amount decimal(12,2));
CREATE TABLE events (account varchar(40) NOT NULL, seq int NOT NULL, note text, PRIMARY KEY (account, seq));
CREATE TABLE nopk (customer_id varchar(40));"
pg "DROP TABLE IF EXISTS orders, events, nopk"
my "DROP TABLE IF EXISTS orders, events, nopk"
pg "$ddl"
my "$ddl"
sqlite3 "$tmp/lite.db" "$ddl"
sqlite3 "$tmp/new.db" "$ddl"

# 3,000 orders over 700 customers and 1,500 events over 400 accounts, each
# row on the shard that owns its key under `from` (found with reshard route).
awk 'BEGIN { srand(7); for (i = 1; i <= 3000; i++) printf "%d cust-%d %d.%02d\n", i, int(rand() * 700), int(rand() * 500), int(rand() * 100) }' >"$tmp/orders.txt"
awk 'BEGIN { srand(8); for (i = 1; i <= 1500; i++) printf "acct-%d %d\n", int(rand() * 400), i }' >"$tmp/events.txt"
cut -d' ' -f2 "$tmp/orders.txt" >"$tmp/orders.keys"
cut -d' ' -f1 "$tmp/events.txt" >"$tmp/events.keys"
owner_of() { # owner_of KEYFILE: "key owner" for each distinct key
	sort -u "$1" | xargs "$bin" route "$plan" | cut -f1,2 | tr '\t' ' '
}
owner_of "$tmp/orders.keys" >"$tmp/orders.owner"
owner_of "$tmp/events.keys" >"$tmp/events.owner"
for shard in pg my lite; do
	awk -v s="$shard" 'NR == FNR { own[$1] = $2; next }
		own[$2] == s { printf "INSERT INTO orders VALUES (%d, '\''%s'\'', %s);\n", $1, $2, $3 }' \
		"$tmp/orders.owner" "$tmp/orders.txt" >"$tmp/$shard.sql"
	awk -v s="$shard" 'NR == FNR { own[$1] = $2; next }
		own[$1] == s { printf "INSERT INTO events VALUES ('\''%s'\'', %d, '\''n'\'');\n", $1, $2 }' \
		"$tmp/events.owner" "$tmp/events.txt" >>"$tmp/$shard.sql"
done
psql -X -w -q -v ON_ERROR_STOP=1 "$pg_url" -1 -f "$tmp/pg.sql" >/dev/null
my "START TRANSACTION; $(cat "$tmp/my.sql") COMMIT;"
sqlite3 "$tmp/lite.db" "BEGIN; $(cat "$tmp/lite.sql") COMMIT;"
check "rows spread over three engines" test "$(pg 'SELECT count(*) FROM orders')" -gt 0 -a \
	"$(my 'SELECT count(*) FROM orders')" -gt 0 -a "$(sqlite3 "$tmp/lite.db" 'SELECT count(*) FROM orders')" -gt 0

same_json() { python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:3]); a["flows"].sort(key=str); b["flows"].sort(key=str); sys.exit(a != b)' "$1" "$2"; }
for table in orders events; do
	"$bin" dry-run "$plan" --table "$table" >"$tmp/live.$table" 2>"$tmp/live.$table.err"
	check "$table: live dry-run succeeds" test $? -eq 0
	"$bin" dry-run "$plan" --table "$table" --keys "$tmp/$table.keys" >"$tmp/keys.$table" 2>/dev/null
	check "$table: same movers as --keys" cmp -s <(sort "$tmp/live.$table") <(sort "$tmp/keys.$table")
	check "$table: some keys move" test -s "$tmp/keys.$table"
	"$bin" dry-run "$plan" --table "$table" --summary --format json >"$tmp/live.$table.json" 2>/dev/null
	"$bin" dry-run "$plan" --table "$table" --keys "$tmp/$table.keys" --summary --format json >"$tmp/keys.$table.json"
	check "$table: same JSON summary as --keys" same_json "$tmp/live.$table.json" "$tmp/keys.$table.json"
	check "$table: no misplaced rows" bash -c "! grep -q misplaced '$tmp/live.$table.json'"
done
"$bin" dry-run "$plan" --summary --format json >"$tmp/all.json" 2>/dev/null
check "all tables: every row counted" python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["keys"] != 4500)' "$tmp/all.json"
check "closing progress line" grep -q '^dry-run: 3,000 rows in' "$tmp/live.orders.err"

# A row on the wrong shard is reported, not silently counted.
my "INSERT INTO orders VALUES (999999, '$(awk '$2 == "pg" { print $1; exit }' "$tmp/orders.owner")', 1)"
"$bin" dry-run "$plan" --table orders --summary --format json >"$tmp/misplaced.json" 2>/dev/null
check "misplaced row reported" grep -q '"misplaced": 1' "$tmp/misplaced.json"

# Errors: exit 1, the shard named, the URL masked, no password anywhere.
expect_failure() { # expect_failure WHAT PATTERN PLAN [ARGS]
	local what=$1 pattern=$2 file=$3
	shift 3
	local rc=0
	"$bin" dry-run "$file" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	check "$what: exit 1" test "$rc" -eq 1
	check "$what: message" grep -q "$pattern" "$tmp/err"
	check "$what: no password printed" bash -c "! grep -q 'sekrit-pw-123' '$tmp/out' '$tmp/err'"
}
write_plan "$tmp/down.cfg" "postgresql://$RESHARD_DB_USER:sekrit-pw-123@127.0.0.1:1/app" "$RESHARD_MY_PRIMARY_PORT"
sed -i 's/password_env = "RESHARD_TEST_PASSWORD"; },/},/' "$tmp/down.cfg"
expect_failure "unreachable shard" "shard pg (postgresql://reshard:\*\*\*\*@127.0.0.1:1/app)" "$tmp/down.cfg"
write_plan "$tmp/badpw.cfg" "postgresql://$RESHARD_DB_USER@$RESHARD_HOST:$RESHARD_PG_PRIMARY_PORT/$RESHARD_DB_NAME" "$RESHARD_MY_PRIMARY_PORT"
RESHARD_TEST_PASSWORD=sekrit-pw-123 expect_failure "wrong password" "shard \(pg\|my\) (" "$tmp/badpw.cfg"
sqlite3 "$tmp/lite.db" "DROP TABLE events"
expect_failure "missing table" "shard lite (sqlite://.*table events does not exist" "$plan" --table events
sed 's/name = "orders"; key = "customer_id"/name = "nopk"; key = "customer_id"/' "$plan" >"$tmp/nopk.cfg"
expect_failure "table without primary key" "table nopk has no primary key" "$tmp/nopk.cfg" --table nopk

# A server process that stops answering: SIGSTOP keeps its TCP connection
# open, so only the operation bound ends the dry-run.  To stop it at a
# known point, a locker holds orders while the dry-run's scan waits for it
# (and before the 2 s lock timeout could end that wait); the bound (3 s)
# is above the lock timeout, so only the bound can give its message.
sed 's/options = { batch_rows = 97; parallel = 3; };/options = { batch_rows = 97; parallel = 3; operation_timeout_seconds = 3; };/' \
	"$plan" >"$tmp/bound.cfg"
psql -X -w -q -At "$pg_url" -c "BEGIN; LOCK TABLE orders IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(6); COMMIT" >/dev/null 2>&1 &
locker=$!
for _ in $(seq 50); do
	[ "$(pg "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'orders' AND l.mode = 'AccessExclusiveLock' AND l.granted")" = 1 ] && break
	sleep 0.1
done
started=$(date +%s)
rc=0
timeout 60 "$bin" dry-run "$tmp/bound.cfg" --table orders >"$tmp/out" 2>"$tmp/err" &
dryrun=$!
for _ in $(seq 100); do
	stopped_pid=$(pg "SELECT pid FROM pg_stat_activity WHERE application_name = 'reshard' AND wait_event_type = 'Lock'")
	[ -n "$stopped_pid" ] && break
	sleep 0.02
done
check "stopped server process: found waiting for the lock" test -n "$stopped_pid"
[ -n "$stopped_pid" ] && { kill -STOP "$stopped_pid" || true; }
wait "$dryrun" || rc=$?
elapsed=$(($(date +%s) - started))
[ -n "$stopped_pid" ] && { kill -CONT "$stopped_pid" 2>/dev/null || true; }
stopped_pid=
wait "$locker" || true
check "stopped server process: exit 1" test "$rc" -eq 1
check "stopped server process: ended within 30 s, not hanging (${elapsed} s)" test "$elapsed" -lt 30
check "stopped server process: message names the shard, the bound and the option" \
	grep -q "shard pg (postgresql://reshard@.*did not finish within 3 s.*options.operation_timeout_seconds" "$tmp/err"
grep "did not finish" "$tmp/err" | sed "s/^/# /" || true

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
