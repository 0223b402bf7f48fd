#!/usr/bin/env bash
# A doubling on real PostgreSQL servers: P primaries (RESHARD_PAIRS of
# integration/servers.sh, 1 or more) become 2P shards by promoting their
# streaming replicas.  Rows with a composite primary key, NULLs and
# unicode, placed by the oracle; at the end every row is exactly once on
# its owner under `to`, every replica is a primary, no replication slot is
# left on the old primaries and no fence anywhere.  Then the replicas are
# made replicas again (servers.sh reset-replicas).
#
# Needs the servers of integration/servers.sh (RESHARD_SERVERS_DIR/env).
# Usage: integration/scenario_doubling_pg.sh   (ROWS, KEYS: the data size)
ENGINE=pg LOGICAL_TABLES="orders items"
# shellcheck source=integration/doubling_lib.sh
. "$(dirname "$0")/doubling_lib.sh"
begin

r1=$(url_of replica 1) p1=$(url_of primary 1)

# Preflight refusals, each leaving everything as it was.
fresh lag "max_replica_lag_seconds = 1;"
q "$r1" "ALTER SYSTEM SET recovery_min_apply_delay = '60s'" &&
	q "$r1" "SELECT pg_reload_conf()" >/dev/null
q "$p1" "CREATE TABLE lag_probe (x int); INSERT INTO lag_probe VALUES (1)"
sleep 2.5
run_reshard 2 "pg lag: a replica replaying 2 s behind is refused (exit 2)" run plan.cfg --until preflight --yes
refused "pg lag" "more than options.max_replica_lag_seconds (1 s) allows"
q "$r1" "ALTER SYSTEM RESET recovery_min_apply_delay" &&
	q "$r1" "SELECT pg_reload_conf()" >/dev/null
q "$p1" "DROP TABLE lag_probe"

fresh paused-preflight
q "$r1" "SELECT pg_wal_replay_pause()" >/dev/null
run_reshard 2 "pg paused: a replica whose replay is paused is refused (exit 2)" run plan.cfg --until preflight --yes
refused "pg paused" "replay is paused; resume it with SELECT pg_wal_replay_resume()"
q "$r1" "SELECT pg_wal_replay_resume()" >/dev/null

fresh stopped
conninfo=$(q "$r1" "SHOW primary_conninfo")
q "$r1" "ALTER SYSTEM SET primary_conninfo = ''" && q "$r1" "SELECT pg_reload_conf()" >/dev/null
sleep 1
run_reshard 2 "pg stopped: a replica not streaming is refused (exit 2)" run plan.cfg --until preflight --yes
refused "pg stopped" "r1"
q "$r1" "ALTER SYSTEM SET primary_conninfo = '${conninfo//\'/\'\'}'" &&
	q "$r1" "SELECT pg_reload_conf()" >/dev/null
check "pg stopped: streaming again" wait_replicas

fresh sync
q "$p1" "ALTER SYSTEM SET synchronous_standby_names = '*'" && q "$p1" "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
run_reshard 2 "pg sync: a synchronous standby is refused (exit 2)" run plan.cfg --until preflight --yes
refused "pg sync" "synchronous_standby_names"
q "$p1" "ALTER SYSTEM RESET synchronous_standby_names" && q "$p1" "SELECT pg_reload_conf()" >/dev/null

refusals

# Abort after each step before promote, then (at the end) after promote
# and verify: every primary as it was.
aborts preflight pre-verify fence catch-up

# Replay paused under the fence: catch-up waits, saying why at once; the
# replay resumed, it completes.  A table made on p1 moves the position
# past the replica.
fresh paused
run_reshard 0 "pg paused: run --until fence" run plan.cfg --until fence --yes
q "$r1" "SELECT pg_wal_replay_pause()" >/dev/null
q "$p1" "CREATE TABLE pause_probe (x int)"
(cd "$dir" && exec "$bin" run plan.cfg --until catch-up --yes) >"$dir/out" 2>"$dir/err" </dev/null &
run_pid=$!
check "pg paused: catch-up says the replica's replay is paused" \
	wait_text "$dir/err" "its WAL replay is paused"
q "$r1" "SELECT pg_wal_replay_resume()" >/dev/null
wait "$run_pid"
equals "$?" 0 "pg paused: replay resumed, catch-up completes"
run_reshard 0 "pg paused: abort" abort plan.cfg
q "$p1" "DROP TABLE pause_probe"
check "pg paused: the replicas replicate" wait_replicas

# The cutover given back: r1 replays 6 s behind, so catch-up cannot end
# within fence_timeout_seconds (3 s).  The fence comes off and writes
# resume; once the delay is gone the next attempt puts the fence up again
# and catch-up completes.
fresh giveback "fence_timeout_seconds = 3; max_replica_lag_seconds = 10;"
q "$r1" "ALTER SYSTEM SET recovery_min_apply_delay = '6s'" &&
	q "$r1" "SELECT pg_reload_conf()" >/dev/null
(cd "$dir" && exec "$bin" run plan.cfg --until catch-up --yes) >"$dir/out" 2>"$dir/err" </dev/null &
run_pid=$!
check "pg give back: catch-up past fence_timeout_seconds gives the fence back" \
	wait_text "$dir/err" "the fence was given back (attempt 1 of 3)"
IFS=$'\t' read -r moved from _ < <(awk -F'\t' '$2 != $3 && $2 ~ /^p1/' "$tmp/routes.tsv" | head -1)
check "pg give back: meanwhile a write to a row that moves goes through on p1" \
	q "$p1" "BEGIN; INSERT INTO ${from#*.} VALUES ('gb', 99999993, '${moved//\'/\'\'}', 1.00, 'given back'); ROLLBACK"
q "$r1" "ALTER SYSTEM RESET recovery_min_apply_delay" &&
	q "$r1" "SELECT pg_reload_conf()" >/dev/null
wait "$run_pid"
equals "$?" 0 "pg give back: the next attempt fences again and catch-up completes"
equals "$(grep -c 'step fence          starting' "$dir/err")" 2 "pg give back: the fence went up twice"
tries() { sqlite3 "$dir/orders-2x.journal" "SELECT value FROM facts WHERE name = 'cutover_tries'"; }
equals "$(tries)" 1 "pg give back: the journal counts one attempt given back"
run_reshard 0 "pg give back: run again (--until catch-up, done)" run plan.cfg --until catch-up --yes
equals "$(tries)" "" "pg give back: a new run has its three attempts again"
run_reshard 0 "pg give back: abort" abort plan.cfg
check "pg give back: the replicas replicate" wait_replicas

# The doubling, stopped by a crash after every step and in the middle of
# verify and purge, each time resumed, while a writer routing by the
# routing file writes throughout.
crash_series
promoted_checks

# kill -9 at random instants until a run completes, on fresh replicas.
if reset && load && wait_replicas; then
	fresh sigkill
	killed_until_done "pg sigkill"
	same_rows "pg sigkill: every row once, on its owner under to, unchanged" 3
	equals "$(fence_triggers)" 0 "pg sigkill: no fence trigger left on any server"
else
	not_ok "pg sigkill: fresh replicas (servers.sh reset-replicas)"
fi

# Abort after promote and after verify, each on fresh replicas: the
# promoted replica is unfenced and named for what it now is.
aborts promote verify

# A promote cut short between r1's promotion and the release of its slot
# (a crash at fault point after-promote:r1), then abort: the slot r1
# streamed from, which would hold p1's WAL for ever, is dropped by abort.
slot=pg_replica # servers.sh's slot of pair 1's replica
slots() { q "$p1" "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot'"; }
if reset && load && wait_replicas; then
	fresh promote-cut
	RESHARD_FAULT=after-promote:r1 run_reshard 99 \
		"pg promote cut: a crash just after r1's promotion" run plan.cfg --yes
	equals "$(q "$r1" "SELECT pg_is_in_recovery()")" f "pg promote cut: r1 is promoted"
	equals "$(slots)" 1 "pg promote cut: its slot $slot is still on p1"
	run_reshard 0 "pg promote cut: abort" abort plan.cfg
	has "$dir/err" "p1: dropped replication slot $slot (it held WAL for r1)" \
		"pg promote cut: abort says it dropped the slot"
	has "$dir/err" "r1: promoted by this run, it is now an independent primary" \
		"pg promote cut: abort says what r1 now is"
	equals "$(slots)" 0 "pg promote cut: no slot left for r1 on p1"
	equals "$(fence_triggers)" 0 "pg promote cut: no fence trigger left on any server"
	same_rows "pg promote cut: every row where it was" 2
else
	not_ok "pg promote cut: fresh replicas (servers.sh reset-replicas)"
fi
finish
