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
ENGINE=my LOGICAL_TABLES="orders items"
# shellcheck source=integration/doubling_lib.sh
. "$(dirname "$0")/doubling_lib.sh"
begin

r1=$(url_of replica 1) p1=$(url_of primary 1)

# slave_running: r1's replication threads both run (at most 10 s).
slave_running() {
	local tries=200
	until [ "$(q "$r1" "SHOW GLOBAL STATUS LIKE 'Slave_running'" | cut -f2)" = ON ]; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || return 1
		sleep 0.05
	done
}
# unfenced: no fence trigger on any server (at most 10 s: a replica
# loses it through replication).
unfenced() {
	local tries=200
	until [ "$(fence_triggers)" = 0 ]; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || return 1
		sleep 0.05
	done
}

# Preflight refusals, each leaving everything as it was.
fresh stopped
q "$r1" "STOP SLAVE"
run_reshard 2 "my stopped: a replica not replicating is refused (exit 2)" run plan.cfg --until preflight --yes
refused "my stopped" "r1"
q "$r1" "START SLAVE"
check "my stopped: replicating again" wait_replicas

fresh semisync
q "$p1" "SET GLOBAL rpl_semi_sync_master_enabled = ON"
run_reshard 2 "my semisync: a primary waiting for semi-sync acks is refused (exit 2)" run plan.cfg --until preflight --yes
refused "my semisync" "rpl_semi_sync_master_enabled"
q "$p1" "SET GLOBAL rpl_semi_sync_master_enabled = OFF"

fresh lag "max_replica_lag_seconds = 1;"
q "$r1" "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 60; START SLAVE"
q "$p1" "CREATE TABLE lag_probe (x int); INSERT INTO lag_probe VALUES (1)"
sleep 2.5
run_reshard 2 "my lag: a replica applying 2 s behind is refused (exit 2)" run plan.cfg --until preflight --yes
refused "my lag" "than the 1 s allowed (options.max_replica_lag_seconds)"
q "$r1" "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 0; START SLAVE"
q "$p1" "DROP TABLE lag_probe"
check "my lag: replicating again" wait_replicas

# A replica whose rows could differ from p1's unseen (GTIDs move past
# what it leaves out).
check "my: r1 replicates, both threads" slave_running
fresh writable
q "$r1" "SET GLOBAL read_only = 0"
run_reshard 2 "my writable: a writable replica is refused (exit 2)" run plan.cfg --until preflight --yes
refused "my writable" "is writable (@@read_only = 0)"
q "$r1" "SET GLOBAL read_only = 1"

fresh filtered
q "$r1" "STOP SLAVE; SET GLOBAL replicate_ignore_table = 'app.audit'; START SLAVE"
check "my filtered: replicating, with the filter" slave_running
run_reshard 2 "my filtered: a replica with a replication filter is refused (exit 2)" \
	run plan.cfg --until preflight --yes
refused "my filtered" "Replicate_Ignore_Table is 'app.audit'"
q "$r1" "STOP SLAVE; SET GLOBAL replicate_ignore_table = ''; START SLAVE"
check "my filtered: replicating again, without it" slave_running

fresh ignored
q "$r1" "STOP SLAVE; CHANGE MASTER TO IGNORE_SERVER_IDS = (99); START SLAVE"
check "my ignored: replicating, ignoring server 99" slave_running
run_reshard 2 "my ignored: a replica ignoring a server's events is refused (exit 2)" \
	run plan.cfg --until preflight --yes
refused "my ignored" "Replicate_Ignore_Server_Ids is '99'"
q "$r1" "STOP SLAVE; CHANGE MASTER TO IGNORE_SERVER_IDS = (); START SLAVE"
check "my ignored: replicating again, ignoring none" slave_running

fresh idempotent
q "$r1" "STOP SLAVE; SET GLOBAL slave_exec_mode = 'IDEMPOTENT'; START SLAVE"
run_reshard 2 "my idempotent: a replica going past missing rows is refused (exit 2)" \
	run plan.cfg --until preflight --yes
refused "my idempotent" "@@slave_exec_mode = IDEMPOTENT"
q "$r1" "STOP SLAVE; SET GLOBAL slave_exec_mode = 'STRICT'; START SLAVE"
check "my idempotent: replicating again, strict" slave_running

# A primary that takes no writes.
fresh readonly
q "$p1" "SET GLOBAL read_only = 1"
run_reshard 2 "my readonly: a read-only primary is refused (exit 2)" run plan.cfg --until preflight --yes
refused "my readonly" "primary p1 ("
has "$dir/err" "is read-only (@@read_only = 1)" "my readonly: it says p1 is read-only"
q "$p1" "SET GLOBAL read_only = 0"

refusals

# Abort after each step before promote, then (at the end) after promote
# and verify: every primary as it was.
aborts preflight pre-verify fence catch-up

# Replication stopped under the fence: catch-up fails at once (exit 1)
# rather than wait for ever, saying what stopped; started again, the run
# goes on.  A write of another table moves the position past the replica.
fresh stalled
run_reshard 0 "my stalled: run --until fence" run plan.cfg --until fence --yes
q "$r1" "STOP SLAVE SQL_THREAD"
q "$p1" "CREATE TABLE stall_probe (x int); INSERT INTO stall_probe VALUES (1)"
run_reshard 1 "my stalled: catch-up fails when the replica's SQL thread stopped" \
	run plan.cfg --until catch-up --yes
has "$dir/err" "replica r1 stopped replicating from p1" "my stalled: it names the replica"
has "$dir/err" "Slave_SQL_Running: No" "my stalled: it says which thread"
has "$dir/err" "START SLAVE on it, then \`reshard run\` again" "my stalled: and what to do"
q "$r1" "START SLAVE SQL_THREAD"
run_reshard 0 "my stalled: replicating again, catch-up completes" \
	run plan.cfg --until catch-up --yes
run_reshard 0 "my stalled: abort" abort plan.cfg
q "$p1" "DROP TABLE stall_probe"
check "my stalled: the replicas replicate" wait_replicas

# The cutover given back: r1 applies 6 s behind (MASTER_DELAY), so
# catch-up cannot end within fence_timeout_seconds (3 s).  The fence comes
# off and writes resume; with the delay gone, the next attempt puts the
# fence up again and catch-up completes.
fresh giveback "fence_timeout_seconds = 3; max_replica_lag_seconds = 10;"
q "$r1" "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 6; START SLAVE"
(cd "$dir" && exec "$bin" run plan.cfg --until catch-up --yes) >"$dir/out" 2>"$dir/err" </dev/null &
run_pid=$!
check "my give back: catch-up past fence_timeout_seconds gives the fence back" \
	wait_text "$dir/err" "the fence was given back (attempt 1 of 3)"
q "$r1" "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 0; START SLAVE"
IFS=$'\t' read -r moved from _ < <(awk -F'\t' '$2 != $3 && $2 ~ /^p1/' "$tmp/routes.tsv" | head -1)
check "my give back: meanwhile a write to a row that moves goes through on p1" \
	q "$p1" "BEGIN; INSERT INTO ${from#*.} VALUES ('gb', 99999993, '${moved//\'/\'\'}', 1.00, 'given back'); ROLLBACK"
wait "$run_pid"
equals "$?" 0 "my give back: the next attempt fences again and catch-up completes"
equals "$(grep -c 'step fence          starting' "$dir/err")" 2 "my give back: the fence went up twice"
run_reshard 0 "my give back: abort" abort plan.cfg
check "my give back: the replicas replicate" wait_replicas

# The doubling, stopped by a crash after every step and in the middle of
# verify and purge, each time resumed, while a writer routing by the
# routing file writes throughout.
crash_series
promoted_checks

# kill -9 at random instants until a run completes, on fresh replicas.
if reset && load && wait_replicas; then
	fresh sigkill
	killed_until_done "my sigkill"
	same_rows "my sigkill: every row once, on its owner under to, unchanged" 3
	equals "$(fence_triggers)" 0 "my sigkill: no fence trigger left on any server"
else
	not_ok "my sigkill: fresh replicas (servers.sh reset-replicas)"
fi

# Abort after promote and after verify, each on fresh replicas: the
# promoted replica is unfenced and named for what it now is.
aborts promote verify

# A promote cut short on r1 after its STOP SLAVE, or after its RESET SLAVE
# ALL (read-only still): abort starts the first one's replication again,
# so that it loses the fence through replication, and lifts the second
# one's fence itself, naming it for what it now is; a run again instead
# finishes the promotion from either.
# cut_promote NAME SQL: a run in a fresh folder, on fresh replicas, to
# catch-up; then SQL on r1.
cut_promote() {
	if ! { reset && load && wait_replicas; }; then
		not_ok "my $1: fresh replicas (servers.sh reset-replicas)"
		return 1
	fi
	fresh "$1"
	run_reshard 0 "my $1: run --until catch-up" run plan.cfg --until catch-up --yes
	q "$r1" "$2"
}
stopped="STOP SLAVE"
detached="STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 1"

if cut_promote cut-stopped "$stopped"; then
	run_reshard 0 "my cut-stopped: abort" abort plan.cfg
	has "$dir/err" "r1: a replica of p1 whose replication was stopped" \
		"my cut-stopped: abort says r1's replication was stopped and started again"
	check "my cut-stopped: r1 replicates again, both threads" slave_running
	check "my cut-stopped: no fence trigger left, r1's gone by replication" unfenced
	same_rows "my cut-stopped: every row where it was" 2
fi

if cut_promote cut-detached "$detached"; then
	run_reshard 0 "my cut-detached: abort" abort plan.cfg
	has "$dir/err" "r1: a promote cut short left it replicating from nothing, read-only still" \
		"my cut-detached: abort says what r1 now is"
	equals "$(fence_triggers)" 0 "my cut-detached: no fence trigger left, r1's lifted by abort"
	equals "$(q "$r1" "SELECT state FROM reshard_marker WHERE plan = 'orders-2x'")" aborted \
		"my cut-detached: r1's marker says aborted"
	same_rows "my cut-detached: every row where it was" 2
fi

for cut in stopped detached; do
	if cut_promote "cut-$cut-run" "${!cut}"; then
		run_reshard 0 "my cut-$cut-run: run again, promote completes" \
			run plan.cfg --until promote --yes
		equals "$(q "$r1" "SHOW SLAVE STATUS" | wc -l)" 0 "my cut-$cut-run: r1 replicates from nothing"
		equals "$(q "$r1" "SELECT @@read_only")" 0 "my cut-$cut-run: r1 takes writes"
		run_reshard 0 "my cut-$cut-run: abort" abort plan.cfg
		has "$dir/err" "r1: promoted by this run" "my cut-$cut-run: abort says r1 was promoted"
		equals "$(fence_triggers)" 0 "my cut-$cut-run: no fence trigger left on any server"
	fi
done
finish
