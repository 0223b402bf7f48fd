#!/usr/bin/env bash
# catchup_owners: a catch-up batch whose entries name more owners than it
# has entries.  A wide split: the ring of n0 … n3 grows to eight, n4 … n7
# new, each taking keys of n0.  After the copy the application inserts on
# n0 two orders with customers kA and kC (moving to n4 and n6), then gives
# them customers kB and kD (moving to n5 and n7): n0's change log holds
# (r1, kA), (r2, kC), then each update's old and new key.  With
# batch_rows = 2, the first batch reads r1 and r2 again with their new
# customers and names four owners: a delete on n4 and on n6 (the entries'
# keys; the copies a replay of the inserts alone would have left there
# are put there first, so that the deletes are seen), an upsert on n5
# and on n7 (the rows' keys now).  Before, catch-up
# had room for n + 1 owners for n entries (three here) and wrote past its
# array (a heap-buffer-overflow under ASan, a crash); it has room for
# 2 n + 1 now.  batch_rows is not part of the plan's fingerprint: catch-up
# runs with 2, the other steps with the fixture's 100.  The run ends exact
# against the oracle, r1 on n5 only and r2 on n7 only.
#
# The four owners are new shards: a row the replay upserts on a source
# (a customer of n1 written on n0) would be counted twice by pre-verify,
# and final-check would report a row missing (docs/split.md, limits).
. "$(dirname "$0")/lib.sh"
begin "$@"

section catchup-owners
fresh catchup-owners
# The ring of the fixture, grown to eight instead of five: n5 … n7 start
# as empty as n4, and the oracle's routes follow the new `to`.
plan_name=ring8
oracle_to=ring:100:n0,n1,n2,n3,n4,n5,n6,n7
plan_to='{ map = "ring"; vnodes = 100;
    nodes = ["n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"]; }'
nodes=(n0 n1 n2 n3 n4 n5 n6 n7)
for n in n5 n6 n7; do cp n4.db "$n.db" || bail "catchup-owners: making $n"; done
write_plan plan.cfg
sed -i 's|^  { name = "n4"; url = "sqlite://n4.db"; }$|&,\
  { name = "n5"; url = "sqlite://n5.db"; },\
  { name = "n6"; url = "sqlite://n6.db"; },\
  { name = "n7"; url = "sqlite://n7.db"; }|' plan.cfg
[ "$(grep -c 'url = "sqlite://n' plan.cfg)" -eq 8 ] ||
	bail "catchup-owners: adding n5 … n7 to the plan"
own_master
reroute || bail "catchup-owners: the oracle's routes under the eight-node ring"
run_reshard 0 "catchup-owners: run --until copy" run plan.cfg --until copy --yes

# with_master DB SQL: SQL on DB, master.db attached as m.
with_master() { sql "$1" "ATTACH '$dir/master.db' AS m; $2"; }
# The four customers, by the oracle: the first key (in key order) of n0
# moving to n4, n5, n6 and n7 (SQL for with_master).
customer() {
	echo "(SELECT key FROM m.routes WHERE from_owner = 'n0' AND to_owner = '$1'
		ORDER BY key LIMIT 1)"
}
kA=$(customer n4) kB=$(customer n5) kC=$(customer n6) kD=$(customer n7)
equals "$(with_master :memory: "SELECT group_concat(to_owner, ' ') FROM
	(SELECT to_owner FROM m.routes WHERE key IN ($kA, $kB, $kC, $kD)
	 ORDER BY to_owner)")" "n4 n5 n6 n7" \
	"catchup-owners: four customers of n0, moving to n4, n5, n6 and n7"

last=$(sql master.db "SELECT max(id) FROM orders")
[ -n "$last" ] || bail "catchup-owners: no orders in the oracle"
r1=$((last + 1)) r2=$((last + 2))
with_master n0.db "INSERT INTO orders VALUES ($r1, $kA, 10.25, 'owners 1');
	INSERT INTO orders VALUES ($r2, $kC, 20.5, 'owners 2');
	UPDATE orders SET customer = $kB WHERE id = $r1;
	UPDATE orders SET customer = $kD WHERE id = $r2" ||
	bail "catchup-owners: writing orders $r1 and $r2 on n0"
with_master :memory: "INSERT INTO m.orders VALUES ($r1, $kB, 10.25, 'owners 1'),
	($r2, $kD, 20.5, 'owners 2')" ||
	bail "catchup-owners: adding orders $r1 and $r2 to the oracle"

# The whole log of n0's orders, in position order: the inserts' entries
# side by side, then each update's old key and new key.
equals "$(with_master n0.db "SELECT group_concat(e, ' ') FROM (SELECT
	CASE id WHEN $r1 THEN 'r1' WHEN $r2 THEN 'r2' ELSE id END || '/' ||
	CASE customer WHEN $kA THEN 'kA' WHEN $kB THEN 'kB' WHEN $kC THEN 'kC'
	WHEN $kD THEN 'kD' ELSE quote(customer) END AS e
	FROM reshard_chg_orders ORDER BY reshard_pos)")" \
	"r1/kA r2/kC r1/kA r1/kB r2/kC r2/kD" \
	"catchup-owners: n0's change log holds the six entries in order"

# on_shards: "NODE:rN …" of the shards holding r1 or r2, by node.
on_shards() {
	over_shards "SELECT 'NODE:' || CASE id WHEN $r1 THEN 'r1' ELSE 'r2' END
		FROM NODE.orders WHERE id IN ($r1, $r2)" | sort | paste -sd ' '
}

# The copies a replay of the inserts alone would have made (r1 on n4, r2
# on n6), so that the batch's deletes there are seen to happen.
with_master n4.db "INSERT INTO orders VALUES ($r1, $kA, 10.25, 'owners 1')" &&
	with_master n6.db "INSERT INTO orders VALUES ($r2, $kC, 20.5, 'owners 2')" ||
	bail "catchup-owners: the copies on n4 and n6"
equals "$(on_shards)" "n0:r1 n0:r2 n4:r1 n6:r2" \
	"catchup-owners: before catch-up, r1 is on n0 and n4, r2 on n0 and n6"

# Catch-up in batches of two entries: the first names four owners.
sed -i 's/batch_rows = 100;/batch_rows = 2;/' plan.cfg
grep -q 'batch_rows = 2;' plan.cfg || bail "catchup-owners: setting batch_rows = 2"
run_reshard 0 "catchup-owners: catch-up in batches of 2" \
	run plan.cfg --until catch-up --yes
equals "$(sql n0.db "SELECT count(*) FROM reshard_chg_orders")" 0 \
	"catchup-owners: catch-up replayed and trimmed n0's log"
equals "$(on_shards)" "n0:r1 n0:r2 n5:r1 n7:r2" \
	"catchup-owners: after catch-up, r1 is copied to n5 and r2 to n7 only"
sed -i 's/batch_rows = 2;/batch_rows = 100;/' plan.cfg

run_reshard 0 "catchup-owners: the run finishes" run plan.cfg --yes
equals "$(on_shards)" "n5:r1 n7:r2" \
	"catchup-owners: r1 ends on n5 only, r2 on n7 only"
complete catchup-owners

finish
