#!/usr/bin/env bash
# null_key: a source whose shard key column takes NULL, and an application
# that inserts an order without a customer after the copy, then gives it
# one that moves to n4.  The change log then holds the order with no key
# (the insert) and an update whose old key is NULL.  Such a row was never
# copied, so those entries delete nothing, and catch-up places the row by
# the key it has when re-read.  Before, catch-up failed on the entry's NULL
# key on every attempt (exit 1, for good).  The run ends exact against the
# oracle, the order on n4.
. "$(dirname "$0")/lib.sh"
begin "$@"

section null-key
fresh null-key
own_master
# n0's orders with a customer that may be NULL (SQLite cannot drop a NOT
# NULL: the table is made again, its rows kept).
sql n0.db "CREATE TABLE o2 (id INTEGER PRIMARY KEY, customer TEXT,
		amount DECIMAL(12,2), note TEXT);
	INSERT INTO o2 SELECT * FROM orders; DROP TABLE orders;
	ALTER TABLE o2 RENAME TO orders"
run_reshard 0 "null-key: run --until copy" run plan.cfg --until copy --yes

# The first customer (by key) of n0 that moves to n4, by the oracle.
mover="(SELECT key FROM m.routes WHERE from_owner = 'n0' AND to_owner = 'n4'
	ORDER BY key LIMIT 1)"
last=$(sql master.db "SELECT max(id) FROM orders")
[ -n "$last" ] || bail "null-key: no orders in the oracle"
id=$((last + 1))
sql n0.db "INSERT INTO orders VALUES ($id, NULL, 1.5, 'no customer yet')"
sql n0.db "ATTACH '$dir/master.db' AS m;
	UPDATE orders SET customer = $mover WHERE id = $id"
sql :memory: "ATTACH '$dir/master.db' AS m;
	INSERT INTO m.orders VALUES ($id, $mover, 1.5, 'no customer yet')"
equals "$(sql n0.db "SELECT count(*) FROM orders WHERE id = $id AND customer IS NOT NULL")" 1 \
	"null-key: order $id has its customer on n0"
# The insert, and the update's old key: two entries without a customer.
equals "$(sql n0.db "SELECT count(*) FROM reshard_chg_orders WHERE id = $id AND customer IS NULL")" 2 \
	"null-key: the change log holds order $id twice without a customer"

run_reshard 0 "null-key: the run finishes" run plan.cfg --yes
equals "$(sql n4.db "SELECT count(*) FROM orders WHERE id = $id")" 1 \
	"null-key: n4 holds order $id, placed by the customer it was given"
complete null-key

finish
