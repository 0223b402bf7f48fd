#!/usr/bin/env bash
# writer: a writer inserting and updating throughout the run, routing each
# write by the from map until the routing file exists, then by the to map
# (owners from the oracle).  Fenced writes are refused with the fence
# message, on the sources and on the promoted replicas; every write it saw
# succeed is in the final rows, which are the initial rows with its writes
# applied in order.
. "$(dirname "$0")/lib.sh"
begin "$@"

section writer
fresh writer
own_master
read_owners
mapfile -t writer_keys < <(sql master.db "SELECT k FROM keys WHERE n % 3 = 0")
mapfile -t writer_rows < <(sql -separator $'\t' master.db \
	"SELECT id, customer_id FROM orders WHERE id % 7 = 0 ORDER BY id")
# Records in writer.log every write that succeeded, in writer.rejected
# every write refused by the fence, in writer.failed any other outcome.
writer() {
	local i=0 id key owner note amount out verb
	while [ ! -e writer.stop ]; do
		i=$((i + 1))
		echo "$i" >writer.iter
		note="writer $i: ünïcødé '$i'"
		amount=$((i * 37 % 100000)).$((i % 10))0
		if [ $((i % 2)) -eq 1 ]; then
			verb=insert id=$((100000 + i))
			key=${writer_keys[$((i % ${#writer_keys[@]}))]}
		else
			verb=update
			IFS=$'\t' read -r id key <<<"${writer_rows[$((i * 13 % ${#writer_rows[@]}))]}"
		fi
		if [ -e routing.cfg ]; then
			owner=${to_owner[$key]:-}
		else
			owner=${from_owner[$key]:-}
		fi
		if [ -z "$owner" ]; then
			echo "$verb $id: the oracle gave no owner for $key" >>writer.failed
			continue
		fi
		if [ "$verb" = insert ]; then
			out=$(sql "${owner%%.*}.db" "INSERT INTO ${owner#*.}
				VALUES ($id, '${key//\'/\'\'}', $amount,
				        '${note//\'/\'\'}'); SELECT changes();" 2>&1)
		else
			out=$(sql "${owner%%.*}.db" "UPDATE ${owner#*.}
				SET amount = $amount, note = '${note//\'/\'\'}'
				WHERE id = $id; SELECT changes();" 2>&1)
		fi
		if [ "$out" = 1 ]; then
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$verb" "$id" "$key" \
				"$amount" "$note" "$owner" >>writer.log
		elif [[ "$out" == *"$fence_message"* ]]; then
			echo "$verb $id on $owner: $out" >>writer.rejected
		else
			echo "$verb $id on $owner: $out" >>writer.failed
		fi
	done
}
iter_past() { [ "$(cat writer.iter 2>/dev/null || echo 0)" -ge "$1" ]; }
touch writer.log
writer &
writer_pid=$!
background+=("$writer_pid")
check "writer: writes go through before the fence" \
	wait_for "10 writes" 20 log_lines writer.log 10
run_reshard 0 "writer: run --until fence" run plan.cfg --until fence --yes
# Before the fence, writes open, pre-verify replayed the writer's changes
# onto the replica files it made and compared them again (a round), so
# that the fence has only the last round's writes left.
"$bin" log plan.cfg >log.out 2>&1
has log.out "pre-verify: round 1 compared again" \
	"writer: pre-verify settled in rounds before the fence"
status_json
equals "$(jget '$.fenced')" 1 "writer: status shows writes fenced"
check "writer: its writes are refused while fenced" \
	wait_for "a refused write" 20 log_lines writer.rejected 1
sql db0.db "INSERT INTO orders_0 VALUES (99999, 'cust-00000', 1, 'x')" \
	>fenced.out 2>&1
check "writer: an insert on fenced db0 fails" test "$?" -ne 0
has fenced.out "$fence_message" "writer: the refusal names the run and the fence"
run_reshard 0 "writer: run --until publish" run plan.cfg --until publish --yes
sql db2.db "UPDATE orders_1 SET note = 'x'" >fenced.out 2>&1
check "writer: an update on promoted db2 fails before unfence" test "$?" -ne 0
has fenced.out "$fence_message" "writer: the replica carries the fence"
# No write may still be on its way by the routing read before publish.
iteration=$(cat writer.iter)
check "writer: writer routes by the published routing" \
	wait_for "two writer iterations" 20 iter_past $((iteration + 2))
successes=$(wc -l <writer.log)
run_reshard 0 "writer: run to the end" run plan.cfg --yes
check "writer: writes go through after unfence" \
	wait_for "10 more writes" 20 log_lines writer.log $((successes + 10))
touch writer.stop
wait "$writer_pid"
check "writer: no write failed other than by the fence" test ! -s writer.failed
[ -s writer.failed ] && head -n 5 writer.failed | sed 's/^/#   /'
# Expected: the initial rows with the writer's writes applied, in order.
while IFS=$'\t' read -r verb id key amount note owner; do
	if [ "$verb" = insert ]; then
		echo "INSERT INTO orders VALUES ($id, '${key//\'/\'\'}', $amount, '${note//\'/\'\'}');"
	else
		echo "UPDATE orders SET amount = $amount, note = '${note//\'/\'\'}' WHERE id = $id;"
	fi
done <writer.log | sql master.db
status_json
equals "$(step_states)" "$all_done" "writer: status shows every step done"
final_rows "writer: final rows = initial rows + the writer's writes"
# And each id the writer wrote, in its last version, on its owner.
cut -f2 writer.log | sort -u >written.ids
awk -F'\t' 'NR == FNR { want[$1] = 1; next } ($2 in want)' written.ids \
	rows.expected >written.expected
comm -23 written.expected rows.actual >written.missing
check "writer: every one of its $(wc -l <writer.log) successful writes ($(wc -l <written.ids) rows) is on its owner" \
	test -s written.expected -a ! -s written.missing
echo "# writer: $(wc -l <writer.log) writes succeeded, $(wc -l <writer.rejected) refused by the fence"

finish
