#!/usr/bin/env bash
# A range split on real PostgreSQL servers: one node's hash range is cut
# in two and the upper part goes to that node's own streaming replica, as
# a doubling; the other node is left alone.  Pairs 1 and 2 of
# integration/servers.sh: `from` gives p1 (pair 1's primary) the lower half
# of the points and p2 (pair 2's primary, no replica in the plan) the upper
# half; `to` keeps the lower quarter on p1 and gives the second quarter to
# r1, p1's replica.  One table `orders` a node (a ranges map, not slot
# tables), rows with a composite primary key, NULLs and unicode, placed by
# the oracle (tests/oracle.py).
#
# The run crashes after fence and after verify and is resumed, keeping
# the ownership guard after purge (options.keep_guard); while p1 is
# fenced, status names p1 and r1 only and p2 takes writes.  A transaction
# stays open on p2's table for the whole run, as an application's would: a
# run that took a lock on p2 would wait for it and fail; an event trigger
# on p2 records any DDL the run sends it.  At the end every row is exactly
# once on its owner under `to`, unchanged; r1 is a primary and p1 holds no
# replication slot; p2 is as it was (no DDL received, the same dump, no
# reshard object, its slot and its own replica still streaming); status
# says every step done and nothing fenced.  Then the replicas are made
# replicas again (servers.sh reset-replicas pg) and the tables dropped.
#
# Needs the servers of integration/servers.sh with 2 pairs or more
# (RESHARD_SERVERS_DIR/env).
# Usage: integration/scenario_range_split_pg.sh   (ROWS, KEYS: the data size)
ENGINE=pg
: "${ROWS:=50000}" "${KEYS:=10000}"
# shellcheck source=integration/doubling_lib.sh
. "$(dirname "$0")/doubling_lib.sh"

# The lib's rows (make_rows), kept under another name: only the owners
# differ here.
eval "lib_$(declare -f make_rows)"

# The shards: p1, its replica r1, and p2 (whose own replica, pair 2's, is
# not in the plan).
shard_names() { printf '%s\n' p1 p2 r1; }
# The oracle's maps, in tests/oracle.py's syntax; the plan says the same.
# shellcheck disable=SC2054 # the commas are the oracle's
oracle_maps=(--hash sha256_64 --table orders
	--from ranges:0x7fffffffffffffff=p1,max=p2
	--to ranges:0x3fffffffffffffff=p1,0x7fffffffffffffff=r1,max=p2)
plan_name=orders-range
steps=(preflight pre-verify fence catch-up promote verify publish unfence purge final-check)

write_plan() { # write_plan FILE [OPTIONS]
	cat >"$1" <<PLAN
version = 1;
name = "$plan_name";
hash = "sha256_64";
tables = ( { name = "orders"; key = "customer_id"; } );
shards = (
  { name = "p1"; url = "$(plan_url primary 1)";
    password_env = "RESHARD_DB_PASSWORD"; replica = "r1"; },
  { name = "p2"; url = "$(plan_url primary 2)";
    password_env = "RESHARD_DB_PASSWORD"; },
  { name = "r1"; url = "$(plan_url replica 1)";
    password_env = "RESHARD_DB_PASSWORD"; }
);
from = { map = "ranges"; ranges = (
  { end = "0x7fffffffffffffff"; node = "p1"; },
  { end = "max"; node = "p2"; } ); };
to = { map = "ranges"; ranges = (
  { end = "0x3fffffffffffffff"; node = "p1"; },
  { end = "0x7fffffffffffffff"; node = "r1"; },
  { end = "max"; node = "p2"; } ); };
strategy = "doubling";
options = { batch_rows = ${BATCH:-2000}; ${2:-} };
publish = { file = "routing.cfg"; };
PLAN
}

# make_rows: the lib's $tmp/rows.tsv, and $tmp/routes.tsv by the ranges.
make_rows() {
	lib_make_rows || return 1
	cut -f3 "$tmp/rows.tsv" | sort -u |
		python3 -S "$oracle" "${oracle_maps[@]}" >"$tmp/routes.tsv"
}

# load: every row into `orders` on its owner under `from` (p1 or p2).
load() {
	local s
	for s in p1 p2; do
		q "$(shard_url "$s")" "SET client_min_messages = warning;
			DROP TABLE IF EXISTS orders; CREATE TABLE orders $(table_sql)" || return 1
		expected 2 | awk -F'\t' -v o="$s" '$1 == o' | cut -f2- >"$tmp/load.tsv"
		psql -X -w -q -v ON_ERROR_STOP=1 "$(shard_url "$s")" \
			-c "\\copy orders FROM '$tmp/load.tsv'" || return 1
	done
}

# actual [SHARD...]: the rows of `orders` on each shard (all, or those
# named), in expected's form.
actual() {
	local s
	# shellcheck disable=SC2046 # one shard name a word
	[ $# -gt 0 ] || set -- $(shard_names)
	for s in "$@"; do
		q "$(shard_url "$s")" "SELECT region, id, customer_id,
			coalesce(amount::text, '\\N'), coalesce(note, '\\N')
			FROM orders" 2>&1 | sed "s/^/$s\t/"
	done | sort
}

# shellcheck disable=SC2317 # run through check
# wait_replicas: r1 and pair 2's replica hold what their primaries hold.
wait_replicas() {
	local k n want tries
	for k in 1 2; do
		want=$(q "$(url_of primary "$k")" "SELECT count(*) FROM orders")
		tries=200
		while n=$(q "$(url_of replica "$k")" "SELECT count(*) FROM orders" 2>/dev/null) &&
			[ "$n" != "$want" ] && [ "$tries" -gt 0 ]; do
			sleep 0.05
			tries=$((tries - 1))
		done
		[ "$n" = "$want" ] || return 1
	done
}

# shellcheck disable=SC2317 # run through check
# wait_new_row: the row written on p2 after the run is on pair 2's replica.
wait_new_row() {
	local tries=200
	until [ "$(q "$(url_of replica 2)" "SELECT count(*) FROM orders
		WHERE region = 'eu' AND id = 0" 2>/dev/null)" = 1 ]; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || return 1
		sleep 0.05
	done
}

# on_all SQL: SQL's one-number answer summed over the four servers of
# pairs 1 and 2.
on_all() {
	local role k c n=0
	for role in primary replica; do
		for k in 1 2; do
			c=$(q "$(url_of "$role" "$k")" "$1") || return 1
			n=$((n + c))
		done
	done
	echo "$n"
}

# reshard_objects URL: reshard's tables, functions and triggers there.
reshard_objects() {
	q "$1" "SELECT 'table ' || relname FROM pg_class WHERE relname LIKE 'reshard%'
		UNION ALL SELECT 'function ' || proname FROM pg_proc WHERE proname LIKE 'reshard%'
		UNION ALL SELECT 'trigger ' || tgname FROM pg_trigger WHERE tgname LIKE 'reshard%'
		ORDER BY 1"
}

# shellcheck disable=SC2317 # run through check
# watch_p2: an event trigger on p2 that records every DDL command sent
# to it (its tag and text) in range_split_ddl.
watch_p2() {
	q "$(url_of primary 2)" "SET client_min_messages = warning;
		DROP EVENT TRIGGER IF EXISTS range_split_ddl;
		DROP TABLE IF EXISTS range_split_ddl;
		CREATE TABLE range_split_ddl (tag text, query text);
		CREATE OR REPLACE FUNCTION range_split_ddl() RETURNS event_trigger
		LANGUAGE plpgsql AS \$\$BEGIN
		INSERT INTO range_split_ddl VALUES (tg_tag, current_query()); END\$\$;
		CREATE EVENT TRIGGER range_split_ddl ON ddl_command_start
		EXECUTE FUNCTION range_split_ddl()"
}

# dump_p2 FILE: p2's whole database (schema and rows), what "untouched"
# compares; without the random key pg_dump puts in \restrict lines.
dump_p2() {
	pg_dump --no-password --no-owner "$(url_of primary 2)" >"$1.raw" &&
		sed -E '/^\\(un)?restrict /d' "$1.raw" >"$1"
}

# hold_p2: an open write transaction on p2's orders (no row written)
# until release_p2; a lock reshard takes on p2 would wait for it.
holder=''
# shellcheck disable=SC2317 # run through check
hold_p2() {
	PGAPPNAME=range-split-holder psql -X -w -q -v ON_ERROR_STOP=1 \
		"$(url_of primary 2)" -c "BEGIN; LOCK TABLE orders IN ROW EXCLUSIVE MODE;
		SELECT pg_sleep(600)" >/dev/null 2>&1 &
	holder=$!
	local tries=100
	until [ "$(q "$(url_of primary 2)" "SELECT count(*) FROM pg_locks l
		JOIN pg_stat_activity a USING (pid)
		WHERE a.application_name = 'range-split-holder'
		AND l.relation = 'orders'::regclass AND l.granted")" = 1 ]; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || return 1
		sleep 0.05
	done
}
release_p2() {
	[ -n "$holder" ] || return 0
	q "$(url_of primary 2)" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'range-split-holder'" >/dev/null 2>&1
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	holder=''
}

# shellcheck disable=SC2317 # run by the lib's EXIT trap
# reset: no holder, no test table or reshard object on the primaries
# (and r1, a primary after the run), the replicas replicating again.
reset() {
	local s
	release_p2
	q "$(url_of primary 2)" "SET client_min_messages = warning;
		DROP EVENT TRIGGER IF EXISTS range_split_ddl;
		DROP FUNCTION IF EXISTS range_split_ddl(); DROP TABLE IF EXISTS range_split_ddl"
	for s in p1 p2 r1; do
		q "$(shard_url "$s")" "DROP TABLE IF EXISTS orders, reshard_del_orders,
			reshard_marker; DROP FUNCTION IF EXISTS reshard_fence(),
			reshard_del_orders()" >/dev/null 2>&1
	done
	"$lib_dir/servers.sh" reset-replicas pg "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}"
}

if [ "$pairs" -lt 2 ]; then
	rm -rf "$tmp"
	bail "a range split needs 2 PostgreSQL pairs (RESHARD_PAIRS=$pairs)"
fi
begin
t0=$SECONDS
p1=$(url_of primary 1) p2=$(url_of primary 2) r1=$(url_of replica 1) r2=$(url_of replica 2)

for pair in p1/p1 p1/r1 p2/p2; do
	check "by the oracle, keys of ${pair%/*} go to ${pair#*/}" test "$(awk -F'\t' \
		-v f="${pair%/*}" -v t="${pair#*/}" '$2 == f && $3 == t' "$tmp/routes.tsv" |
		wc -l)" -gt 0
done
equals "$(awk -F'\t' '$2 == "p2" && $3 != "p2"' "$tmp/routes.tsv" | wc -l)" 0 \
	"by the oracle, nothing moves off p2"
same_rows "before: the rows on their owners under from" 2
equals "$(q "$p2" "SELECT count(*) FROM pg_replication_slots WHERE active")" 1 \
	"before: p2 streams to its replica through a slot"
check "before: an event trigger on p2 records the DDL sent to it" watch_p2
dump_p2 "$tmp/p2.before" >"$tmp/why" || not_ok "before: pg_dump of p2" "$tmp/why"

# The guard stays after purge (options.keep_guard), checked at the end.
fresh run "keep_guard = true;"
check "an open transaction holds a lock on p2's orders" hold_p2

# What the three runs print on stderr goes into err.all.
RESHARD_FAULT=after-step:fence run_reshard 99 "crash after step fence (exit 99)" \
	run plan.cfg --yes
cat "$dir/err" >"$dir/err.all"
(cd "$dir" && "$bin" status plan.cfg --format json) >"$dir/status.json" 2>"$dir/status.err"
equals "$(python3 -S -c 'import json, sys
s = json.load(open(sys.argv[1]))
print(s["fenced"], ", ".join(s["fenced_shards"]))' "$dir/status.json" 2>&1)" "True p1, r1" \
	"fenced: status says p1 and r1 are fenced, not p2"
(cd "$dir" && "$bin" status plan.cfg) >"$dir/status.txt" 2>&1
has "$dir/status.txt" "on p1 (rows that move), r1 (rows that move)" \
	"fenced: status says the fence holds only the rows that move"
# A key p1 owns and keeps: the fence lets its write through.
stay=$(awk -F'\t' '$2 == "p1" && $3 == "p1" { print $1; exit }' "$tmp/routes.tsv")
check "fenced: a write to a row p1 keeps goes through (rolled back)" \
	q "$p1" "BEGIN; INSERT INTO orders VALUES ('eu', 0, '${stay//\'/\'\'}', NULL, NULL); ROLLBACK"
fence_msg="writes paused by reshard: run $plan_name, step fence"
q "$p1" "INSERT INTO orders VALUES ('eu', 0, 'fenced', NULL, NULL)" >"$dir/p1.write" 2>&1
has "$dir/p1.write" "$fence_msg" "fenced: a write to p1 is refused with the fence message"
check "fenced: p2 takes a write (rolled back) and does not wait" \
	q "$p2" "SET lock_timeout = '2s'; BEGIN;
	INSERT INTO orders VALUES ('eu', 0, 'not fenced', NULL, NULL); ROLLBACK"
RESHARD_FAULT=after-step:verify run_reshard 99 "resumed, crash after step verify (exit 99)" \
	run plan.cfg --yes
cat "$dir/err" >>"$dir/err.all"
run_reshard 0 "resumed, the run completes (exit 0)" run plan.cfg --yes
cat "$dir/err" >>"$dir/err.all"
release_p2
# keep_guard: after the run, p1 still refuses a stale router's write of a
# row now on r1; taken off as status says, the write goes through.
moved=$(awk -F'\t' '$2 == "p1" && $3 == "r1" { print $1; exit }' "$tmp/routes.tsv")
q "$p1" "INSERT INTO orders VALUES ('st', 99999991, '${moved//\'/\'\'}', 1.00, 'stale')" \
	>"$dir/stale" 2>&1
has "$dir/stale" "row belongs to r1 since routing epoch 1 (reshard $plan_name)" \
	"keep_guard: after purge p1 still refuses a stale write of a row now on r1"
(cd "$dir" && "$bin" status plan.cfg --format json) >"$dir/status.json" 2>&1
equals "$(python3 -S -c 'import json, sys; print(json.load(open(sys.argv[1]))["guard_kept"])' \
	"$dir/status.json" 2>&1)" True "keep_guard: status says the guard is kept"
(cd "$dir" && "$bin" status plan.cfg) >"$dir/status.txt" 2>&1
has "$dir/status.txt" "DROP TRIGGER reshard_guard ON t" "keep_guard: status says how to take it off"
q "$p1" "DROP TRIGGER reshard_guard ON orders" && q "$r1" "DROP TRIGGER reshard_guard ON orders"
check "keep_guard: taken off, p1 takes that write (rolled back)" \
	q "$p1" "BEGIN; INSERT INTO orders VALUES ('st', 99999991, '${moved//\'/\'\'}', 1.00, 'x'); ROLLBACK"
for said in "p1: writes fenced" "p1: writes open again" "r1: writes open again" \
	"r1: a primary of its own" "p1: dropped replication slot pg_replica (it held WAL for r1)"; do
	has "$dir/err.all" "$said" "the run says \"$said\""
done
check "the run never says p2's writes were fenced or opened" \
	sh -c "! grep -E '(^| )p2: writes' '$dir/err.all'"

same_rows "after: every row once, on its owner under to, unchanged" 3
equals "$(q "$r1" "SELECT pg_is_in_recovery()")" f "r1 is a primary of its own"
# A downstream standby (servers.sh RESHARD_DOWNSTREAM=1) streams on a
# slot of its own.
equals "$(q "$p1" "SELECT count(*) FROM pg_replication_slots WHERE NOT active")" 0 \
	"no replication slot left on p1 but a streaming standby's"
equals "$(on_all "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'reshard_fence%'")" 0 \
	"no fence trigger left on any server"
equals "$(q "$p1" "SELECT count(*) FROM reshard_marker")/$(q "$r1" \
	"SELECT count(*) FROM reshard_marker")" 1/1 "p1 and r1 carry the run's marker"
equals "$(q "$p1" "SELECT to_regclass('reshard_del_orders') IS NULL")/$(q "$r1" \
	"SELECT to_regclass('reshard_del_orders') IS NULL")" t/t \
	"no delete log left on p1 or r1"

# p2: never fenced, marked, logged or purged; its replica still follows it.
equals "$(reshard_objects "$p2" 2>&1)" "" \
	"p2 has no reshard table, function or trigger (fence, marker, delete log)"
equals "$(q "$p2" "SELECT tag || ': ' || query FROM range_split_ddl" 2>&1)" "" \
	"the run sent p2 no DDL (no fence, marker, delete log, nor their removal)"
dump_p2 "$tmp/p2.after" >"$tmp/why" || not_ok "after: pg_dump of p2" "$tmp/why"
check "p2's dump (schema and every row) is byte for byte as before" \
	cmp "$tmp/p2.before" "$tmp/p2.after"
equals "$(q "$r2" "SELECT pg_is_in_recovery()")" t "pair 2's replica is still a replica"
equals "$(q "$p2" "SELECT count(*) FROM pg_replication_slots WHERE active")" 1 \
	"p2 still streams to its replica through its slot"
q "$p2" "INSERT INTO orders VALUES ('eu', 0, 'after the split', NULL, 'новый')"
check "a row written on p2 reaches pair 2's replica" wait_new_row
equals "$(q "$r2" "SELECT note FROM orders WHERE region = 'eu' AND id = 0")" новый \
	"pair 2's replica has the new row as written"

(cd "$dir" && "$bin" status plan.cfg --format json) >"$dir/status.json" 2>"$dir/status.err"
has "$dir/status.json" '"fenced": false' "status says writes are not fenced"
equals "$(python3 -S -c 'import json, sys
print(" ".join(s["name"] + "=" + s["state"] for s in json.load(open(sys.argv[1]))["steps"]))' \
	"$dir/status.json" 2>&1)" "$(printf '%s=done ' "${steps[@]}" | sed 's/ $//')" \
	"status says every step of the doubling ran, in order, and is done"
echo "# took $((SECONDS - t0)) s"
finish
