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
ENGINE=pg
# shellcheck source=integration/doubling_lib.sh
. "$(dirname "$0")/doubling_lib.sh"
begin

r1=$(url_of replica 1) p1=$(url_of primary 1)

# Preflight refusals, each leaving everything as it was.
fresh lag "max_replica_lag_seconds = 1;"
q "$r1" "SELECT pg_wal_replay_pause()" >/dev/null
q "$p1" "CREATE TABLE lag_probe (x int); INSERT INTO lag_probe VALUES (1)"
sleep 2.5
run_reshard 2 "pg lag: a replica replaying 2 s behind is refused (exit 2)" run plan.cfg --yes
refused "pg lag" "r1"
q "$r1" "SELECT pg_wal_replay_resume()" >/dev/null
q "$p1" "DROP TABLE lag_probe"

fresh stopped
conninfo=$(q "$r1" "SHOW primary_conninfo")
q "$r1" "ALTER SYSTEM SET primary_conninfo = ''" && q "$r1" "SELECT pg_reload_conf()" >/dev/null
sleep 1
run_reshard 2 "pg stopped: a replica not streaming is refused (exit 2)" run plan.cfg --yes
refused "pg stopped" "r1"
q "$r1" "ALTER SYSTEM SET primary_conninfo = '${conninfo//\'/\'\'}'" &&
	q "$r1" "SELECT pg_reload_conf()" >/dev/null
check "pg stopped: streaming again" wait_replicas

fresh sync
q "$p1" "ALTER SYSTEM SET synchronous_standby_names = '*'" && q "$p1" "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
run_reshard 2 "pg sync: a synchronous standby is refused (exit 2)" run plan.cfg --yes
refused "pg sync" "synchronous_standby_names"
q "$p1" "ALTER SYSTEM RESET synchronous_standby_names" && q "$p1" "SELECT pg_reload_conf()" >/dev/null

if [ "$pairs" -ge 2 ]; then
	fresh crossed
	# r1 and r2 swap servers: the plan is valid, but the server named
	# r1 replicates from p2's server.
	u1=$(plan_url replica 1) u2=$(plan_url replica 2)
	sed -i "s|url = \"$u1\"|url = \"@R1@\"|; s|url = \"$u2\"|url = \"$u1\"|; s|@R1@|$u2|" "$dir/plan.cfg"
	run_reshard 2 "pg crossed: a replica of another primary is refused (exit 2)" run plan.cfg --yes
	refused "pg crossed" "r1"
fi

# Abort after catch-up: the fence goes, the replicas still replicate,
# every row where it was.
fresh abort-catch-up
run_reshard 0 "pg abort: run --until catch-up" run plan.cfg --until catch-up --yes
run_reshard 0 "pg abort: abort" abort plan.cfg
has "$dir/err" "still a replica of p1" "pg abort: the replica is left to replicate"
equals "$(fence_triggers)" 0 "pg abort: no fence trigger left on any server"
same_rows "pg abort: every row where it was" 2
check "pg abort: the replicas still replicate" wait_replicas

# The doubling, stopped by a crash after every step before verify, in
# the middle of verify and after every step after it, each time resumed
# by the next run.
fresh run
for step in preflight fence catch-up promote; do
	RESHARD_FAULT=after-step:$step run_reshard 99 "pg: crash after step $step" \
		run plan.cfg --yes
	[ "$step" = promote ] && has "$dir/err" "dropped replication slot" \
		"pg: promote says it dropped the replica's slot"
done
RESHARD_FAULT=after-chunk:verify:2 run_reshard 99 "pg: crash after chunk 2 of verify" \
	run plan.cfg --yes
for step in verify publish unfence purge; do
	[ "$step" = purge ] && RESHARD_FAULT=after-chunk:purge:3 run_reshard 99 \
		"pg: resumed, crash after chunk 3 of purge" run plan.cfg --yes
	RESHARD_FAULT=after-step:$step run_reshard 99 "pg: resumed, crash after step $step" \
		run plan.cfg --yes
	[ "$step" = verify ] && has "$dir/err" "step verify         resuming" "pg: verify resumed"
done
run_reshard 0 "pg: run again resumes and finishes" run plan.cfg --yes
same_rows "pg: every row once, on its owner under to, unchanged" 3
for k in $(seq 1 "$pairs"); do
	equals "$(q "$(url_of replica "$k")" "SELECT pg_is_in_recovery()")" f \
		"pg: r$k is a primary of its own"
	# A downstream standby (servers.sh RESHARD_DOWNSTREAM=1) streams on
	# a slot of its own.
	equals "$(q "$(url_of primary "$k")" "SELECT count(*) FROM pg_replication_slots
		WHERE NOT active")" 0 "pg: no replication slot left on p$k but a streaming standby's"
done
not_fenced "pg"

# kill -9 at random instants until a run completes, on fresh replicas.
if reset && load && wait_replicas; then
	fresh sigkill
	killed_until_done "pg sigkill"
	same_rows "pg sigkill: every row once, on its owner under to, unchanged" 3
	equals "$(fence_triggers)" 0 "pg sigkill: no fence trigger left on any server"
else
	not_ok "pg sigkill: fresh replicas (servers.sh reset-replicas)"
fi

# Abort after promote, on fresh replicas: the promoted replica is unfenced
# and named for what it now is.
if reset && load && wait_replicas; then
	fresh abort-promote
	run_reshard 0 "pg abort after promote: run --until promote" run plan.cfg --until promote --yes
	run_reshard 0 "pg abort after promote: abort" abort plan.cfg
	has "$dir/err" "r1: promoted by this run, it is now an independent primary" \
		"pg abort after promote: abort says what the replica now is"
	equals "$(fence_triggers)" 0 "pg abort after promote: no fence trigger left on any server"
else
	not_ok "pg abort after promote: fresh replicas (servers.sh reset-replicas)"
fi
finish
