#!/usr/bin/env bash
# verify_layout: verify judges a new owner's row by its own shard key.
# An order put on n4 with the primary key of an order that stays on its
# source, under a customer that moves from that source to n4, before
# pre-verify: `reshard verify` lists it as extra and nothing else (exit
# 3, no shard file changed), `run` stops in verify (exit 3) naming it,
# nothing published or purged; deleted by hand, the run ends exact.
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

# stopped NAME TEXT: verify stopped the run (exit 3 checked by the
# caller): the message has TEXT, status shows it, nothing published or
# purged (the sources hold sources.before), writes still fenced.
stopped() {
	has err "$2" "$1: the message says \"$2\""
	has err "nothing was purged" "$1: the message says nothing was purged"
	status_json
	equals "$(step_field verify state)/$(step_field publish state)/$(step_field purge state)" \
		failed/pending/pending "$1: status: verify failed, publish and purge pending"
	equals "$(jget '$.fenced')" 1 "$1: status: writes still fenced"
	check "$1: no routing file published" test ! -e routing.cfg
	actual_rows "${sources[@]}" >sources.after
	if cmp -s sources.before sources.after; then
		ok "$1: nothing purged: the sources hold all their $(wc -l <sources.after) rows"
	else
		diff sources.before sources.after | head -n 10 >why
		not_ok "$1: nothing purged: the sources hold all their rows" why
	fi
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

finish
