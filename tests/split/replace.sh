#!/usr/bin/env bash
# replace: SQLite's INSERT OR REPLACE during a split.  It deletes the row
# with the same primary key without firing its delete trigger (unless the
# writer's connection turns recursive_triggers on), so the capture logged
# only the new row: an order copied to n4 and replaced on its source with
# a customer that stays there kept its stale copy on n4 (the row ended on
# two shards).  The capture now logs the row a REPLACE removes before the
# insert.  Also: a replace that gives an order of n1 a customer moving to
# n4 (the new row reaches n4), and an INSERT OR IGNORE that changes
# nothing.  The run ends exact against the oracle.
. "$(dirname "$0")/lib.sh"
begin "$@"

section replace
fresh replace
own_master
run_reshard 0 "replace: run --until copy" run plan.cfg --until copy --yes

# An order of n0 that moves to n4, copied there by now.
moved=$(sql master.db "SELECT id FROM orders JOIN routes ON key = customer
	WHERE from_owner = 'n0' AND to_owner = 'n4' ORDER BY id LIMIT 1")
[ -n "$moved" ] || bail "replace: no order of n0 moves to n4"
equals "$(sql n4.db "SELECT count(*) FROM orders WHERE id = $moved")" 1 \
	"replace: n4 holds the copy of order $moved"
# An order of n1 that stays on n1.
staying=$(sql master.db "SELECT id FROM orders JOIN routes ON key = customer
	WHERE from_owner = 'n1' AND to_owner = 'n1' ORDER BY id LIMIT 1")
[ -n "$staying" ] || bail "replace: no order of n1 stays"

# replace_on NODE ID WHERE: INSERT OR REPLACE order ID on NODE and in the
# oracle, with the first customer (by key) of the routes matching WHERE,
# its amount and note unchanged.
replace_on() {
	local stmt="INSERT OR REPLACE INTO orders (id, customer, amount, note)
		SELECT id, (SELECT key FROM m.routes WHERE $3 ORDER BY key LIMIT 1),
		amount, note FROM m.orders WHERE id = $2"
	sql "$1.db" "ATTACH '$dir/master.db' AS m; $stmt" &&
		sql :memory: "ATTACH '$dir/master.db' AS m; $stmt"
}
replace_on n0 "$moved" "from_owner = 'n0' AND to_owner = 'n0'" ||
	bail "replace: replacing order $moved"
replace_on n1 "$staying" "from_owner = 'n1' AND to_owner = 'n4'" ||
	bail "replace: replacing order $staying"
equals "$(sql n0.db "SELECT count(*) FROM orders WHERE id = $moved")" 1 \
	"replace: order $moved replaced in place on n0"
sql n0.db "INSERT OR IGNORE INTO orders (id, customer, amount, note)
	SELECT id, customer, amount, 'ignored' FROM orders WHERE id = $moved"
equals "$(sql n0.db "SELECT count(*) FROM orders WHERE id = $moved AND note = 'ignored'")" 0 \
	"replace: the INSERT OR IGNORE changed nothing"

run_reshard 0 "replace: the run finishes" run plan.cfg --yes
equals "$(sql n4.db "SELECT count(*) FROM orders WHERE id = $moved")" 0 \
	"replace: n4 no longer holds order $moved, replaced with a customer of n0"
equals "$(sql n4.db "SELECT count(*) FROM orders WHERE id = $staying")" 1 \
	"replace: n4 holds order $staying, replaced with a customer of n4"
complete replace

finish
