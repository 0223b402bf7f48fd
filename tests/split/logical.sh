#!/usr/bin/env bash
# logical: a split of a logical map, whose 4096 logical shards are the top
# 12 bits of the point, a quarter on each of four sources: a range of
# logical shards of n0, one of n2 and one of n3 move to n4, n1 keeps its
# own (a split copies onto shards new in `to` only; moves between the
# sources themselves are the dry-run's, tests/test_dryrun.c).
# dry-run's movers are the oracle's; after `run` every row is once on its
# owner under `to` per the oracle (tests/oracle.py, no reshard code), all
# columns unchanged, and the rows moved between each pair of shards are
# exactly the oracle's; the published routing file's map loads as a plan's
# map and routes every key as `to` does.
. "$(dirname "$0")/lib.sh"
begin "$@"

master() { echo "$root/template-$kind/master.db"; }

section logical
fresh logical logical
want=$(sql "$(master)" "SELECT
	(SELECT count(*) FROM orders JOIN routes ON key = customer WHERE moves)
	+ (SELECT count(*) FROM items JOIN routes ON key = customer WHERE moves)")
run_reshard 0 "logical: dry-run" dry-run plan.cfg --summary --format json
got=$(sql :memory: "SELECT json_extract(readfile('$dir/out'), '\$.moved')")
equals "$got" "$want" "logical: dry-run moves the oracle's $want rows"
# The oracle's flows, as pairs of shards: exactly these move.
flows=$(sql "$(master)" "SELECT group_concat(f, ' ') FROM (SELECT DISTINCT
	from_owner || '>' || to_owner AS f FROM routes WHERE moves ORDER BY f)")
equals "$flows" "n0>n4 n2>n4 n3>n4" "logical: the oracle moves ranges of n0, n2 and n3 to n4"
got=$(sql :memory: "SELECT group_concat(f, ' ') FROM (SELECT
	json_extract(value, '\$.from') || '>' || json_extract(value, '\$.to') AS f
	FROM json_each(json_extract(readfile('$dir/out'), '\$.flows')) ORDER BY f)")
equals "$got" "$flows" "logical: dry-run's flows are the oracle's"

run_reshard 0 "logical: run --yes" run plan.cfg --yes
complete logical
# Rows per shard after the run, against the oracle's count under to.
for n in "${nodes[@]}"; do
	expect=$(sql "$(master)" "SELECT
		(SELECT count(*) FROM orders JOIN routes ON key = customer WHERE to_owner = '$n')
		|| '/' || (SELECT count(*) FROM items JOIN routes ON key = customer
		WHERE to_owner = '$n')")
	equals "$(count_rows "$n")" "$expect" "logical: $n holds the oracle's orders/items"
done

# The routing file's map is a plan's map, and it routes as `to` does.
map_line=$(sed -n 's/^map = \(.*\);$/\1/p' routing.cfg)
[ -n "$map_line" ] || not_ok "logical: routing.cfg has a map line"
plan_from=$map_line plan_name=routed write_plan routed.cfg
grep -q 'shift = 52; bits = 12; assign' routed.cfg ||
	not_ok "logical: the routing file's map went into routed.cfg"
sql "$(master)" "SELECT DISTINCT key FROM routes" >keys.txt
run_reshard 0 "logical: the routing file's map loads as a plan's" \
	dry-run routed.cfg --keys keys.txt --summary --format json
got=$(sql :memory: "SELECT json_extract(readfile('$dir/out'), '\$.moved') || '/' ||
	json_extract(readfile('$dir/out'), '\$.keys')")
equals "$got" "0/$(wc -l <keys.txt)" "logical: the routing file routes every key as to does"
finish
