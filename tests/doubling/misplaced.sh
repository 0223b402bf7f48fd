#!/usr/bin/env bash
# misplaced: a row that sits on a shard that does not own it under `from`
# is found at preflight, counted, named by shard key and primary key with
# the fix, and nothing is changed (exit 2); once it is moved, the run
# completes.  (Before, the run failed late, at verify.)  And a moved row
# that differs on its new owner is named by verify the same way: shard
# key and primary key (exit 3, nothing purged).
. "$(dirname "$0")/lib.sh"
begin "$@"

section misplaced
fresh misplaced
own_master
key=$(sql master.db "SELECT key FROM routes WHERE from_owner = 'db1.orders_0' LIMIT 1")
sql db0.db "INSERT INTO orders_0 VALUES (900001, '${key//\'/\'\'}', 3.5, 'misplaced')"
run_reshard 2 "misplaced: preflight refuses (exit 2)" run plan.cfg --yes
has err "orders_0 on db0: customer_id '$key' (id = '900001') belongs to db1.orders_0 under from" \
	"misplaced: the row is named with its owner"
has err "1 rows sit on a shard or table that does not own them" "misplaced: they are counted"
has err "Nothing was changed" "misplaced: it says nothing was changed"
status_json
equals "$(step_field preflight state)/$(step_field fence state)/$(jget '$.fenced')" failed/pending/0 \
	"misplaced: preflight failed, nothing fenced"
sql db1.db "INSERT INTO orders_0 SELECT * FROM (SELECT 900001, '${key//\'/\'\'}', 3.5, 'misplaced')"
sql db0.db "DELETE FROM orders_0 WHERE id = 900001"
sql master.db "INSERT INTO orders VALUES (900001, '${key//\'/\'\'}', 3.5, 'misplaced')"
run_reshard 0 "misplaced: after the row is moved, the run completes" run plan.cfg --yes
complete "misplaced"

section verify-differs
fresh verify-differs
run_reshard 0 "verify-differs: run --until promote" run plan.cfg --until promote --yes
read -r id key < <(sql -separator ' ' "$template/master.db" "SELECT o.id, o.customer_id
	FROM orders o JOIN routes r ON r.key = o.customer_id
	WHERE r.from_owner = 'db1.orders_1' AND r.to_owner = 'db3.orders_1'
	  AND o.customer_id GLOB 'cust-*' ORDER BY o.id LIMIT 1")
bypass_fence db3 orders_1 "UPDATE orders_1 SET note = 'tampered' WHERE id = $id"
run_reshard 3 "verify-differs: verify exits 3" run plan.cfg --yes
has err "orders_1 on db1: customer_id '$key' (id = '$id') differs on db3.orders_1" \
	"verify-differs: the row is named by shard key and primary key"
has err "nothing was purged" "verify-differs: it says nothing was purged"
status_json
equals "$(step_field verify state)/$(step_field purge state)" failed/pending \
	"verify-differs: verify failed, purge not begun"
"$bin" log plan.cfg >log.txt 2>&1
has log.txt "error verify: orders_1 on db1: customer_id '$key' (id = '$id') differs on db3.orders_1" \
	"verify-differs: the run's log keeps the difference"

finish
