#!/usr/bin/env bash
# verify: `reshard verify PLAN` compares the rows that move with their
# copies, read-only, and records every difference.  Before the run has made
# the replicas it refuses (exit 2) and leaves no journal; after `run --until
# promote` it finds nothing on a clean copy (exit 0, as many movers compared
# as the oracle says move) and changes no shard file.  With one copy
# changed (a column NULL where its source has ''), one deleted and one row added on a new owner that
# would move there from its old owner (past the source's last key), and a
# staying row changed on the replica (not a difference: purge removes it),
# it exits 3 and lists exactly those three, as text and JSON, with status
# listing them too.  Killed after a chunk, it resumes without repeating the
# chunks done and finds the same three.  The run's own verify then stops
# (exit 3) and status names its differences; put right, the run ends
# exactly and status lists none; after publish verify refuses (exit 2).
. "$(dirname "$0")/lib.sh"
begin "$@"

# kinds: the differences of $dir/out (verify --format json), one a line:
# "kind owner pk columns", sorted.
kinds() {
	python3 -S -c '
import json, sys
d = json.load(open(sys.argv[1]))
for x in d["differences"]:
    print(x["kind"], x["owner"], json.dumps(x["primary_key"]),
          json.dumps(x["columns"]))' "$dir/$1" | sort
}

# files_sum: the SHA-256 of every shard file.
files_sum() { sha256sum db*.db | sha256sum; }

section never-run
fresh never-run
run_reshard 2 "never run: verify refuses (exit 2)" verify plan.cfg
has err "shard db2 does not exist yet" "never run: it says the replica is not made yet"
check "never run: no journal is left behind" test ! -e orders-2x.journal

section clean
fresh verify
read_owners
run_reshard 0 "run --until promote" run plan.cfg --until promote --yes
before=$(files_sum)
run_reshard 0 "a clean copy: verify finds nothing (exit 0)" \
	verify plan.cfg --format json
# Movers by the oracle: rows whose owner under `to` is another table.
movers=$(sql "$template/master.db" "SELECT count(*) FROM orders o
	JOIN routes r ON r.key = o.customer_id
	WHERE r.from_owner <> r.to_owner")
equals "$(python3 -S -c 'import json,sys; d=json.load(open(sys.argv[1]));
print(d["result"], d["movers_compared"], d["rows_read"], d["differences_total"])' out)" \
	"same $movers $n_rows 0" "clean: same, every mover compared ($movers), every row read"
equals "$(files_sum)" "$before" "clean: no shard file changed"

section differences
# Rows of db0.orders_0 by the oracle: two that move to db2, one that stays.
pick() {
	sql "$template/master.db" "SELECT o.id FROM orders o
		JOIN routes r ON r.key = o.customer_id
		WHERE r.from_owner = 'db0.orders_0' AND r.to_owner = '$1'
		ORDER BY o.id LIMIT 1 OFFSET $2"
}
changed=$(pick db2.orders_0 3) deleted=$(pick db2.orders_0 4)
staying=$(pick db0.orders_0 0)
extra_key=$(sql db0.db "SELECT customer_id FROM orders_0 WHERE id = $changed")
[ -n "$changed" ] && [ -n "$deleted" ] && [ -n "$staying" ] &&
	[ -n "$extra_key" ] || bail "differences: no rows to change"
# The changed copy holds NULL where its source holds '': the same texts
# but for NULL, which is no value, so they differ.
bypass_fence db0 orders_0 "UPDATE orders_0 SET note = '' WHERE id = $changed"
bypass_fence db2 orders_0 "
	UPDATE orders_0 SET note = NULL WHERE id = $changed;
	DELETE FROM orders_0 WHERE id = $deleted;
	INSERT INTO orders_0 VALUES (1000000, '$extra_key', 1.00, 'extra');
	UPDATE orders_0 SET note = 'stays, changed' WHERE id = $staying"
before=$(files_sum)
run_reshard 3 "differences: verify exits 3" verify plan.cfg --format json
cp out verify1.json
expected=$(printf '%s\n' \
	"differs db2.orders_0 [\"$changed\"] [\"note\"]" \
	"missing db2.orders_0 [\"$deleted\"] null" \
	"extra db2.orders_0 [\"1000000\"] null" | sort)
equals "$(kinds verify1.json)" "$expected" \
	"differences: exactly the changed, the missing and the extra row"
equals "$(files_sum)" "$before" "differences: no shard file changed"
run_reshard 3 "differences: as text, exit 3" verify plan.cfg
has out "3 differences" "differences: the text counts them"
has out "differs db0.orders_0 key '$extra_key' pk [\"$changed\"] -> db2.orders_0, columns [\"note\"]" \
	"differences: the text names the row, its new owner and the column"
status_json
equals "$(jget '$.differences_total')" 3 "differences: status counts 3"
equals "$(jget '$.differences[0].pass')" verify-on-demand \
	"differences: status says the verify command found them"
"$bin" status plan.cfg >status.txt 2>&1
has status.txt "3 rows that move differ" "differences: status text lists them"
equals "$(jget '$.state')" stopped \
	"differences: status still speaks of the run (stopped after promote)"

section resume
RESHARD_FAULT=after-chunk:verify-on-demand:3 \
	run_reshard 99 "resume: verify killed after its third chunk" \
	verify plan.cfg
done_before=$(journal_chunks verify-on-demand)
run_reshard 3 "resume: verify again finds them (exit 3)" \
	verify plan.cfg --format json
has err "resuming" "resume: it resumes"
equals "$(kinds out)" "$expected" "resume: the same three differences"
IFS='|' read -r n distinct ok_chunks <<<"$(journal_chunks verify-on-demand)"
equals "$n/$distinct" "$ok_chunks/$ok_chunks" \
	"resume: each chunk once, every one done ($done_before before)"

section run
run_reshard 3 "run: the run's verify stops (exit 3)" run plan.cfg --yes
has err "nothing was purged" "run: nothing purged"
status_json
equals "$(step_field verify state)/$(step_field purge state)" failed/pending \
	"run: verify failed, purge pending"
equals "$(sql :memory: "SELECT count(*) FROM json_each(readfile('status.json'),
	'\$.differences') WHERE json_extract(value, '\$.pass') = 'verify'")" 3 \
	"run: status lists the run's three (under the fence it compares by key the rows changed since pre-verify)"
# Put right from the source, as an operator would, its '' first.
bypass_fence db0 orders_0 "
	ATTACH '$template/master.db' AS m;
	UPDATE orders_0 SET note = (SELECT note FROM m.orders
		WHERE id = $changed) WHERE id = $changed"
bypass_fence db2 orders_0 "
	ATTACH 'db0.db' AS s;
	UPDATE orders_0 SET note = (SELECT note FROM s.orders_0
		WHERE id = $changed) WHERE id = $changed;
	INSERT INTO orders_0 SELECT * FROM s.orders_0 WHERE id = $deleted;
	DELETE FROM orders_0 WHERE id = 1000000"
run_reshard 0 "run: put right, the run goes on" run plan.cfg --yes
complete run
equals "$(jget '$.differences_total')" 0 "run: status lists no difference"
run_reshard 2 "after publish: verify refuses (exit 2)" verify plan.cfg
has err "step publish of run orders-2x has begun" \
	"after publish: it says why"

finish
