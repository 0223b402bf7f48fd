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
holds_oracle_rows logical
routing_routes_as_to logical
grep -q 'shift = 52; bits = 12; assign' routed.cfg ||
	not_ok "logical: the routing file's map went into routed.cfg"
finish
