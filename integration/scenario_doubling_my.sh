#!/usr/bin/env bash
# A doubling on real MariaDB servers: P primaries (RESHARD_PAIRS of
# integration/servers.sh, 1 or more) become 2P shards by promoting their
# GTID replicas.  Rows with a composite primary key, NULLs and
# unicode, placed by the oracle; at the end every row is exactly once on
# its owner under `to`, every replica is a primary that replicates from
# nothing, and no fence is left anywhere.  Then the replicas are
# made replicas again (servers.sh reset-replicas).
#
# Needs the servers of integration/servers.sh (RESHARD_SERVERS_DIR/env).
# Usage: integration/scenario_doubling_my.sh   (ROWS, KEYS: the data size)
ENGINE=my
# shellcheck source=integration/doubling_lib.sh
. "$(dirname "$0")/doubling_lib.sh"
begin

r1=$(url_of replica 1) p1=$(url_of primary 1)

# Preflight refusals, each leaving everything as it was.
fresh stopped
q "$r1" "STOP SLAVE"
run_reshard 2 "my stopped: a replica not replicating is refused (exit 2)" run plan.cfg --yes
refused "my stopped" "r1"
q "$r1" "START SLAVE"
check "my stopped: replicating again" wait_replicas

fresh semisync
q "$p1" "SET GLOBAL rpl_semi_sync_master_enabled = ON"
run_reshard 2 "my semisync: a primary waiting for semi-sync acks is refused (exit 2)" run plan.cfg --yes
refused "my semisync" "rpl_semi_sync_master_enabled"
q "$p1" "SET GLOBAL rpl_semi_sync_master_enabled = OFF"

if [ "$pairs" -ge 2 ]; then
	fresh crossed
	# r1 and r2 swap servers: the plan is valid, but the server named
	# r1 replicates from p2's server.
	u1=$(plan_url replica 1) u2=$(plan_url replica 2)
	sed -i "s|url = \"$u1\"|url = \"@R1@\"|; s|url = \"$u2\"|url = \"$u1\"|; s|@R1@|$u2|" "$dir/plan.cfg"
	run_reshard 2 "my crossed: a replica of another primary is refused (exit 2)" run plan.cfg --yes
	refused "my crossed" "r1"
fi

# Abort after catch-up: the fence goes (through replication on the
# replicas: a write of their own would break their GTID replication),
# every row where it was.
fresh abort-catch-up
run_reshard 0 "my abort: run --until catch-up" run plan.cfg --until catch-up --yes
run_reshard 0 "my abort: abort" abort plan.cfg
has "$dir/err" "still a replica of p1" "my abort: the replica is left to replicate"
equals "$(fence_triggers)" 0 "my abort: no fence trigger left on any server"
same_rows "my abort: every row where it was" 2
check "my abort: the replicas still replicate" wait_replicas
for k in $(seq 1 "$pairs"); do
	# Slave_running: ON when both replication threads run.
	equals "$(q "$(url_of replica "$k")" "SHOW GLOBAL STATUS LIKE 'Slave_running'" |
		cut -f2)" ON "my abort: r$k replicates, both threads"
done

# The doubling, stopped by a crash after every step before verify, in
# the middle of verify and after every step after it, each time resumed
# by the next run.
fresh run
for step in preflight fence catch-up promote; do
	RESHARD_FAULT=after-step:$step run_reshard 99 "my: crash after step $step" \
		run plan.cfg --yes
done
RESHARD_FAULT=after-chunk:verify:2 run_reshard 99 "my: crash after chunk 2 of verify" \
	run plan.cfg --yes
for step in verify publish unfence purge; do
	[ "$step" = purge ] && RESHARD_FAULT=after-chunk:purge:3 run_reshard 99 \
		"my: resumed, crash after chunk 3 of purge" run plan.cfg --yes
	RESHARD_FAULT=after-step:$step run_reshard 99 "my: resumed, crash after step $step" \
		run plan.cfg --yes
	[ "$step" = verify ] && has "$dir/err" "step verify         resuming" "my: verify resumed"
done
run_reshard 0 "my: run again resumes and finishes" run plan.cfg --yes
same_rows "my: every row once, on its owner under to, unchanged" 3
for k in $(seq 1 "$pairs"); do
	equals "$(q "$(url_of replica "$k")" "SHOW SLAVE STATUS" | wc -l)" 0 \
		"my: r$k replicates from nothing"
	equals "$(q "$(url_of replica "$k")" "SELECT @@read_only")" 0 \
		"my: r$k takes writes"
done
not_fenced "my"
equals "$(fence_triggers)" 0 "my: no fence trigger left on any server"

# kill -9 at random instants until a run completes, on fresh replicas.
if reset && load && wait_replicas; then
	fresh sigkill
	killed_until_done "my sigkill"
	same_rows "my sigkill: every row once, on its owner under to, unchanged" 3
	equals "$(fence_triggers)" 0 "my sigkill: no fence trigger left on any server"
else
	not_ok "my sigkill: fresh replicas (servers.sh reset-replicas)"
fi

# Abort after promote, on fresh replicas: the promoted replica is unfenced
# and named for what it now is.
if reset && load && wait_replicas; then
	fresh abort-promote
	run_reshard 0 "my abort after promote: run --until promote" run plan.cfg --until promote --yes
	run_reshard 0 "my abort after promote: abort" abort plan.cfg
	has "$dir/err" "r1: promoted by this run, it is now an independent primary" \
		"my abort after promote: abort says what the replica now is"
	equals "$(fence_triggers)" 0 "my abort after promote: no fence trigger left on any server"
else
	not_ok "my abort after promote: fresh replicas (servers.sh reset-replicas)"
fi
finish
