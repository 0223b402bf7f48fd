#!/usr/bin/env bash
# `reshard explain` against the real servers: a doubling of pair 1's
# PostgreSQL primary onto its streaming replica, the same on MariaDB (GTID
# replica), and a split from both primaries onto a new SQLite shard.  Each
# explain must list the strategy's steps, the shards each works on as the
# plan names them, the rows and movers the oracle counts, a measured
# catch-up time for each server replica, and write nothing: every table's
# checksum as before, no reshard trigger, table or marker made on any
# server, no journal, no SQLite file.  Tables of its own (explain_orders),
# dropped at the end.
#
# Needs the servers of integration/servers.sh (RESHARD_SERVERS_DIR/env).
# Usage: integration/scenario_explain.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
source "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}/env"

bin=${RESHARD_BIN:-build/reshard}
tmp=$(mktemp -d /tmp/reshard-explain.XXXXXX)
rows=3000 keys=97
pg_p=$RESHARD_PG_PRIMARY_URL pg_r=$RESHARD_PG_REPLICA_URL
my_p=$RESHARD_MY_PRIMARY_URL my_r=$RESHARD_MY_REPLICA_URL
pg() { psql -X -w -q -At -v ON_ERROR_STOP=1 "$1" -c "$2"; }
my() { # my PORT SQL
	mariadb --no-defaults --batch --skip-column-names -h "$RESHARD_HOST" \
		-P "$1" -u "$RESHARD_DB_USER" -p"$RESHARD_DB_PASSWORD" \
		"$RESHARD_DB_NAME" -e "$2"
}
cleanup() {
	[ -n "${KEEP:-}" ] && return
	pg "$pg_p" "DROP TABLE IF EXISTS explain_orders" || true
	my "$RESHARD_MY_PRIMARY_PORT" "DROP TABLE IF EXISTS explain_orders" || true
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
equals() { # equals GOT WANT NAME
	if [ "$1" == "$2" ]; then check "$3" true; else
		printf '#   got  %s\n#   want %s\n' "$1" "$2"
		check "$3" false
	fi
}
# xget FILE EXPR: a Python expression over d, the JSON in FILE.
xget() {
	python3 -S -c 'import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(" ".join(map(str, v)) if isinstance(v, list) else v)' "$1" "$2"
}
step_on() { xget "$1" "[s['shards'] for s in d['steps'] if s['name'] == '$2'][0]"; }

# Everything a run would leave on a server, and the rows, in one line.
pg_state() {
	pg "$1" "SELECT (SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY id), ''))
	          FROM explain_orders t),
	         (SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'reshard%'),
	         (SELECT count(*) FROM pg_class WHERE relname LIKE 'reshard%'),
	         (SELECT count(*) FROM pg_proc WHERE proname LIKE 'reshard%'),
	         pg_is_in_recovery()"
}
my_state() {
	my "$1" "CHECKSUM TABLE explain_orders EXTENDED;
	         SELECT count(*) FROM information_schema.triggers
	          WHERE trigger_name LIKE 'reshard%';
	         SELECT count(*) FROM information_schema.tables
	          WHERE table_name LIKE 'reshard%';" | tr '\n\t' '  '
}

# replayed PRIMARY_STATE REPLICA_STATE: wait (10 s at most) until the
# replica's rows are the primary's, so that "before" is taken at rest.
replayed() {
	local i
	for i in $(seq 100); do
		[ "$($1 | cut -c1-32)" = "$($2 | cut -c1-32)" ] && return 0
		sleep 0.1
	done
	echo "# the replica did not replay the table within 10 s"
}

# The data: key c0 … c96, row i has key c(i % 97).
seq 0 $((keys - 1)) | sed 's/^/c/' >"$tmp/keys"
ddl="CREATE TABLE explain_orders (id bigint PRIMARY KEY,
     customer varchar(20) NOT NULL, amount decimal(12,2))"
# moving_rows FROM TO: the rows whose key the oracle moves.
moving_rows() {
	python3 -S tests/oracle.py --from "$1" --to "$2" <"$tmp/keys" |
		awk -F'\t' -v rows=$rows -v keys=$keys '$4 == "moves" {
			k = substr($1, 2); n += int((rows - k + keys - 1) / keys)
		} END { print n + 0 }'
}

# ---------------------------------------------------------------------
# Doublings: a primary and its replica, one engine at a time.
doubling_plan() { # FILE PRIMARY_URL REPLICA_URL
	cat >"$1" <<PLAN
version = 1;
name = "explain-doubling";
tables = ( { name = "explain_orders"; key = "customer"; } );
shards = (
  { name = "p1"; url = "$2"; replica = "r1"; },
  { name = "r1"; url = "$3"; }
);
from = { map = "modulo"; nodes = ["p1"]; };
to   = { map = "modulo"; nodes = ["p1", "r1"]; };
strategy = "doubling";
PLAN
}
want_doubling="preflight pre-verify fence catch-up promote verify publish unfence purge final-check"
doubling() { # ENGINE
	local e=$1 plan=$tmp/$1/plan.cfg out=$tmp/$1/out.json before after
	mkdir -p "$tmp/$e"
	if [ "$e" = pg ]; then
		pg "$pg_p" "DROP TABLE IF EXISTS explain_orders; $ddl;
			INSERT INTO explain_orders SELECT i, 'c' || (i % $keys), i / 100.0
			FROM generate_series(0, $((rows - 1))) AS i"
		doubling_plan "$plan" "$pg_p" "$pg_r"
		replayed "pg_state $pg_p" "pg_state $pg_r"
		before="$(pg_state "$pg_p") / $(pg_state "$pg_r")"
	else
		my "$RESHARD_MY_PRIMARY_PORT" "DROP TABLE IF EXISTS explain_orders; $ddl;
			INSERT INTO explain_orders SELECT seq, CONCAT('c', seq % $keys), seq / 100.0
			FROM seq_0_to_$((rows - 1))"
		doubling_plan "$plan" "$my_p" "$my_r"
		replayed "my_state $RESHARD_MY_PRIMARY_PORT" "my_state $RESHARD_MY_REPLICA_PORT"
		before="$(my_state "$RESHARD_MY_PRIMARY_PORT") / $(my_state "$RESHARD_MY_REPLICA_PORT")"
	fi
	"$bin" explain "$plan" >"$tmp/$e/out.txt" 2>"$tmp/$e/err.txt" && rc=0 || rc=$?
	check "$e doubling: explain (text) exits 0" test "$rc" -eq 0
	"$bin" explain "$plan" --format json >"$out" 2>>"$tmp/$e/err.txt" && rc=0 || rc=$?
	check "$e doubling: explain --format json exits 0" test "$rc" -eq 0
	equals "$(xget "$out" '[s["name"] for s in d["steps"]]')" "$want_doubling" \
		"$e doubling: the steps in order"
	equals "$(xget "$out" '[s["name"] for s in d["shards"]]')" "p1 r1" \
		"$e doubling: the plan's shards"
	equals "$(step_on "$out" fence)/$(step_on "$out" promote)" "p1/r1" \
		"$e doubling: fence on the primary, promote on its replica"
	equals "$(xget "$out" 'd["rows"]["total"]')" "$rows" "$e doubling: rows exact"
	equals "$(xget "$out" 'd["rows"]["moving"]')" \
		"$(moving_rows modulo:p1 modulo:p1,r1)" "$e doubling: movers as the oracle counts"
	equals "$(xget "$out" '[s["fence"] for s in d["shards"]]')" "rows None" \
		"$e doubling: the primary's fence holds only the rows that move"
	check "$e doubling: the replica's catch-up measured" \
		test "$(xget "$out" '[s["catch_up_seconds"] is not None for s in d["shards"]][1]')" = True
	check "$e doubling: the fenced time estimated" \
		test "$(xget "$out" 'd["fenced_complete"]')" = True
	if [ "$e" = pg ]; then
		after="$(pg_state "$pg_p") / $(pg_state "$pg_r")"
	else
		after="$(my_state "$RESHARD_MY_PRIMARY_PORT") / $(my_state "$RESHARD_MY_REPLICA_PORT")"
	fi
	equals "$after" "$before" "$e doubling: rows, triggers, tables, functions as before on both servers"
	check "$e doubling: no journal made" test ! -e "$tmp/$e/explain-doubling.journal"
	sed -n '1,200p' "$tmp/$e/out.txt" | sed 's/^/# /' | head -60
}
doubling pg
doubling my

# ---------------------------------------------------------------------
# A split: the PostgreSQL and the MariaDB primary give a range to a new
# SQLite shard, rows placed on their owner under `from` by the oracle.
from_map=ranges:0x7fffffffffffffff=pg,max=my
to_map=ranges:0x3fffffffffffffff=pg,0x7fffffffffffffff=lite,max=my
python3 -S tests/oracle.py --from "$from_map" --to "$to_map" <"$tmp/keys" |
	awk -F'\t' '$2 == "pg" { print $1 }' | sed "s/.*/'&'/" | paste -sd, >"$tmp/pg_keys"
pg "$pg_p" "DROP TABLE IF EXISTS explain_orders; $ddl;
	INSERT INTO explain_orders SELECT i, 'c' || (i % $keys), i / 100.0
	FROM generate_series(0, $((rows - 1))) AS i
	WHERE 'c' || (i % $keys) IN ($(cat "$tmp/pg_keys"))"
my "$RESHARD_MY_PRIMARY_PORT" "DROP TABLE IF EXISTS explain_orders; $ddl;
	INSERT INTO explain_orders SELECT seq, CONCAT('c', seq % $keys), seq / 100.0
	FROM seq_0_to_$((rows - 1))
	WHERE CONCAT('c', seq % $keys) NOT IN ($(cat "$tmp/pg_keys"))"
sqlite3 "$tmp/lite.db" "$ddl"
cat >"$tmp/split.cfg" <<PLAN
version = 1;
name = "explain-split";
tables = ( { name = "explain_orders"; key = "customer"; } );
shards = (
  { name = "pg"; url = "$pg_p"; },
  { name = "my"; url = "$my_p"; },
  { name = "lite"; url = "sqlite://$tmp/lite.db"; }
);
from = { map = "ranges"; ranges = ( { end = "0x7fffffffffffffff"; node = "pg"; },
                                    { end = "max"; node = "my"; } ); };
to   = { map = "ranges"; ranges = ( { end = "0x3fffffffffffffff"; node = "pg"; },
                                    { end = "0x7fffffffffffffff"; node = "lite"; },
                                    { end = "max"; node = "my"; } ); };
strategy = "split";
PLAN
before="$(pg_state "$pg_p") / $(my_state "$RESHARD_MY_PRIMARY_PORT") / $(sha256sum <"$tmp/lite.db")"
"$bin" explain "$tmp/split.cfg" --format json >"$tmp/split.json" 2>"$tmp/split.err" && rc=0 || rc=$?
check "split: explain --format json exits 0" test "$rc" -eq 0
"$bin" explain "$tmp/split.cfg" >"$tmp/split.txt" 2>>"$tmp/split.err" && rc=0 || rc=$?
check "split: explain (text) exits 0" test "$rc" -eq 0
equals "$(xget "$tmp/split.json" '[s["name"] for s in d["steps"]]')" \
	"preflight capture copy catch-up pre-verify fence final-catch-up verify publish unfence purge final-check" \
	"split: the steps in order"
equals "$(xget "$tmp/split.json" '[s["name"] for s in d["shards"] if "target" in s["roles"]]')" \
	lite "split: the new shard is the target"
equals "$(step_on "$tmp/split.json" fence)" "pg my" "split: fence on from's nodes"
equals "$(xget "$tmp/split.json" 'd["rows"]["total"]')" "$rows" "split: rows exact"
equals "$(xget "$tmp/split.json" 'd["rows"]["misplaced"]')" 0 "split: no row misplaced"
equals "$(xget "$tmp/split.json" 'd["rows"]["moving"]')" \
	"$(moving_rows "$from_map" "$to_map")" "split: movers as the oracle counts"
after="$(pg_state "$pg_p") / $(my_state "$RESHARD_MY_PRIMARY_PORT") / $(sha256sum <"$tmp/lite.db")"
equals "$after" "$before" "split: both servers and the SQLite file as before"
check "split: no journal made" test ! -e "$tmp/explain-split.journal"
sed 's/^/# /' "$tmp/split.txt"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
