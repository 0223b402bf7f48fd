#!/usr/bin/env bash
# Purge's throttle on a PostgreSQL primary with a standby of its own: the
# downstream standby of pair 1 (pg-downstream, in no plan; servers.sh with
# RESHARD_DOWNSTREAM=1).  A doubling runs up to unfence; then the
# downstream's replay is paused (pg_wal_replay_pause), p1 writes a little
# and stays quiet for 2.5 s, as a primary does between unfence and a purge
# resumed later.  With max_replica_lag_seconds = 1, purge must say that it
# waits for p1's replicas and delete nothing on p1 while the replay stays
# paused; after pg_wal_replay_resume it goes on, and at the end every row
# is exactly once on its owner and the downstream holds what p1 holds.
# Then the copy's throttle, the same way: a split from a SQLite file into
# a new database on p1, whose copy must wait while the downstream's replay
# is paused, send nothing when stopped (SIGTERM) during the wait, and,
# resumed, end exact.  Then the replicas (and the
# downstream) are made again (reset-replicas).
#
# Needs the servers of integration/servers.sh started with
# RESHARD_DOWNSTREAM=1 (RESHARD_SERVERS_DIR/env).  20-35 s.
# Usage: integration/scenario_downstream_pg.sh   (ROWS, KEYS: the data size)
ENGINE=pg
export ROWS=${ROWS:-20000} KEYS=${KEYS:-2000} BATCH=${BATCH:-500}
# shellcheck source=integration/doubling_lib.sh
. "$(dirname "$0")/doubling_lib.sh"

d1=${RESHARD_PG_DOWNSTREAM_URL_1:-}
p1=$(url_of primary 1)

# p1_rows: how many rows p1's tables hold.
p1_rows() { q "$p1" "SELECT (SELECT count(*) FROM orders_0) + (SELECT count(*) FROM orders_1)"; }
# same_as_p1: the downstream holds what p1 holds (a count a table).
# shellcheck disable=SC2317 # called through check
same_as_p1() {
	local t want got tries=100
	for t in 0 1; do
		want=$(q "$p1" "SELECT count(*) FROM orders_$t")
		while got=$(q "$d1" "SELECT count(*) FROM orders_$t" 2>/dev/null) &&
			[ "$got" != "$want" ] && [ "$tries" -gt 0 ]; do
			sleep 0.1
			tries=$((tries - 1))
		done
		[ "$got" = "$want" ] || { echo "orders_$t: p1 $want rows, the downstream $got"; return 1; }
	done
}
# said TEXT: the run in the background ($pid) said TEXT on stderr (within
# 20 s, while it runs).
# shellcheck disable=SC2317 # called through check
said() {
	local tries=200
	until grep -q "$1" "$dir/err"; do
		[ "$tries" -gt 0 ] && kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
		tries=$((tries - 1))
	done
}
# lag_p1: the downstream's replay paused, then p1 written to and left
# quiet for 2.5 s, so that the downstream is more than 1 s behind.
lag_p1() {
	q "$d1" "SELECT pg_wal_replay_pause()" >/dev/null
	q "$p1" "CREATE TABLE lag_probe (x int); INSERT INTO lag_probe VALUES (1)"
	sleep 2.5
}
# run_ends NAME: the run in the background ($pid) ends within 60 s (else
# it is killed) with exit 0; the probe of lag_p1 goes.
run_ends() {
	local tries=600 rc=0
	while kill -0 "$pid" 2>/dev/null && [ $tries -gt 0 ]; do
		sleep 0.1
		tries=$((tries - 1))
	done
	kill -0 "$pid" 2>/dev/null && kill "$pid"
	wait "$pid" || rc=$?
	equals "$rc" 0 "$1: the run finishes (exit 0)"
	q "$p1" "DROP TABLE lag_probe"
}

trap 'rm -rf "$tmp"' EXIT # begin replaces it
if [ -z "$d1" ]; then
	bail "a downstream standby: no RESHARD_PG_DOWNSTREAM_URL_1 in the servers env (start them with RESHARD_DOWNSTREAM=1 integration/servers.sh start)"
fi
begin
check "pg downstream: it streams from p1 and has p1's rows" same_as_p1
fresh throttle "max_replica_lag_seconds = 1;"
run_reshard 0 "pg downstream: run --until unfence" run plan.cfg --until unfence --yes
# The downstream sends no hot standby feedback: a feedback message moves
# pg_stat_replication.reply_time without a new replay report, and so makes
# the time since the last report look shorter than it is (see
# docs/postgresql.md, downstream_lag).
q "$d1" "ALTER SYSTEM SET hot_standby_feedback = off" && q "$d1" "SELECT pg_reload_conf()" >/dev/null
lag_p1
before=$(p1_rows)
(cd "$dir" && exec "$bin" run plan.cfg --yes) >"$dir/out" 2>"$dir/err" </dev/null &
pid=$!
check "pg downstream: purge says it waits for p1's replicas" \
	said "p1: purge waits: its replicas replay"
sleep 2
equals "$(p1_rows)" "$before" \
	"pg downstream: purge deleted nothing on p1 while the downstream's replay was paused"
check "pg downstream: purge is still waiting" kill -0 "$pid"
q "$d1" "SELECT pg_wal_replay_resume()" >/dev/null
# Once the downstream has replayed everything it reports so at once; the
# lag it had until then must not hold purge back.
t0=$(date +%s%N)
tries=300
while [ "$(p1_rows)" = "$before" ] && [ $tries -gt 0 ]; do
	sleep 0.1
	tries=$((tries - 1))
done
waited=$((($(date +%s%N) - t0) / 1000000))
echo "# purge deleted on p1 again $waited ms after the replay was resumed"
check "pg downstream: purge deletes again within 3 s of pg_wal_replay_resume" test "$waited" -le 3000
run_ends "pg downstream"
same_rows "pg downstream: every row once, on its owner under to, unchanged" 3
check "pg downstream: the downstream holds what p1 holds" same_as_p1

# The copy's throttle: a split from a SQLite file into a new database on
# p1, with the downstream's replay paused again and p1 written to.  The
# copy must say that it waits for dst's replicas and send nothing while
# the replay stays paused, nor when stopped then; resumed, it ends exact.
dir=$tmp/copy-throttle
mkdir -p "$dir"
dst=${p1%/*}/rs_throttle_dst
q "$p1" "DROP DATABASE IF EXISTS rs_throttle_dst WITH (FORCE)" &&
	q "$p1" "CREATE DATABASE rs_throttle_dst" &&
	q "$dst" "CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL,
		amount numeric(12,2), note text)" ||
	bail "copy throttle: making the target database on p1"
sqlite3 "$dir/src.db" "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL,
	amount DECIMAL(12,2), note TEXT);
	WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 20000)
	INSERT INTO orders SELECT n, 'cliente:' || n, n % 1000, 'note ' || n FROM i" ||
	bail "copy throttle: making the source"
sqlite3 -separator $'\t' "$dir/src.db" "SELECT id, customer, note FROM orders ORDER BY id" >"$dir/rows.src"
src_dst_plan "$dir/plan.cfg" copy-throttle sha256_64 customer "$dst" 0 \
	"batch_rows = 500; max_replica_lag_seconds = 1;"
lag_p1
(cd "$dir" && exec "$bin" run plan.cfg --yes) >"$dir/out" 2>"$dir/err" </dev/null &
pid=$!
check "copy throttle: the copy says it waits for dst's replicas" \
	said "dst: the copy waits: its replicas replay"
sleep 2
equals "$(q "$dst" "SELECT count(*) FROM orders")" 0 \
	"copy throttle: nothing copied to dst while the downstream's replay was paused"
check "copy throttle: the copy is still waiting" kill -0 "$pid"
# A stop request while it waits: the batch it waited to send stays
# unsent, and the run stops (exit 4) to be resumed.
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
equals "$rc" 4 "copy throttle: a stop during the wait exits 4"
has "$dir/err" "on request" "copy throttle: it says it stopped on request"
equals "$(q "$dst" "SELECT count(*) FROM orders")" 0 \
	"copy throttle: the stop sent nothing to dst"
q "$d1" "SELECT pg_wal_replay_resume()" >/dev/null
(cd "$dir" && exec "$bin" run plan.cfg --yes) >"$dir/out" 2>"$dir/err" </dev/null &
pid=$!
run_ends "copy throttle"
q "$dst" "SELECT id, customer, note FROM orders ORDER BY id" >"$dir/rows.dst"
check "copy throttle: dst holds every row of the source, unchanged" cmp "$dir/rows.src" "$dir/rows.dst"
equals "$(sqlite3 "$dir/src.db" "SELECT count(*) FROM orders")" 0 \
	"copy throttle: the source's rows are purged"
q "$p1" "DROP DATABASE rs_throttle_dst WITH (FORCE)"
finish
