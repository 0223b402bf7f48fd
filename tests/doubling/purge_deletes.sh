#!/usr/bin/env bash
# purge_deletes: purge survives ordinary application traffic after
# unfence.  A moved row the application deletes on its new owner is
# purged from the old one (the new owner's delete log proves the delete);
# a row a stale router wrote to the old owner after unfence, which its
# owner never saw, is kept and reported by shard key and primary key while
# everything else is purged; final-check fails (exit 3) naming it until it
# is dealt with, then the run finishes, counting the rows the application
# deleted in the meantime.  (Before, purge refused the whole chunk on every
# rerun and the run never ended.)
. "$(dirname "$0")/lib.sh"
begin "$@"

section purge-deletes
fresh purge-deletes
own_master
run_reshard 0 "purge-deletes: run --until unfence" run plan.cfg --until unfence --yes
# A moved row, deleted by the application on its new owner db2.
read -r gone_id < <(sql master.db "SELECT o.id FROM orders o JOIN routes r
	ON r.key = o.customer_id WHERE r.from_owner = 'db0.orders_0'
	AND r.to_owner = 'db2.orders_0' ORDER BY o.id LIMIT 1")
equals "$(sql db2.db "DELETE FROM orders_0 WHERE id = $gone_id; SELECT changes();")" 1 \
	"purge-deletes: the application deletes row $gone_id on its new owner db2"
sql master.db "DELETE FROM orders WHERE id = $gone_id"
# A row written to the old owner db0 by a router still on the old routing.
stale_key=$(sql master.db "SELECT key FROM routes WHERE from_owner = 'db0.orders_1'
	AND to_owner = 'db2.orders_1' LIMIT 1")
equals "$(sql db0.db "INSERT INTO orders_1 VALUES (800001,
	'${stale_key//\'/\'\'}', 1.25, 'stale router'); SELECT changes();")" 1 \
	"purge-deletes: a stale router writes row 800001 to the old owner db0"
run_reshard 3 "purge-deletes: run exits 3 (a row kept)" run plan.cfg --yes
has err "kept: its owner db2.orders_1 has no copy" "purge-deletes: purge names the kept row's owner"
has err "(id = '800001')" "purge-deletes: by its primary key"
has err "customer_id '$stale_key'" "purge-deletes: and its shard key"
has err "purge kept 1 of them" "purge-deletes: final-check says purge kept it"
status_json
equals "$(step_field purge state)/$(step_field final-check state)" done/failed \
	"purge-deletes: purge done, final-check failed"
equals "$(jget '$.kept_rows[0].primary_key')/$(jget '$.kept_rows[0].owner')" \
	'["800001"]/db2.orders_1' "purge-deletes: status lists the kept row"
"$bin" status plan.cfg >status.txt 2>&1
has status.txt "1 rows on shards that no longer own them" "purge-deletes: status text says so"
check "purge-deletes: row $gone_id gone from the old owner db0 too" \
	test "$(sql db0.db "SELECT count(*) FROM orders_0 WHERE id = $gone_id")" = 0
check "purge-deletes: the kept row is still on db0" \
	test "$(sql db0.db "SELECT count(*) FROM orders_1 WHERE id = 800001")" = 1
# Everything else is exactly where it belongs.
expected_rows to_owner >rows.expected
actual_rows db0 db1 db2 db3 | grep -v $'\t800001\t' >rows.actual
check "purge-deletes: every other row exact on its owner ($(wc -l <rows.actual) rows)" \
	cmp -s rows.expected rows.actual
# The operator moves the kept row to its owner; the run then finishes.
sql db2.db "ATTACH 'db0.db' AS old; INSERT INTO orders_1 SELECT * FROM old.orders_1 WHERE id = 800001"
sql db0.db "DELETE FROM orders_1 WHERE id = 800001"
sql master.db "INSERT INTO orders VALUES (800001, '${stale_key//\'/\'\'}', 1.25, 'stale router')"
# The application deletes rows meanwhile: the delete logs still run
# (they end only when final-check passes), and it counts them.
ids=$(sql db1.db "SELECT group_concat(id) FROM (SELECT id FROM orders_0 ORDER BY id LIMIT 3)")
sql db1.db "DELETE FROM orders_0 WHERE id IN ($ids)"
sql master.db "DELETE FROM orders WHERE id IN ($ids)"
run_reshard 0 "purge-deletes: run again after the row is moved" run plan.cfg --yes
has err "counted in pre-verify, 5 deleted since" \
	"purge-deletes: final-check counts the deletes made after its failed attempt"
status_json
equals "$(jget '$.kept_rows')" '[]' "purge-deletes: no kept row left"
complete "purge-deletes"
check "purge-deletes: no delete log left" test \
	"$(for db in db0 db1 db2 db3; do sql "$db.db" "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'reshard_del%'"; done | sort -u)" = 0

# The delete logs start before the fence (pre-verify), out of the fenced
# time, and publish empties them: what they held before — here catch-up's
# delete, on db2, of a row the application deleted on db0 before the
# fence — must not pass for a delete made on the new routing.  A stale
# router that writes that row again to the old owner after unfence then
# has it kept, as above, not purged on the strength of the older delete.
section purge-stale-delete
fresh purge-stale-delete
own_master
run_reshard 0 "purge-stale-delete: run --until pre-verify" run plan.cfg --until pre-verify --yes
check "purge-stale-delete: pre-verify started db0's delete logs" test \
	"$(sql db0.db "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'reshard_dellog%'")" -gt 0
read -r gone_id gone_key < <(sql master.db "SELECT o.id, o.customer_id FROM orders o
	JOIN routes r ON r.key = o.customer_id WHERE r.from_owner = 'db0.orders_0'
	AND r.to_owner = 'db2.orders_0' ORDER BY o.id LIMIT 1" | tr '|' ' ')
gone_row=$(sql db0.db "SELECT quote(id) || ', ' || quote(customer_id) || ', ' ||
	quote(amount) || ', ' || quote(note) FROM orders_0 WHERE id = $gone_id")
equals "$(sql db0.db "DELETE FROM orders_0 WHERE id = $gone_id; SELECT changes();")" 1 \
	"purge-stale-delete: the application deletes row $gone_id on db0 before the fence"
run_reshard 0 "purge-stale-delete: run --until verify" run plan.cfg --until verify --yes
equals "$(sql db2.db "SELECT count(*) FROM reshard_del_orders_0 WHERE id = $gone_id")" 1 \
	"purge-stale-delete: catch-up's delete on db2 is in db2's log before publish"
run_reshard 0 "purge-stale-delete: run --until unfence" run plan.cfg --until unfence --yes
equals "$(for db in db2 db3; do for t in 0 1; do
	sql "$db.db" "SELECT count(*) FROM reshard_del_orders_$t"; done; done | sort -u)" 0 \
	"purge-stale-delete: publish emptied the new owners' delete logs"
equals "$(for db in db0 db1; do for t in 0 1; do
	sql "$db.db" "SELECT '$db.' || id FROM reshard_del_orders_$t"; done; done)" "db0.$gone_id" \
	"purge-stale-delete: the sources' logs keep the application's delete, for final-check"
equals "$(sql db0.db "INSERT INTO orders_0 VALUES ($gone_row); SELECT changes();")" 1 \
	"purge-stale-delete: a stale router writes row $gone_id ($gone_key) to db0 again"
run_reshard 3 "purge-stale-delete: run exits 3 (the row kept)" run plan.cfg --yes
has err "(id = '$gone_id')" "purge-stale-delete: purge names the row it kept"
check "purge-stale-delete: the stale write is still on db0" \
	test "$(sql db0.db "SELECT count(*) FROM orders_0 WHERE id = $gone_id")" = 1

# Purge's own deletes bypass the delete log (backend_purge_keys): only the
# application's are recorded.  After purge the logs hold exactly the one
# key the application deleted, every log trigger is back in place, and an
# application delete after purge is still recorded.  The application's
# own triggers still fire for purge's deletes: orders_1 on db0 has one
# (an audit of deletes, its table named in another case, as SQLite
# allows), so purge leaves that table's log by dropping its triggers
# inside each delete's transaction; the other tables, with reshard's
# triggers only, by turning triggers off on its connection.
section purge-unlogged
fresh purge-unlogged
own_master
run_reshard 0 "purge-unlogged: run --until unfence" run plan.cfg --until unfence --yes
sql db0.db "CREATE TABLE audit (id INTEGER); CREATE TRIGGER app_audit AFTER DELETE
	ON ORDERS_1 BEGIN INSERT INTO audit VALUES (OLD.id); END"
audit_before=$(sql db0.db "SELECT count(*) FROM orders_1")
read -r gone_id < <(sql master.db "SELECT o.id FROM orders o JOIN routes r
	ON r.key = o.customer_id WHERE r.from_owner = 'db0.orders_0'
	AND r.to_owner = 'db2.orders_0' ORDER BY o.id LIMIT 1")
sql db2.db "DELETE FROM orders_0 WHERE id = $gone_id"
sql master.db "DELETE FROM orders WHERE id = $gone_id"
triggers() {
	for db in db0 db1 db2 db3; do
		sql "$db.db" "SELECT name FROM sqlite_schema WHERE type = 'trigger'
			AND name LIKE 'reshard_dellog%' ORDER BY name"
	done
}
logged() {
	for db in db0 db1 db2 db3; do
		for t in 0 1; do
			sql "$db.db" "SELECT '$db.' || id FROM reshard_del_orders_$t"
		done
	done
}
triggers >triggers.before
run_reshard 0 "purge-unlogged: run --until purge" run plan.cfg --until purge --yes
status_json
check "purge-unlogged: purge deleted rows ($(step_field purge rows) scanned)" \
	test "$(sql db0.db "SELECT count(*) FROM orders_0")" -lt \
	"$(sql "$template/db0.db" "SELECT count(*) FROM orders_0")"
equals "$(logged | tr '\n' ' ')" "db2.$gone_id " \
	"purge-unlogged: the logs hold only the application's delete"
triggers >triggers.after
check "purge-unlogged: every delete-log trigger is back ($(wc -l <triggers.after))" \
	cmp -s triggers.before triggers.after
audit_purged=$((audit_before - $(sql db0.db "SELECT count(*) FROM orders_1")))
check "purge-unlogged: purge deleted rows of db0.orders_1 ($audit_purged)" test "$audit_purged" -gt 0
equals "$(sql db0.db "SELECT count(*) FROM audit")" "$audit_purged" \
	"purge-unlogged: the application's trigger fired for each of them"
equals "$(sql db0.db "SELECT count(*) FROM sqlite_schema WHERE name = 'app_audit'")" 1 \
	"purge-unlogged: the application's trigger is still there"
other_id=$(sql db0.db "SELECT id FROM orders_0 ORDER BY id LIMIT 1")
sql db0.db "DELETE FROM orders_0 WHERE id = $other_id"
sql master.db "DELETE FROM orders WHERE id = $other_id"
equals "$(sql db0.db "SELECT count(*) FROM reshard_del_orders_0 WHERE id = $other_id")" 1 \
	"purge-unlogged: an application delete after purge is recorded"
run_reshard 0 "purge-unlogged: the run finishes" run plan.cfg --yes
has err "counted in pre-verify, 2 deleted since" "purge-unlogged: final-check counts the two deletes"
complete "purge-unlogged"

# Deletes during the run: an application deleting more rows than it
# inserts (a clean-up job) between preflight and the fence does not make
# final-check report rows missing.  It counts from pre-verify, where the
# sources' delete logs start, and publish leaves those logs (it empties
# only the new owners'), so every delete since is counted.  Before, it
# compared preflight's count less the deletes since publish, reported
# rows missing (exit 3) and repeated it on every run.
section run-deletes
fresh run-deletes
own_master
# delete_some DB N: the application deletes the N lowest ids of each of
# DB's tables (movers and rows that stay), and so does the oracle.
delete_some() {
	local t ids
	for t in 0 1; do
		ids=$(sql "$1.db" "SELECT group_concat(id) FROM (SELECT id FROM
			orders_$t ORDER BY id LIMIT $2)")
		[ -n "$ids" ] || bail "run-deletes: no rows on $1.orders_$t"
		sql "$1.db" "DELETE FROM orders_$t WHERE id IN ($ids)"
		sql master.db "DELETE FROM orders WHERE id IN ($ids)"
	done
}
run_reshard 0 "run-deletes: run --until preflight" run plan.cfg --until preflight --yes
delete_some db0 15
delete_some db1 5
run_reshard 0 "run-deletes: run --until pre-verify" run plan.cfg --until pre-verify --yes
delete_some db0 3
delete_some db1 4
run_reshard 0 "run-deletes: the run finishes" run plan.cfg --yes
has err "counted in pre-verify, 14 deleted since" \
	"run-deletes: final-check counts the 14 deletes after pre-verify's count"
complete run-deletes

finish
