#!/usr/bin/env bash
# collation: a table whose primary key is text, ordered one way on the
# sources and another on the new shard.  The sources' `codes` table sorts
# its keys by bytes (SQLite's BINARY, like PostgreSQL's "C" or a
# MariaDB _bin collation); n4's sorts them case-blind (COLLATE NOCASE,
# like a MariaDB _ci collation).  Keys of mixed case ('B7Y', 'a12x') then
# fall in different key ranges on the two sides, so an owner read by a
# source chunk's key range misses some of its rows, and shows rows of
# other chunks.  `reshard verify` called them missing and extra (exit 3);
# purge, which confirms every row on its owner before deleting it, kept
# them (exit 3, the run unable to end).  Both now look up by key what a
# range did not show, and verify asks the source before calling a row
# extra.  The run ends with every row once on its owner under `to` (by
# the oracle), unchanged.
. "$(dirname "$0")/lib.sh"
begin "$@"

section collation
plan_tables='( { name = "codes"; key = "customer"; } )' fresh collation
for n in "${sources[@]}"; do
	sql "$n.db" "CREATE TABLE codes (code TEXT PRIMARY KEY, customer TEXT NOT NULL, note TEXT)"
done
sql n4.db "CREATE TABLE codes (code TEXT PRIMARY KEY COLLATE NOCASE,
	customer TEXT NOT NULL, note TEXT)"
# A row a customer of the oracle's routes, its code of mixed case.
codes="SELECT substr('aBcDeFgH', rowid % 8 + 1, 1) || rowid ||
	substr('xYz', rowid % 3 + 1, 1) AS code, key, 'note ' || rowid"
for n in "${sources[@]}"; do
	sql "$n.db" "ATTACH '$root/template-$kind/master.db' AS m;
		INSERT INTO codes $codes FROM m.routes WHERE from_owner = '$n'"
done
sql -separator $'\t' "$root/template-$kind/master.db" \
	"SELECT to_owner, t.* FROM ($codes, to_owner FROM routes) t" |
	cut -f1-4 | sort >codes.expected
moving=$(sql "$root/template-$kind/master.db" "SELECT count(*) FROM routes WHERE moves")
check "collation: some codes move to n4 ($moving)" test "$moving" -gt 0
# shown: n4's key order differs from the sources' for these keys.
check "collation: n4 orders the keys otherwise" test \
	"$(sql :memory: "SELECT 'B1x' < 'a2x'")" != \
	"$(sql :memory: "SELECT 'B1x' < 'a2x' COLLATE NOCASE")"

run_reshard 0 "collation: run --until catch-up" run plan.cfg --until catch-up --yes
run_reshard 0 "collation: reshard verify finds no difference (exit 0)" verify plan.cfg
run_reshard 0 "collation: the run ends (exit 0)" run plan.cfg --yes
for n in "${nodes[@]}"; do
	sql -separator $'\t' "$n.db" "SELECT '$n', code, customer, note FROM codes"
done | sort >codes.actual
same_lines "collation: every code once, on its owner under to, unchanged" codes.expected codes.actual
equals "$(markers)" "$(all_markers "done")" "collation: every marker says done"
finish
