#!/usr/bin/env bash
# deletes: an application that deletes rows all through a split (a
# clean-up job: more deletes than inserts) loses nothing and does not make
# final-check report rows missing.  Rows of every source, movers and rows
# that stay, are deleted before the copy, after it (the replay deletes the
# copies on n4), after pre-verify and after unfence (on the new owner n4
# and on the sources); the run ends exactly: every row the application
# kept is on its owner, no deleted row anywhere, and final-check counts the
# deletes made since pre-verify's walk counted the sources.  Before, it compared
# preflight's count less the deletes since publish, reported rows missing
# (exit 3) and repeated it on every run.
. "$(dirname "$0")/lib.sh"
begin "$@"

# delete_some NODE N: the application deletes the N lowest order ids of
# NODE, and the oracle forgets them.  Bails when there are none.
delete_some() {
	local ids
	ids=$(sql "$1.db" "SELECT group_concat(id) FROM (SELECT id FROM orders
		ORDER BY id LIMIT $2)")
	[ -n "$ids" ] || bail "$section_name: no order to delete on $1"
	sql "$1.db" "DELETE FROM orders WHERE id IN ($ids)"
	sql master.db "DELETE FROM orders WHERE id IN ($ids)"
}

section deletes
fresh deletes
own_master
run_reshard 0 "deletes: run --until capture" run plan.cfg --until capture --yes
for n in "${sources[@]}"; do delete_some "$n" 20; done
run_reshard 0 "deletes: run --until copy" run plan.cfg --until copy --yes
# Copied movers, deleted on their source: the replay deletes their copies.
for n in n0 n1; do
	ids=$(sql "$n.db" "ATTACH '$dir/master.db' AS m; SELECT group_concat(id)
		FROM (SELECT id FROM orders WHERE customer IN (SELECT key FROM
		m.routes WHERE from_owner = '$n' AND to_owner = 'n4') ORDER BY id
		LIMIT 6)")
	[ -n "$ids" ] || bail "deletes: no mover on $n"
	equals "$(sql n4.db "SELECT count(*) FROM orders WHERE id IN ($ids)")" 6 \
		"deletes: n4 holds the copies of 6 movers of $n"
	sql "$n.db" "DELETE FROM orders WHERE id IN ($ids)"
	sql master.db "DELETE FROM orders WHERE id IN ($ids)"
done
run_reshard 0 "deletes: run --until pre-verify" run plan.cfg --until pre-verify --yes
delete_some n2 7
delete_some n3 5
run_reshard 0 "deletes: run --until unfence" run plan.cfg --until unfence --yes
# Under the new routing: a moved order deleted on its new owner n4, and
# orders that stayed deleted on their sources.
delete_some n4 4
delete_some n0 3
run_reshard 0 "deletes: the run finishes" run plan.cfg --yes
has err "counted in pre-verify, 19 deleted since" \
	"deletes: final-check counts the 19 deletes since pre-verify's count"
complete deletes
equals "$(sql master.db "SELECT count(*) FROM orders")" \
	"$(($(sql "$root/template-$kind/master.db" "SELECT count(*) FROM orders") - 111))" \
	"deletes: the oracle lost the 111 orders the application deleted"

finish
