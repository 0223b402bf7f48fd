#!/usr/bin/env bash
# explain: `reshard explain` of the doubling lists its ten steps in order,
# on the shards the plan names (the fence on from's nodes, catch-up and
# promote on their replicas), the rows and movers the oracle counts, and
# writes nothing: no journal, no replica file, every shard file
# byte-identical.  With a journal (a run stopped after catch-up) it marks
# the steps done and leaves the journal as it was.  A bad plan exits 2, a
# shard that cannot be opened 1.  status of the plan never run points to it.
. "$(dirname "$0")/lib.sh"
begin "$@"

# The plan's own lists, read from plan.cfg (not from reshard).
plan_shards() { sed -n 's/.*name = "\(db[0-9]\)"; url.*/\1/p' plan.cfg | paste -sd' '; }
plan_sources() { sed -n 's/.*name = "\(db[0-9]\)";.*replica = .*/\1/p' plan.cfg | paste -sd' '; }
plan_replicas() { sed -n 's/.*replica = "\(db[0-9]\)".*/\1/p' plan.cfg | paste -sd' '; }
# xget EXPR: a Python expression over d, the explain JSON in $dir/out.
xget() {
	python3 -S -c 'import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(" ".join(map(str, v)) if isinstance(v, list) else v)' "$dir/out" "$1"
}
step_on() { xget "[s['shards'] for s in d['steps'] if s['name'] == '$1'][0]"; }

section explain
fresh explain
sha256sum db0.db db1.db >sums
run_reshard 0 "explain: text (exit 0)" explain plan.cfg
cp out text.out
equals "$(sed -n 's/^ *[0-9]*\. \([a-z-]*\) .*/\1/p' text.out | paste -sd' ')" \
	"${steps[*]}" "explain: text lists the doubling's steps in order"
for s in $(plan_shards); do
	has text.out "  $s " "explain: text names shard $s"
done
has text.out "does not exist yet: made by the run" "explain: replicas said to be made by the run"
has text.out "fence: whole tables" "explain: the fence of SQLite shards is whole tables"
has text.out "from fence until promote begins" "explain: fence timeout part ends at promote"
has text.out "undoes the run until step publish begins" "explain: abort works until publish"
has text.out "writes fenced for about" "explain: fenced time summed"

run_reshard 0 "explain: --format json (exit 0)" explain plan.cfg --format json
equals "$(xget '[s["name"] for s in d["steps"]]')" \
	"${steps[*]}" "explain: JSON steps in order"
equals "$(xget '[s["name"] for s in d["shards"]]')" "$(plan_shards)" \
	"explain: JSON shards are the plan's"
equals "$(step_on fence)" "$(plan_sources)" "explain: fence on from's nodes"
equals "$(step_on unfence)" "$(plan_sources)" "explain: unfence on from's nodes"
equals "$(step_on catch-up)" "$(plan_replicas)" "explain: catch-up on the replicas"
equals "$(step_on promote)" "$(plan_replicas)" "explain: promote on the replicas"
equals "$(xget 'd["rows"]["total"]')" "$n_rows" "explain: rows counted exactly"
moving=$(sql "$template/master.db" "SELECT count(*) FROM orders o
	JOIN routes r ON r.key = o.customer_id WHERE r.moves = 'moves'")
equals "$(xget 'd["rows"]["moving"]')" "$moving" "explain: movers as the oracle counts them"
equals "$(xget '[s["name"] for s in d["steps"] if s["fenced"]]')" \
	"fence catch-up promote verify publish unfence" "explain: the fenced steps"
equals "$(xget '[s["name"] for s in d["steps"] if s["irreversible"]]')" \
	"promote purge" "explain: the irreversible steps"
equals "$(xget 'd["abort_until"]')/$(xget 'd["irreversible_from"]')" "publish/promote" \
	"explain: abort until publish, irreversible from promote"
equals "$(xget '[s["exists"] for s in d["shards"]]')" "True True False False" \
	"explain: the replicas do not exist yet"
check "explain: every step estimated" test "$(xget 'd["total_complete"]')" = True
check "explain: no journal made" test ! -e orders-2x.journal
check "explain: no replica file made" test ! -e db2.db -a ! -e db3.db
check "explain: shard files byte-identical" sha256sum --quiet -c sums

section never-run
"$bin" status plan.cfg >status.txt 2>&1
has status.txt '`reshard explain plan.cfg` shows what it would do' \
	"never-run: status points to explain"

section journal
run_reshard 0 "journal: run --until catch-up" run plan.cfg --until catch-up --yes
sha256sum orders-2x.journal db0.db db1.db db2.db db3.db >sums
run_reshard 0 "journal: explain of a run begun (exit 0)" explain plan.cfg --format json
equals "$(xget '[s["state"] for s in d["steps"]]')" \
	"done done done done pending pending pending pending pending pending" \
	"journal: the steps done are marked"
equals "$(xget '[s["name"] for s in d["shards"] if s["fenced_now"]]')" \
	"$(plan_sources)" "journal: the sources are fenced now"
check "journal: journal and shards byte-identical" sha256sum --quiet -c sums
run_reshard 0 "journal: abort" abort plan.cfg

section refusals
fresh refusals
printf 'version = 1;\nname = "x";\n' >bad.cfg
run_reshard 2 "refusals: an invalid plan exits 2" explain bad.cfg
run_reshard 2 "refusals: an unknown option exits 2" explain plan.cfg --fromat json
sed -i 's|sqlite://db1.db|sqlite://gone/db1.db|' plan.cfg
run_reshard 1 "refusals: a source that cannot be opened exits 1" explain plan.cfg
has err "shard db1" "refusals: the message names the shard"
check "refusals: no journal made" test ! -e orders-2x.journal

finish
