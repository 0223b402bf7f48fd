#!/usr/bin/env bash
# kill: a run killed at any point resumes and ends exactly.  RESHARD_FAULT
# exits the process (status 99, nothing closed) before or after each step
# and after a chunk of copy, verify, purge and final-check; `run` again
# finishes: every row once on its owner under `to`, no capture left,
# markers done.  A copy killed after chunk 3 resumes (attempts 2, "resuming"),
# its chunks once each and as many as a clean run's.  A kill -9 in the
# middle of a throttled copy, then writes by the application on the
# sources while reshard is down (they are captured), then `run`: exact,
# with those writes.  The same for a kill -9 in the middle of purge, with
# writes on n4.
. "$(dirname "$0")/lib.sh"
begin "$@"

# resumed NAME: the checks after the resuming run (exit 0 checked by the caller).
resumed() {
	status_json
	equals "$(step_states)" "$all_done" "$1: status shows every step done"
	final_rows "$1: every row once, on its owner under to"
	no_leftovers "$1: no capture left"
	equals "$(markers)" "$(all_markers "done")" "$1: markers done"
}

# one_stream: the plan's walks in one stream, so chunk counts are exact.
one_stream() { sed -i 's/^options = { /options = { parallel = 1; /' plan.cfg; }

section baseline
fresh baseline
one_stream
run_reshard 0 "baseline: a clean run, for its chunk counts" run plan.cfg --yes
status_json
clean_copy_chunks=$(step_field copy chunks)
clean_copy_rows=$(step_field copy rows)
check "baseline: copy has more than 3 chunks ($clean_copy_chunks)" \
	test "${clean_copy_chunks:-0}" -gt 3

points=()
for s in "${steps[@]}"; do points+=("after-step:$s"); done
# (before-step:S is the same place as after-step of the step before S.)
points+=(before-step:preflight after-chunk:copy:1 after-chunk:copy:20
	after-chunk:pre-verify:5 after-chunk:purge:5 after-chunk:final-check:2)
for point in "${points[@]}"; do
	section "$point"
	fresh "${point//:/-}"
	RESHARD_FAULT=$point run_reshard 99 "$point: the run exits there" \
		run plan.cfg --yes
	has err "fault point $point: exiting now" "$point: at the fault point"
	run_reshard 0 "$point: run again finishes" run plan.cfg --yes
	resumed "$point"
done

section mid-copy
fresh mid-copy
one_stream
RESHARD_FAULT=after-chunk:copy:3 run_reshard 99 "mid-copy: the run exits after chunk 3" \
	run plan.cfg --yes
status_json
equals "$(step_field copy state)/$(step_field copy chunks)" interrupted/3 \
	"mid-copy: status: copy interrupted, 3 chunks done"
run_reshard 0 "mid-copy: run again finishes" run plan.cfg --yes
has err "step copy           resuming" "mid-copy: copy resumed, not restarted"
resumed mid-copy
equals "$(step_field copy attempts)" 2 "mid-copy: copy attempts = 2"
equals "$(step_field copy chunks)/$(step_field copy rows)" \
	"$clean_copy_chunks/$clean_copy_rows" "mid-copy: copy chunks and rows = a clean run's"
IFS="|" read -r all distinct finished < <(journal_chunks copy)
equals "$all/$distinct/$finished" "$clean_copy_chunks/$clean_copy_chunks/$clean_copy_chunks" \
	"mid-copy: the journal has each copy chunk once, done"

# app_writes: the application's writes on the sources while reshard is
# down, and the same on master.db: a moving order updated, one deleted,
# one given a key that stays, a staying one given a key that moves, a new
# order that moves.
app_writes() {
	local mover gone rekeyed stayer staying moving home n changes
	mover=$(sql master.db "SELECT id FROM orders JOIN routes ON key = customer
		WHERE moves ORDER BY id LIMIT 1 OFFSET 5")
	gone=$(sql master.db "SELECT id FROM orders JOIN routes ON key = customer
		WHERE moves ORDER BY id DESC LIMIT 1")
	read -r rekeyed home < <(sql -separator ' ' master.db "SELECT id, from_owner
		FROM orders JOIN routes ON key = customer WHERE moves AND NOT EXISTS
		(SELECT 1 FROM items WHERE order_id = id) ORDER BY id LIMIT 1 OFFSET 9")
	staying=$(sql master.db "SELECT key FROM routes WHERE NOT moves
		AND from_owner = '$home' ORDER BY key LIMIT 1")
	read -r stayer home < <(sql -separator ' ' master.db "SELECT id, from_owner
		FROM orders JOIN routes ON key = customer WHERE NOT moves AND NOT EXISTS
		(SELECT 1 FROM items WHERE order_id = id) ORDER BY id LIMIT 1")
	moving=$(sql master.db "SELECT key FROM routes WHERE moves
		AND from_owner = '$home' ORDER BY key LIMIT 1")
	[ -n "$mover" ] && [ -n "$gone" ] && [ -n "$rekeyed" ] &&
		[ -n "$staying" ] && [ -n "$stayer" ] && [ -n "$moving" ] || return 1
	changes="UPDATE orders SET note = 'written while reshard was down',
		amount = -3.5 WHERE id = $mover;
	DELETE FROM items WHERE order_id = $gone;
	DELETE FROM orders WHERE id = $gone;
	UPDATE orders SET customer = '${staying//\'/\'\'}' WHERE id = $rekeyed;
	UPDATE orders SET customer = '${moving//\'/\'\'}' WHERE id = $stayer;"
	for n in "${sources[@]}"; do
		sql "$n.db" "$changes" || return 1
	done
	sql master.db "$changes" || return 1
	changes="INSERT INTO orders VALUES (7000001, '${moving//\'/\'\'}', 99.99,
		'inserted while reshard was down')"
	sql "$home.db" "$changes" && sql master.db "$changes" || return 1
	reroute
}

# kill_in STEP PID: poll until STEP has 2 chunks done, then kill -9 PID.
kill_in() {
	local step=$1 pid=$2
	if wait_for "2 chunks of $step" 20 chunks_done "$step" 2; then
		kill -9 "$pid"
		ok "kill -9 in $step after 2 chunks"
	else
		not_ok "$step did not get 2 chunks done"
		kill -9 "$pid"
	fi
	wait "$pid" 2>/dev/null
}
chunks_done() {
	[ -e "$plan_name.journal" ] && [ "$(sql -readonly "$plan_name.journal" \
		"SELECT count(*) FROM chunks WHERE step = '$1' AND state = 'done'" \
		2>/dev/null)" -ge "$2" ] 2>/dev/null
}

section kill-copy
# Throttled to 600 moved rows a second: the copy takes about 1.5 s.
fresh kill-copy ring "max_rows_per_second = 600;"
own_master
"$bin" run plan.cfg --yes >out 2>err </dev/null &
pid=$!
background+=("$pid")
kill_in copy "$pid"
status_json
equals "$(step_field copy state)" interrupted "kill-copy: status: copy interrupted"
check "kill-copy: the application writes on the sources" app_writes
write_plan plan.cfg # unthrottled: options may change between resumes
run_reshard 0 "kill-copy: run again finishes" run plan.cfg --yes
resumed kill-copy

section kill-purge
fresh kill-purge
own_master
run_reshard 0 "kill-purge: run --until unfence" run plan.cfg --until unfence --yes
write_plan plan.cfg "max_rows_per_second = 600;"
"$bin" run plan.cfg --yes >out 2>err </dev/null &
pid=$!
background+=("$pid")
kill_in purge "$pid"
status_json
equals "$(step_field purge state)" interrupted "kill-purge: status: purge interrupted"
# The application, routing by the published map, deletes and changes rows
# on n4 (the delete log keeps the deletes for purge).
id=$(sql master.db "SELECT id FROM orders JOIN routes ON key = customer
	WHERE to_owner = 'n4' AND NOT EXISTS (SELECT 1 FROM items WHERE order_id = id)
	ORDER BY id DESC LIMIT 1")
changes="DELETE FROM orders WHERE id = $id;
	UPDATE orders SET note = 'after unfence' WHERE id = (SELECT min(id) FROM orders);"
sql n4.db "$changes"
sql master.db "ATTACH 'n4.db' AS n4; UPDATE orders SET note = 'after unfence'
	WHERE id = (SELECT min(id) FROM n4.orders); DELETE FROM orders WHERE id = $id"
write_plan plan.cfg
run_reshard 0 "kill-purge: run again finishes" run plan.cfg --yes
resumed kill-purge

finish
