#!/usr/bin/env bash
# abort: `reshard abort` after each step before publish (preflight,
# capture, copy, catch-up, fence, final-catch-up, verify) undoes the run:
# n4 emptied of what was copied, the capture triggers and change logs gone
# from the sources, the fence down, the sources' tables exactly as before
# (their dump equal to the template's), every marker aborted, the journal
# set aside; a new run of the same plan then completes exactly.  Writes
# the application made on the sources during the copy are kept by abort.
# So is a fence left up by a give-back that could not take it off.
# After publish, abort refuses (exit 2) and changes nothing.
. "$(dirname "$0")/lib.sh"
begin "$@"

# dumps: the sources' tables, schema and rows, as the sqlite3 shell dumps them.
dumps() {
	local n
	for n in "${sources[@]}"; do
		echo "-- $n"
		sql -readonly "$1/$n.db" ".dump orders items"
	done
}

# writes_open NAME: an insert on every source goes through (rolled back).
writes_open() {
	local n out bad=''
	for n in "${sources[@]}"; do
		out=$(sql "$n.db" "BEGIN; INSERT INTO orders VALUES (99999999, 'x',
			1, 'probe'); ROLLBACK;" 2>&1) || bad+=" $n: $out"
	done
	equals "${bad:-none}" none "$1: writes open on every source"
}

# undone NAME STEP: the checks after an abort of a run stopped after STEP.
undone() {
	local name=$1 step=$2
	has err "aborted" "$name: abort says the run is aborted"
	equals "$(count_rows n4)" 0/0 "$name: n4 emptied of what was copied"
	dumps "$dir" >dump.after
	same_lines "$name: the sources' tables exactly as before (dump)" \
		dump.before dump.after
	no_leftovers "$name: no trigger, change log or delete log left"
	writes_open "$name"
	if [ "$step" = preflight ]; then
		equals "$(markers)" "$(all_markers -)" "$name: no marker on any shard"
	else
		equals "$(markers)" "$(all_markers aborted)" "$name: every marker says aborted"
	fi
	check "$name: journal set aside" test ! -e "$plan_name.journal" -a \
		-n "$(compgen -G "$plan_name.journal.aborted-*")"
}

for step in preflight capture copy catch-up pre-verify fence final-catch-up verify; do
	section "abort-$step"
	fresh "abort-$step"
	dumps "$root/template-$kind" >dump.before
	run_reshard 0 "abort-$step: run --until $step" run plan.cfg --until "$step" --yes
	case $step in
	preflight | capture) ;;
	*) equals "$(count_rows n4)" "$(sql "$root/template-$kind/master.db" "SELECT
		(SELECT count(*) FROM orders JOIN routes ON key = customer WHERE moves)
		|| '/' || (SELECT count(*) FROM items JOIN routes ON key = customer
		WHERE moves)")" "abort-$step: n4 holds the copies before abort" ;;
	esac
	run_reshard 0 "abort-$step: abort" abort plan.cfg
	undone "abort-$step" "$step"
	run_reshard 0 "abort-$step: a new run of the plan completes" run plan.cfg --yes
	status_json
	equals "$(step_field preflight attempts)/$(step_field copy attempts)" 1/1 \
		"abort-$step: the new run started from the beginning"
	complete "abort-$step"
done

section abort-writes
# The application writes on the sources between copy and abort: the
# capture logs them, abort drops the logs and keeps the writes.
fresh abort-writes
own_master
run_reshard 0 "abort-writes: run --until catch-up" run plan.cfg --until catch-up --yes
mover=$(sql master.db "SELECT id || ' ' || from_owner FROM orders
	JOIN routes ON key = customer WHERE moves ORDER BY id LIMIT 1")
stayer=$(sql master.db "SELECT id || ' ' || from_owner FROM orders
	JOIN routes ON key = customer WHERE NOT moves ORDER BY id LIMIT 1")
gone=$(sql master.db "SELECT id || ' ' || from_owner FROM orders
	JOIN routes ON key = customer WHERE moves ORDER BY id LIMIT 1 OFFSET 1")
changes="UPDATE orders SET note = 'changed after the copy' WHERE id = ${mover% *};
	UPDATE orders SET amount = 1.25 WHERE id = ${stayer% *};
	DELETE FROM items WHERE order_id = ${gone% *};
	DELETE FROM orders WHERE id = ${gone% *};"
for n in "${sources[@]}"; do
	sql "$n.db" "$changes"
done
sql master.db "$changes"
equals "$(sql "${mover#* }.db" "SELECT count(*) FROM reshard_chg_orders
	WHERE id = ${mover% *}")" 1 \
	"abort-writes: the capture logged the change of the mover on ${mover#* }"
run_reshard 0 "abort-writes: abort" abort plan.cfg
equals "$(count_rows n4)" 0/0 "abort-writes: n4 emptied"
source_rows "abort-writes: the sources hold their rows with the application's writes"
no_leftovers "abort-writes: no trigger, change log or delete log left"
run_reshard 0 "abort-writes: a new run completes" run plan.cfg --yes
complete abort-writes

section abort-given-back
# The cutover is given back (fence_timeout_seconds passed) while a long
# transaction on n0 holds its write lock: the fence cannot come off n0,
# the run fails with the fence steps pending again, and the fence still
# up.  Abort must take it off all the same.
fresh abort-given-back ring "fence_timeout_seconds = 1;"
dumps "$root/template-$kind" >dump.before
run_reshard 0 "abort-given-back: run --until fence" run plan.cfg --until fence --yes
sleep 1.2
check "abort-given-back: a transaction holds n0's write lock" hold_lock n0.db 60
run_reshard 1 "abort-given-back: the give-back cannot unfence n0 (exit 1)" run plan.cfg --yes
has err "resumes at step fence" "abort-given-back: the message says run resumes at the fence"
status_json
equals "$(step_field fence state)/$(jget '$.fenced')" pending/1 \
	"abort-given-back: status: fence pending again, writes still fenced"
kill "$lock_pid" && wait "$lock_pid" 2>/dev/null
run_reshard 0 "abort-given-back: abort" abort plan.cfg
undone abort-given-back fence

section abort-published
fresh abort-published
run_reshard 0 "abort-published: run --until publish" run plan.cfg --until publish --yes
cp n0.db n0.before
cp n4.db n4.before
run_reshard 2 "abort-published: abort refuses (exit 2)" abort plan.cfg
has err "passed publish" "abort-published: it says publish was passed"
has err "run plan.cfg" "abort-published: it says how to go on"
unchanged() { cmp -s n0.db n0.before && cmp -s n4.db n4.before; }
check "abort-published: n0 and n4 unchanged" unchanged
status_json
equals "$(jget '$.fenced')" 1 "abort-published: still fenced"
run_reshard 0 "abort-published: the run goes on" run plan.cfg --yes
complete abort-published

finish
