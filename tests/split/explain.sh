#!/usr/bin/env bash
# explain: `reshard explain` of the split (a ring of four growing to five)
# lists its eleven steps in order, the copy from from's nodes onto the new
# shard n4, the rows and movers of both tables as the oracle counts them,
# n4's empty tables, and writes nothing: no journal, no change log, every
# shard file byte-identical.  A target holding a row is said to be refused
# by preflight; a target file that is not there fails with exit 1.
. "$(dirname "$0")/lib.sh"
begin "$@"

# The plan's own node lists, read from plan.cfg (not from reshard).
map_nodes() { sed -n "s/^$1 *= .*nodes = \[\(.*\)\].*/\1/p" plan.cfg | tr -d '",' ; }
# xget EXPR: a Python expression over d, the explain JSON in $dir/out.
xget() {
	"$python" -S -c 'import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(" ".join(map(str, v)) if isinstance(v, list) else v)' "$dir/out" "$1"
}
step_on() { xget "[s['shards'] for s in d['steps'] if s['name'] == '$1'][0]"; }

section explain
fresh explain ring
from_nodes=$(map_nodes from) to_nodes=$(map_nodes to)
new_nodes=$(comm -13 <(tr ' ' '\n' <<<"$from_nodes" | sort) \
	<(tr ' ' '\n' <<<"$to_nodes" | sort) | paste -sd' ')
sha256sum n?.db >sums
run_reshard 0 "explain: text (exit 0)" explain plan.cfg
cp out text.out
equals "$(sed -n 's/^ *[0-9]*\. \([a-z-]*\) .*/\1/p' text.out | paste -sd' ')" \
	"${steps[*]}" "explain: text lists the split's steps in order"
for n in $to_nodes; do
	has text.out "  $n " "explain: text names shard $n"
done
has text.out "from fence until publish begins" "explain: fence timeout part ends at publish"
has text.out "not known beforehand" "explain: catch-up's rows not known beforehand"

run_reshard 0 "explain: --format json (exit 0)" explain plan.cfg --format json
equals "$(xget '[s["name"] for s in d["steps"]]')" "${steps[*]}" \
	"explain: JSON steps in order"
equals "$(xget '[s["name"] for s in d["shards"]]')" "$to_nodes" \
	"explain: JSON shards are the plan's"
equals "$(xget '[s["name"] for s in d["shards"] if "target" in s["roles"]]')" \
	"$new_nodes" "explain: the new shard is the target"
equals "$(step_on copy)" "$to_nodes" "explain: copy from the sources onto the target"
equals "$(step_on fence)" "$from_nodes" "explain: fence on from's nodes"
equals "$(xget '[s["name"] for s in d["steps"] if s["fenced"]]')" \
	"fence final-catch-up verify publish unfence" "explain: the fenced steps"
equals "$(xget 'd["abort_until"]')/$(xget 'd["irreversible_from"]')" "publish/publish" \
	"explain: abort until publish"
total=$(sql "$root/template-$kind/master.db" \
	"SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM items)")
moving=$(sql "$root/template-$kind/master.db" "SELECT
	(SELECT count(*) FROM orders JOIN routes ON key = customer WHERE moves) +
	(SELECT count(*) FROM items JOIN routes ON key = customer WHERE moves)")
equals "$(xget 'd["rows"]["total"]')" "$total" "explain: rows of both tables counted"
equals "$(xget 'd["rows"]["moving"]')" "$moving" "explain: movers as the oracle counts them"
equals "$(xget '[s["rows"] for s in d["steps"] if s["name"] == "copy"]')" "$moving" \
	"explain: copy handles the movers"
equals "$(xget '[s["moving_in"] for s in d["shards"] if "target" in s["roles"]]')" \
	"$moving" "explain: the target takes every mover"
check "explain: no journal made" test ! -e "$plan_name.journal"
check "explain: shard files byte-identical" sha256sum --quiet -c sums
check "explain: no change log anywhere" test -z "$(for n in "${nodes[@]}"; do
	sql "$n.db" "SELECT name FROM sqlite_schema WHERE name LIKE 'reshard%'"; done)"

section refusals
fresh refusals ring
sql n4.db "INSERT INTO orders VALUES (999999, 'x', NULL, NULL)"
sha256sum n?.db >sums
run_reshard 0 "refusals: explain with a row on the target (exit 0)" explain plan.cfg
has out "preflight will refuse a target that is not empty" \
	"refusals: the non-empty target is named"
check "refusals: shard files byte-identical" sha256sum --quiet -c sums
rm n4.db
run_reshard 1 "refusals: a target file missing exits 1" explain plan.cfg
has err "shard n4" "refusals: the message names the shard"
check "refusals: no journal made" test ! -e "$plan_name.journal"
check "refusals: the target file not made" test ! -e n4.db

finish
