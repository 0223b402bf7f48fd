#!/usr/bin/env bash
# verify_layout: verify judges a new owner's row by its own shard key,
# and its columns by name.  An order put on n4 with the primary key of an
# order that stays on its source, under a customer that moves from that
# source to n4, before pre-verify: `reshard verify` lists it as extra and
# nothing else (exit 3, no shard file changed), `run` stops in verify
# (exit 3) naming it, nothing published or purged; deleted by hand, the
# run ends exact.  n4's tables with their columns in another order than
# the sources': `reshard verify` finds nothing (exit 0), and the run,
# whose verify compares again by key an order n4 wrote again under the
# fence, ends exact; a copied amount changed on such an n4 is still
# found, by `reshard verify` (that order, column amount, exit 3) and by
# the run's verify (exit 3, nothing purged).
. "$(dirname "$0")/lib.sh"
begin "$@"

# one_row DB SQL: the single value SQL selects on DB (fails on none or more).
one_row() {
	local got
	got=$(sql "$1" "$2")
	[ -n "$got" ] && [ "$(wc -l <<<"$got")" -eq 1 ] || return 1
	echo "$got"
}

# differences: "KIND OWNER PK COLUMNS" of each difference in the JSON of
# `reshard verify --format json` ($dir/out), sorted.
differences() {
	python3 -S -c '
import json, sys
for x in json.load(open(sys.argv[1]))["differences"]:
    print(x["kind"], x["owner"], json.dumps(x["primary_key"]),
          json.dumps(x["columns"]))' out | sort
}

section same-id
# A staying order of n0 and a customer that moves from n0 to n4, by the
# oracle's routes; the order is put on n4 under that customer after
# catch-up, so that only pre-verify's walk can see it (n4 logs no change
# before pre-verify).
fresh same-id
master=$root/template-$kind/master.db
customer=$(one_row "$master" "SELECT min(key) FROM routes
	WHERE from_owner = 'n0' AND to_owner = 'n4'") ||
	bail "$section_name: no customer moves from n0 to n4"
id=$(one_row "$master" "SELECT min(id) FROM orders JOIN routes
	ON key = customer WHERE from_owner = 'n0' AND NOT moves") ||
	bail "$section_name: no order stays on n0"
run_reshard 0 "same-id: run --until catch-up" run plan.cfg --until catch-up --yes
sql n4.db "INSERT INTO orders VALUES ($id, '${customer//\'/\'\'}', 1, 'extra')"
sums=$(sha256sum ./*.db)
run_reshard 3 "same-id: verify exits 3" verify plan.cfg --format json
equals "$(differences)" "extra n4.orders [\"$id\"] null" \
	"same-id: verify lists exactly the order on n4 as extra"
equals "$(sha256sum ./*.db)" "$sums" "same-id: no shard file changed"
actual_rows "${sources[@]}" >sources.before
run_reshard 3 "same-id: run stops in verify (exit 3)" run plan.cfg --yes
stopped same-id "(id = '$id') is extra on n4.orders"
equals "$(sql n0.db "SELECT customer FROM orders WHERE id = $id")/$(sql n4.db \
	"SELECT customer FROM orders WHERE id = $id")" "$(sql "$master" \
	"SELECT customer FROM orders WHERE id = $id")/$customer" \
	"same-id: n0 and n4 still hold their order $id"
sql n4.db "DELETE FROM orders WHERE id = $id"
run_reshard 0 "same-id: with the order deleted on n4, run goes on" run plan.cfg --yes
complete same-id

# reorder: make n4's tables hold the sources' columns in another order
# (the primary key the same).
reorder() {
	sql n4.db "DROP TABLE orders; DROP TABLE items;
CREATE TABLE orders (note TEXT, amount DECIMAL(12,2),
                     customer TEXT NOT NULL, id INTEGER PRIMARY KEY);
CREATE TABLE items (qty INTEGER, sku BLOB, customer TEXT NOT NULL,
                    line INTEGER NOT NULL, order_id INTEGER NOT NULL,
                    PRIMARY KEY (order_id, line))"
}

section reordered
fresh reordered
reorder
run_reshard 0 "reordered: run --until final-catch-up" \
	run plan.cfg --until final-catch-up --yes
copied_rows "reordered: every row on its source, every mover copied to n4"
run_reshard 0 "reordered: verify finds nothing (exit 0)" verify plan.cfg
# A copy written again (the same values) under the fence: its key in n4's
# change log, so that the run's verify compares it again by key.
sql n4.db "UPDATE orders SET note = note WHERE id = (SELECT min(id) FROM orders)"
equals "$(sql n4.db "SELECT count(*) FROM reshard_chg_orders")" 1 \
	"reordered: n4 logged the order written again"
run_reshard 0 "reordered: run (exit 0)" run plan.cfg --yes
has err "verify: 1 rows" "reordered: the run's verify compared that order again"
complete reordered

section reordered-tamper
fresh reordered-tamper
reorder
run_reshard 0 "reordered-tamper: run --until final-catch-up" \
	run plan.cfg --until final-catch-up --yes
id=$(one_row n4.db "SELECT id FROM orders WHERE amount IS NOT NULL
	ORDER BY id LIMIT 1 OFFSET 10") ||
	bail "$section_name: no row to change"
sql n4.db "UPDATE orders SET amount = amount + 0.01 WHERE id = $id"
run_reshard 3 "reordered-tamper: verify exits 3" verify plan.cfg --format json
equals "$(differences)" "differs n4.orders [\"$id\"] [\"amount\"]" \
	"reordered-tamper: verify lists exactly the changed order, column amount"
actual_rows "${sources[@]}" >sources.before
run_reshard 3 "reordered-tamper: run stops in verify (exit 3)" run plan.cfg --yes
stopped reordered-tamper "(id = '$id') differs on n4.orders"

finish
