#!/usr/bin/env bash
# isolate: tenant isolation with directory overrides.  The ring of n0 … n3
# stays as it is; `to` pins two customers (one with an emoji in its key) to
# the new shard n4 with an overrides file.  The dry-run moves exactly those
# customers' rows (counted by the oracle, tests/oracle.py with the pins,
# no reshard code); after `run` every row is once on its owner under `to`,
# all columns unchanged; `route` names the rule that decided each owner;
# the published routing file carries the overrides and, loaded as a plan's
# map, routes every key as `to` does.  Then the way back: a plan whose
# `from` pins the customers to n4 and whose `to` does not is refused by a
# split (it would move rows between two sources) but dry-runs, moving
# exactly the same rows back.
. "$(dirname "$0")/lib.sh"
begin "$@"

master() { echo "$root/template-$kind/master.db"; }

section isolate
fresh isolate isolate
want=$(sql "$(master)" "SELECT
	(SELECT count(*) FROM orders WHERE customer IN ('cust-00042', '🙂 19'))
	+ (SELECT count(*) FROM items WHERE customer IN ('cust-00042', '🙂 19'))")
[ "$want" -gt 2 ] || not_ok "isolate: the pinned customers have rows ($want)"
moving=$(sql "$(master)" "SELECT
	(SELECT count(*) FROM orders JOIN routes ON key = customer WHERE moves)
	+ (SELECT count(*) FROM items JOIN routes ON key = customer WHERE moves)")
equals "$moving" "$want" "isolate: the oracle moves only the pinned customers' $want rows"
run_reshard 0 "isolate: dry-run" dry-run plan.cfg --summary --format json
got=$(sql :memory: "SELECT json_extract(readfile('$dir/out'), '\$.moved')")
equals "$got" "$want" "isolate: dry-run moves exactly the pinned customers' rows"
run_reshard 0 "isolate: dry-run movers" dry-run plan.cfg
got=$(cut -f1 "$dir/out" | sort -u | tr '\n' '|')
equals "$got" "cust-00042|🙂 19|" "isolate: the movers are the pinned customers'"

run_reshard 0 "isolate: route" route plan.cfg cust-00042 cust-00043
got=$(cut -f1,3,4,6,7 "$dir/out" | tr '\t\n' ' |')
equals "$got" "cust-00042 n4 moves map:ring override:big-customers.csv:3|cust-00043 $(owners cust-00043 | cut -d' ' -f2) stays map:ring map:ring|" \
	"isolate: route names the override's line, or the map"

run_reshard 0 "isolate: run --yes" run plan.cfg --yes
complete isolate
# Few chunks have movers: each chunk that wrote none still ends after the
# write left in flight before it, and every chunk of the copy is done.
IFS='|' read -r n distinct done <<<"$(journal_chunks copy)"
equals "$n/$distinct/$done" "$n/$n/$n" "isolate: every copy chunk recorded done, once"
holds_oracle_rows isolate
routing_routes_as_to isolate
grep -q 'overrides = (' map.txt || not_ok "isolate: routing.cfg carries the overrides"

# The way back, for one of them: from pins both customers to n4, to pins
# only cust-00042 (inline), so the other goes back to its ring owner.
section back
emoji_rows=$(sql "$(master)" "SELECT
	(SELECT count(*) FROM orders WHERE customer = '🙂 19')
	+ (SELECT count(*) FROM items WHERE customer = '🙂 19')")
plan_from=$(cat map.txt) plan_to='{ map = "ring"; vnodes = 100; nodes = ["n0", "n1", "n2", "n3"];
    overrides = ( { key = "cust-00042"; node = "n4"; } ); }' \
	plan_name=back write_plan back.cfg
run_reshard 0 "back: dry-run" dry-run back.cfg --summary --format json
got=$(sql :memory: "SELECT json_extract(readfile('$dir/out'), '\$.moved')")
equals "$got" "$emoji_rows" "back: dry-run moves the unpinned customer's rows back"
# A split copies onto new shards only: the way back is refused in
# preflight, naming the row and the source it would move to, and nothing
# changes.
sum_before=$(for n in "${nodes[@]}"; do count_rows "$n"; done | tr '\n' ' ')
run_reshard 2 "back: a split refuses rows moving between sources" run back.cfg --yes
has "$dir/err" "would move to $(owners '🙂 19' | cut -d' ' -f1), a source" \
	"back: preflight names the row and the source it would reach"
equals "$(for n in "${nodes[@]}"; do count_rows "$n"; done | tr '\n' ' ')" "$sum_before" \
	"back: no shard changed"
finish
