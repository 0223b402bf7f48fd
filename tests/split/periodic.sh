#!/usr/bin/env bash
# periodic: a map whose period (2^23: logical shards in bits 10-22) is too
# long for the pair map to list which owners send rows to which.  Verify
# then works the pairs out from the points of one period, so that a row
# on n4 that no source sends there is found even in a table where n0, its
# source, has no row at all (an empty chunk has no mover to point at n4),
# and the recheck under the fence compares only the keys that changed.
. "$(dirname "$0")/lib.sh"
begin "$@"

section periodic
fresh periodic periodic
sql n0.db "DELETE FROM items"
own_master
sql master.db "DELETE FROM items WHERE customer IN (SELECT key FROM routes
	WHERE from_owner = 'n0')"
run_reshard 0 "periodic: run --until final-catch-up" run plan.cfg \
	--until final-catch-up --yes
key=$(sql n4.db "SELECT customer FROM orders LIMIT 1")
[ -n "$key" ] || bail "periodic: no order moved to n4"
sql n4.db "INSERT INTO items VALUES (999999999, 0, '$key', x'00', 1)"
run_reshard 3 "periodic: reshard verify finds the extra item (exit 3)" \
	verify plan.cfg
has err "extra" "periodic: it is called extra"
run_reshard 3 "periodic: run stops in verify (exit 3)" run plan.cfg --yes
has err "(order_id = '999999999', line = '0') is extra on n4.items" \
	"periodic: the message names the extra item"
has err "verify: compares again only the rows changed since pre-verify" \
	"periodic: under the fence, verify compares only what changed"
sql n4.db "DELETE FROM items WHERE order_id = 999999999"
run_reshard 0 "periodic: without it, the run ends" run plan.cfg --yes
final_rows "periodic: every row once, on its owner under to, unchanged"

finish
