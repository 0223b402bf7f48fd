#!/usr/bin/env bash
# tamper: a copy that differs from its source stops the run in verify.
# After `run --until final-catch-up`, one copied row is changed on its new
# owner n4 (an amount; an empty note made NULL; one byte added to a blob;
# a copied item deleted); `run` then exits 3 naming the table and the
# row's keys, status shows verify failed and writes still fenced, nothing
# is published, and nothing is purged: the sources hold every row they
# held.  With the copy put right by hand, `run` goes on and ends exactly.
# The same with the copy changed while it is written (a trigger on n4),
# in one uninterrupted `run`.  `reshard verify` refuses before the copy is
# made (exit 2), and after it lists exactly a changed order (its column), a
# deleted item and an order added on n4 that would have moved there (exit
# 3), changing no shard file, also once the fence is older than
# fence_timeout_seconds.  A journal of a release without pre-verify,
# resumed past the fence, skips it and ends exact.  A difference
# pre-verify recorded survives a process that dies as a settling round
# compares again.
. "$(dirname "$0")/lib.sh"
begin "$@"

# until_final_catch_up NAME: fresh NAME, run --until final-catch-up, and
# note what the shards hold.
until_final_catch_up() {
	fresh "$1"
	run_reshard 0 "$1: run --until final-catch-up" run plan.cfg \
		--until final-catch-up --yes
	actual_rows "${sources[@]}" >sources.before
	copied_rows "$1: every row still on its source, every mover copied to n4"
	n4_rows=$(count_rows n4)
}

# one_row DB SQL: the single value SQL selects on DB (fails on none or more).
one_row() {
	local got
	got=$(sql "$1" "$2")
	[ -n "$got" ] && [ "$(wc -l <<<"$got")" -eq 1 ] || return 1
	echo "$got"
}

section amount
until_final_catch_up amount
id=$(one_row n4.db "SELECT id FROM orders WHERE amount IS NOT NULL
	ORDER BY id LIMIT 1 OFFSET 10") ||
	bail "$section_name: no row to change"
sql n4.db "UPDATE orders SET amount = amount + 0.01 WHERE id = $id"
run_reshard 3 "amount: run stops in verify (exit 3)" run plan.cfg --yes
stopped amount "(id = '$id') differs on n4.orders"
# Put the copy right from its source, as an operator would.
src=''
for n in "${sources[@]}"; do
	[ -n "$(sql "$n.db" "SELECT 1 FROM orders WHERE id = $id")" ] && src=$n
done
sql n4.db "ATTACH '$src.db' AS s; UPDATE orders SET amount =
	(SELECT amount FROM s.orders WHERE id = $id) WHERE id = $id"
run_reshard 0 "amount: with the copy put right, run goes on" run plan.cfg --yes
complete amount

section null-note
until_final_catch_up null-note
id=$(one_row n4.db "SELECT min(id) FROM orders WHERE note = ''") ||
	bail "$section_name: no row to change"
sql n4.db "UPDATE orders SET note = NULL WHERE id = $id"
run_reshard 3 "null-note: '' made NULL on the copy: run stops in verify (exit 3)" \
	run plan.cfg --yes
stopped null-note "(id = '$id') differs on n4.orders"

section blob
until_final_catch_up blob
key=$(one_row n4.db "SELECT order_id || '/' || line FROM items
	WHERE length(sku) > 2 ORDER BY order_id, line LIMIT 1") ||
	bail "$section_name: no row to change"
sql n4.db "UPDATE items SET sku = CAST(sku || x'00' AS BLOB)
	WHERE order_id = ${key%/*} AND line = ${key#*/}"
run_reshard 3 "blob: a byte added to a copied sku: run stops in verify (exit 3)" \
	run plan.cfg --yes
stopped blob "(order_id = '${key%/*}', line = '${key#*/}') differs on n4.items"

section missing-copy
until_final_catch_up missing-copy
key=$(one_row n4.db "SELECT order_id || '/' || line FROM items
	ORDER BY order_id DESC, line DESC LIMIT 1") ||
	bail "$section_name: no row to change"
sql n4.db "DELETE FROM items WHERE order_id = ${key%/*} AND line = ${key#*/}"
n4_rows=$(count_rows n4)
run_reshard 3 "missing-copy: a copied item deleted: run stops in verify (exit 3)" \
	run plan.cfg --yes
stopped missing-copy "(order_id = '${key%/*}', line = '${key#*/}') missing on n4.items"

section verify-command
fresh verify-command
run_reshard 0 "verify-command: run --until capture" \
	run plan.cfg --until capture --yes
run_reshard 2 "verify-command: before the copy, verify refuses (exit 2)" \
	verify plan.cfg
has err "until step copy is done" "verify-command: it says the copy is not made"
run_reshard 0 "verify-command: run --until final-catch-up" \
	run plan.cfg --until final-catch-up --yes
id=$(one_row n4.db "SELECT id FROM orders ORDER BY id LIMIT 1 OFFSET 5") &&
	key=$(one_row n4.db "SELECT order_id || '/' || line FROM items
		ORDER BY order_id, line LIMIT 1") ||
	bail "$section_name: no row to change"
sql n4.db "UPDATE orders SET note = 'tampered' WHERE id = $id;
	DELETE FROM items WHERE order_id = ${key%/*} AND line = ${key#*/};
	INSERT INTO orders SELECT 1000000000, customer, 1, 'extra'
		FROM orders WHERE id = $id"
sums=$(sha256sum ./*.db)
run_reshard 3 "verify-command: verify exits 3" verify plan.cfg --format json
equals "$(python3 -S -c '
import json, sys
for x in json.load(open(sys.argv[1]))["differences"]:
    print(x["kind"], x["owner"], json.dumps(x["primary_key"]),
          json.dumps(x["columns"]))' out | sort)" \
	"$(printf '%s\n' "differs n4.orders [\"$id\"] [\"note\"]" \
		"extra n4.orders [\"1000000000\"] null" \
		"missing n4.items [\"${key%/*}\", \"${key#*/}\"] null" | sort)" \
	"verify-command: exactly the changed order, the extra one, the missing item"
equals "$(sha256sum ./*.db)" "$sums" "verify-command: no shard file changed"

section verify-fenced
# reshard verify while the run's fence has been up longer than
# fence_timeout_seconds: the command is not part of the cutover and
# never gives it back.
fresh verify-fenced ring "fence_timeout_seconds = 1;"
run_reshard 0 "verify-fenced: run --until final-catch-up" \
	run plan.cfg --until final-catch-up --yes
sleep 1.2
run_reshard 0 "verify-fenced: verify past fence_timeout_seconds (exit 0)" \
	verify plan.cfg

section older-journal
# A run begun by a release without pre-verify, resumed past the fence
# (its journal has no pre-verify step): pre-verify is skipped, nothing is
# given back, verify compares every row, and the run ends exact.
fresh older-journal ring "fence_timeout_seconds = 1;"
run_reshard 0 "older-journal: run --until final-catch-up" \
	run plan.cfg --until final-catch-up --yes
sql "$plan_name.journal" "DELETE FROM chunks WHERE step = 'pre-verify';
	DELETE FROM steps WHERE name = 'pre-verify';
	DELETE FROM facts WHERE name = 'pre_verify'"
# ... and no change capture on the target, which only pre-verify puts up.
sql n4.db "$(sql n4.db "SELECT group_concat('DROP TRIGGER \"' || name || '\"', '; ')
	FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'reshard_capture%'");
	DROP TABLE reshard_chg_orders; DROP TABLE reshard_chg_items"
sleep 1.2
run_reshard 0 "older-journal: the run resumes and ends (exit 0)" run plan.cfg --yes
has err "the fence is up already" "older-journal: pre-verify says it is too late for it"
complete older-journal

section while-copied
# One uninterrupted run: a trigger on n4 changes one moving order's note
# as the copy writes it.
fresh while-copied
id=$(one_row "$root/template-$kind/master.db" "SELECT min(id) FROM orders
	JOIN routes ON key = customer WHERE moves") ||
	bail "$section_name: no row to change"
sql n4.db "CREATE TRIGGER tamper AFTER INSERT ON orders WHEN NEW.id = $id
	BEGIN UPDATE orders SET note = 'tampered' WHERE id = NEW.id; END"
actual_rows "${sources[@]}" >sources.before
run_reshard 3 "while-copied: run stops in verify (exit 3)" run plan.cfg --yes
n4_rows=$(count_rows n4)
stopped while-copied "(id = '$id') differs on n4.orders"
equals "$(sql n4.db "SELECT note FROM orders WHERE id = $id")" tampered \
	"while-copied: the copy is the tampered one"
sql n4.db "DROP TRIGGER tamper"
for n in "${sources[@]}"; do
	[ -n "$(sql "$n.db" "SELECT 1 FROM orders WHERE id = $id")" ] && src=$n
done
sql n4.db "ATTACH '$src.db' AS s; UPDATE orders SET note =
	(SELECT note FROM s.orders WHERE id = $id) WHERE id = $id"
run_reshard 0 "while-copied: with the copy put right, run goes on" run plan.cfg --yes
complete while-copied

section settle-cut
# A copy tampered before pre-verify, whose change no log holds (n4's
# capture starts in pre-verify): pre-verify's walk records it; then the
# process dies as a settling round starts comparing again.  The
# difference must still be on record, and verify must stop the run.
fresh settle-cut
run_reshard 0 "settle-cut: run --until catch-up" run plan.cfg --until catch-up --yes
id=$(one_row n4.db "SELECT id FROM orders ORDER BY id LIMIT 1 OFFSET 5") ||
	bail "$section_name: no row to change"
sql n4.db "UPDATE orders SET note = 'tampered' WHERE id = $id"
actual_rows "${sources[@]}" >sources.before
n4_rows=$(count_rows n4)
RESHARD_FAULT=mid-settle:pre-verify run_reshard 99 \
	"settle-cut: the process dies as a settling round compares again" run plan.cfg --yes
equals "$(sql "$plan_name.journal" "SELECT pass || ' ' || kind FROM differences
	WHERE pk = '[\"$id\"]'")" "pre-verify differs" \
	"settle-cut: the difference is still on record"
run_reshard 3 "settle-cut: run stops in verify (exit 3)" run plan.cfg --yes
stopped settle-cut "(id = '$id') differs on n4.orders"

finish
