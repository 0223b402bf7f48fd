#!/usr/bin/env bash
# writer: an application writing while the split runs.  tests/split/data.py's
# writer inserts, updates, changes the shard key (so that rows start or
# stop moving) and deletes orders, each write routed by the oracle's owner
# under `from` until the routing file exists, then under `to`; a write
# refused by the fence is retried after a pause.  Its writes are refused
# only by the fence, with the run's fence message; at the end the shards
# hold exactly the initial rows with every write it saw committed applied
# in order, each row on its owner under `to`, deleted rows nowhere.
#
#   writer   the copy throttled so that it takes about 1.5 s of writes;
#            a publish hook holds the fence until the writer has been
#            refused once; `run --until unfence`, writes on n4 (deletes,
#            key changes) and the sources, then the rest of the run with
#            purge throttled under the writes
#   phased   the run stopped after copy, catch-up, fence, final-catch-up,
#            verify and unfence, the writer going on between the stops
#            until it has written what each stage must replay: moving
#            rows updated, deleted and given keys that stay, staying rows
#            given keys that move, refusals at the fence
#   window   between publish and unfence the application, routing by the
#            published map, deletes a moved row on n4, changes another's
#            key and updates a third: each refused by a fence or kept;
#            the run then ends exactly
. "$(dirname "$0")/lib.sh"
begin "$@"

writer_start() { # writer_start SEED
	rm -f writer.stop
	: >writer.log
	: >writer.rejected
	: >writer.failed
	"$python" -S "$data" writer "$dir" "$1" "$oracle_from" "$oracle_to" \
		2>writer.err &
	writer_pid=$!
	background+=("$writer_pid")
}
writer_stop() {
	touch writer.stop
	wait "$writer_pid"
	check "$section_name: the writer ended cleanly" test ! -s writer.err
}

# logged_after N COUNT REGEX: writer.log has COUNT lines matching REGEX
# (grep -E) after its line N.  A line is a JSON list: verb, id, customer,
# amount, note, shard, flags (",mover" when the row's key moved before the
# write, ",from-routing" or ",to-routing", after "owner-changes" when a
# key change made the row start or stop moving).
logged_after() {
	[ "$(tail -n +"$(($1 + 1))" writer.log | grep -cE -- "$3")" -ge "$2" ]
}
# wait_logged NAME N REGEX [COUNT]: wait until writer.log has COUNT (1)
# lines matching REGEX after its line N.
wait_logged() {
	check "$1" wait_for "$1" 20 logged_after "$2" "${4:-1}" "$3"
}
lines() { wc -l <"$1"; }

# exact NAME: the writer's record applied to the initial rows, compared.
exact() {
	local name=$1
	check "$name: no write failed other than by the fence" test ! -s writer.failed
	[ -s writer.failed ] && head -n 5 writer.failed | sed 's/^/#   /'
	if grep -vF "$fence_message" writer.rejected >rejected.other; then
		not_ok "$name: every refusal names the run and the fence" rejected.other
	else
		ok "$name: every refusal ($(lines writer.rejected)) names the run and the fence"
	fi
	if ! "$python" -S "$data" apply "$dir" || ! reroute; then
		not_ok "$name: applying the writer's record"
	fi
	complete "$name"
	echo "# $name: $(lines writer.log) writes committed, $(lines writer.rejected) refused by the fence"
}

# A publish hook that holds the fence until the writer was refused once.
hold_fence() {
	cat >hold.sh <<'SH'
i=0
while [ ! -s writer.rejected ] && [ $i -lt 1000 ]; do
	sleep 0.01
	i=$((i + 1))
done
SH
}

section writer
fresh writer ring "max_rows_per_second = 600;" 'command = "sh hold.sh";'
own_master
hold_fence
writer_start 1
wait_logged "writer: writes go through before the run" 0 . 20
run_reshard 0 "writer: run --until unfence" run plan.cfg --until unfence --yes
check "writer: its writes were refused while fenced" test -s writer.rejected
status_json
equals "$(jget '$.fenced')" 0 "writer: status: writes open after unfence"
replayed=$(($(step_field catch-up rows) + $(step_field final-catch-up rows) + 0))
check "writer: catch-up replayed its writes ($replayed rows)" test "$replayed" -gt 0
at=$(lines writer.log)
wait_logged "writer: after unfence, a delete on n4" "$at" '^\["delete", .*"n4", "[^"]*to-routing"\]$'
wait_logged "writer: after unfence, keys changed on n4" "$at" '^\["rekey", .*"n4", "[^"]*to-routing"\]$' 3
wait_logged "writer: after unfence, writes on n4" "$at" '"n4", "[^"]*"\]$' 10
run_reshard 0 "writer: run to the end" run plan.cfg --yes
at=$(lines writer.log)
wait_logged "writer: writes go through after the run" "$at" . 10
writer_stop
for verb in insert update rekey delete; do
	check "writer: it committed a $verb under from" \
		grep -q "^\[\"$verb\".*from-routing" writer.log
done
check "writer: it gave a moving row a key that stays, or the reverse" \
	grep -qE '"owner-changes,[^"]*from-routing"\]$' writer.log
exact writer

section phased
# The run stopped at each stage; the section stops at the first run that
# fails (the writer stopped, no waiting for what cannot come).
phased() {
	fresh phased
	own_master
	writer_start 2
	wait_logged "phased: writes go through before the run" 0 . 10
	run_reshard 0 "phased: run --until copy" run plan.cfg --until copy --yes || return 1
	at=$(lines writer.log)
	# What catch-up must replay: moving rows updated and deleted, and key
	# changes that make rows start or stop moving.
	wait_logged "phased: moving rows updated after the copy" "$at" '^\["update", .*,mover,from-routing"\]$' 3
	wait_logged "phased: a moving row deleted after the copy" "$at" '^\["delete", .*,mover,from-routing"\]$'
	wait_logged "phased: keys changed after the copy, rows starting or stopping to move" \
		"$at" '"owner-changes,[^"]*from-routing"\]$' 3
	run_reshard 0 "phased: run --until catch-up" run plan.cfg --until catch-up --yes || return 1
	at=$(lines writer.log)
	wait_logged "phased: more writes after catch-up" "$at" . 20
	run_reshard 0 "phased: run --until fence" run plan.cfg --until fence --yes || return 1
	status_json
	equals "$(jget '$.fenced')" 1 "phased: status: fenced"
	refused=$(lines writer.rejected)
	check "phased: the writer is refused while fenced" \
		wait_for "two more refusals" 20 log_lines writer.rejected $((refused + 2))
	sql n1.db "INSERT INTO orders VALUES (99999999, 'x', 1, 'fenced?')" >fenced.out 2>&1
	check "phased: an insert on fenced n1 fails" test "$?" -ne 0
	has fenced.out "$fence_message" "phased: the refusal names the run and the fence"
	at=$(lines writer.log)
	run_reshard 0 "phased: run --until final-catch-up" run plan.cfg --until final-catch-up --yes || return 1
	run_reshard 0 "phased: run --until verify" run plan.cfg --until verify --yes || return 1
	equals "$(lines writer.log)" "$at" "phased: nothing committed while fenced"
	run_reshard 0 "phased: run --until unfence" run plan.cfg --until unfence --yes || return 1
	at=$(lines writer.log)
	wait_logged "phased: writes on n4 after unfence" "$at" '"n4", "[^"]*"\]$' 10
	run_reshard 0 "phased: run to the end" run plan.cfg --yes || return 1
	writer_stop
	exact phased
}
phased || {
	touch writer.stop
	wait "$writer_pid"
	not_ok "phased: stopped after the first failed run"
}

section window
fresh window
own_master
run_reshard 0 "window: run --until publish" run plan.cfg --until publish --yes
mapfile -t on_n4 < <(sql n4.db "SELECT id FROM orders o WHERE NOT EXISTS
	(SELECT 1 FROM items i WHERE i.order_id = o.id) ORDER BY id LIMIT 3")
[ "${#on_n4[@]}" -eq 3 ] || bail "window: no three orders on n4"
new_key=''
for k in $(seq 1 400); do
	read -r _ t < <(owners "window-$k")
	if [ "$t" = n4 ]; then new_key=window-$k && break; fi
done
[ -n "$new_key" ] || bail "window: no key of n4's found"
# As the application, routing by the published file: each write either
# refused by a fence or committed, and then expected.
for change in "DELETE FROM orders WHERE id = ${on_n4[0]}" \
	"UPDATE orders SET customer = '$new_key' WHERE id = ${on_n4[1]}" \
	"UPDATE orders SET note = 'between publish and unfence' WHERE id = ${on_n4[2]}"; do
	if out=$(sql n4.db "$change" 2>&1); then
		sql master.db "$change"
		echo "# window: committed on n4: $change"
	elif [[ "$out" == *"writes paused by reshard"* ]]; then
		echo "# window: refused by the fence on n4: $change"
	else
		not_ok "window: $change: $out"
	fi
done
reroute
run_reshard 0 "window: the run ends" run plan.cfg --yes
complete window

finish
