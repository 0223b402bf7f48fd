#!/usr/bin/env bash
# unique: a unique index other than the primary key on the target.  The
# copy reads its chunks at different moments and catch-up replays the
# log in batches, so a target can hold a stale copy of a row whose source
# row has since given a unique value up to another moving row.  The write
# of that other row must make room (delete the stale copy, which catch-up
# then copies again) instead of failing on the index at every resume.
#
# catch-up: after the copy, B is touched, A gives its email up and B takes
#   it; C and D swap theirs through a third value.  The run ends exact.
# copy: the copy stops (a fault) after A's chunk, before B's; A gives its
#   email to B; the resumed copy meets A's stale copy.  Exact.
# copy-made: the same with n4 lacking the table (options.create_tables;
#   SQLite makes a UNIQUE column's index with the table).  Exact.
# copy-made-index: the same with a separate CREATE UNIQUE INDEX, which
#   reshard makes with the table too (built after the copy, it failed on
#   A's stale copy at every resume).  Exact.
# two-sources: the ring (n4 takes rows from every source), a row of n0
#   and one of n1 moving to n4 with one email: both are right, so nothing
#   may be deleted to make room; the copy (one stream: n0 first) fails
#   naming the clash, before the fence, and ends exact once n1's row, the
#   one not copied yet, has another email.
# two-sources-made: the same with n4's table made by reshard and a
#   separate unique index, which several sources' table gets only after
#   catch-up: its build fails naming the clash, before the fence; once
#   n1's row has another email, the resumed catch-up copies it and builds
#   the index, and the run ends exact (built right after the copy, it
#   failed at every resume: the copy's chunks were done).
. "$(dirname "$0")/lib.sh"
begin "$@"
plan_tables='( { name = "acct"; key = "customer"; } )'

# accounts NAME [OPTIONS [KIND]]: a fresh folder (the range plan, whose
# n4 takes rows from n0 alone, unless KIND) whose sources hold acct (id,
# customer, a unique email) for every key of the oracle's routes, and n4
# the empty table unless OPTIONS make reshard create it.
accounts() {
	local options=${2:-}
	fresh "$1" "${3:-range}" "${options//unique_index/}"
	local n nodes_with=(n0 n1 n2 n3 n4)
	case ${2:-} in *create_tables*) nodes_with=(n0 n1 n2 n3) ;; esac
	for n in "${nodes_with[@]}"; do
		case ${2:-} in
		*unique_index*) sql $n.db "CREATE TABLE acct (id INTEGER PRIMARY KEY,
			customer TEXT NOT NULL, email TEXT NOT NULL);
			CREATE UNIQUE INDEX acct_email ON acct (email)" ;;
		*) sql $n.db "CREATE TABLE acct (id INTEGER PRIMARY KEY,
			customer TEXT NOT NULL, email TEXT NOT NULL UNIQUE)" ;;
		esac
	done
	for n in n0 n1 n2 n3; do
		sql $n.db "ATTACH '$root/template-$kind/master.db' AS m;
			INSERT INTO acct SELECT rowid, key, 'e' || rowid
			FROM m.routes WHERE from_owner = '$n'"
	done
}

# movers N [NODE]: the ids of the first N rows of NODE (n0) that move to n4.
movers() {
	sql "${2:-n0}.db" "ATTACH '$root/template-$kind/master.db' AS m;
		SELECT group_concat(id, ' ') FROM (SELECT a.id FROM acct a
		JOIN m.routes r ON r.key = a.customer WHERE r.to_owner = 'n4'
		ORDER BY a.id LIMIT $1)"
}

# exact NAME: every acct row of the sources, as they are now, once on
# its owner under `to` (the oracle's routes), on n0 … n4.
exact() {
	local n expected='' actual=''
	for n in n0 n1 n2 n3; do
		expected+=$(sql -separator ' ' $n.db "ATTACH
			'$root/template-$kind/master.db' AS m; SELECT r.to_owner,
			a.id, a.customer, a.email FROM acct a JOIN m.routes r
			ON r.key = a.customer")$'\n'
	done
	echo "$expected" | sed '/^$/d' | sort >rows.expected
	"$bin" run plan.cfg --yes >out 2>err
	local rc=$?
	for n in n0 n1 n2 n3 n4; do
		actual+=$(sql -separator ' ' $n.db "SELECT '$n', id, customer,
			email FROM acct")$'\n'
	done
	echo "$actual" | sed '/^$/d' | sort >rows.actual
	equals "$rc" 0 "$1: the run ends (exit 0)"
	[ "$rc" = 0 ] || sed 's/^/#   /' err | tail -3
	check "$1: every row once on its owner, the emails as the sources have them ($(wc -l <rows.expected) rows)" \
		cmp -s rows.expected rows.actual
}

section catch-up
accounts catch-up
run_reshard 0 "catch-up: run --until copy" run plan.cfg --until copy --yes
read -r a b c d < <(movers 4)
sql n0.db "UPDATE acct SET customer = customer WHERE id = $b;
	UPDATE acct SET email = 'gone' WHERE id = $a;
	UPDATE acct SET email = 'e$a' WHERE id = $b;
	UPDATE acct SET email = 'swap' WHERE id = $c;
	UPDATE acct SET email = 'e$c' WHERE id = $d;
	UPDATE acct SET email = 'e$d' WHERE id = $c"
exact catch-up

# stopped_copy NAME OPTIONS: one stream, chunks of 5 rows (n0 is walked
# first, and A's chunk is the one holding its rank among n0's ids); the
# copy stops after A's chunk, A gives its email to B (a later mover of
# n0), and the run ends exact.
stopped_copy() {
	local a b chunk
	accounts "$1" "parallel = 1; $2"
	sed -i 's/batch_rows = 100;/batch_rows = 5;/' plan.cfg
	read -r a b < <(movers 2)
	b=$(sql n0.db "SELECT max(id) FROM acct WHERE id IN ($(movers 60 | tr ' ' ,))")
	chunk=$(sql n0.db "SELECT (count(*) + 4) / 5 FROM acct WHERE id <= $a")
	RESHARD_FAULT=after-chunk:copy:$chunk run_reshard 99 \
		"$1: the copy stops after A's chunk" run plan.cfg --until copy --yes
	equals "$(sql n4.db "SELECT email FROM acct WHERE id = $a")/$(sql n4.db "SELECT count(*) FROM acct WHERE id = $b")" \
		"e$a/0" "$1: n4 holds A's copy, not B's"
	sql n0.db "UPDATE acct SET email = 'gone' WHERE id = $a;
		UPDATE acct SET email = 'e$a' WHERE id = $b"
	exact "$1"
}

section copy
stopped_copy copy ""

section copy-made
stopped_copy copy-made "create_tables = true;"
equals "$(sql n4.db "SELECT count(*) FROM pragma_index_list('acct') WHERE \"unique\" AND origin <> 'pk'")" \
	1 "copy-made: n4's table has the source's unique index"

section copy-made-index
stopped_copy copy-made-index "create_tables = true; unique_index"
equals "$(sql n4.db "SELECT count(*) FROM pragma_index_list('acct') WHERE \"unique\" AND origin = 'c'")" \
	1 "copy-made-index: n4's table has the source's unique index"

section two-sources
accounts two-sources "parallel = 1;" ring
read -r a < <(movers 1 n0)
read -r b < <(movers 1 n1)
sql n1.db "UPDATE acct SET email = 'e$a' WHERE id = $b"
run_reshard 1 "two-sources: the copy fails on the clash (exit 1)" run plan.cfg --yes
has err "UNIQUE constraint failed: acct.email" "two-sources: the error names the clash"
status_json
equals "$(jget '$.fenced')/$(step_field fence state)" 0/pending \
	"two-sources: before the fence, writes open"
equals "$(sql n4.db "SELECT count(*) FROM acct WHERE id IN ($a, $b)")" 1 \
	"two-sources: the copy that went first is still on n4"
sql n1.db "UPDATE acct SET email = 'changed' WHERE id = $b"
exact two-sources

section two-sources-made
accounts two-sources-made "parallel = 1; create_tables = true; unique_index" ring
read -r a < <(movers 1 n0)
read -r b < <(movers 1 n1)
sql n1.db "UPDATE acct SET email = 'e$a' WHERE id = $b"
run_reshard 1 "two-sources-made: the unique index, made after catch-up, fails on the clash (exit 1)" \
	run plan.cfg --yes
has err "UNIQUE constraint failed: acct.email" "two-sources-made: the error names the clash"
status_json
equals "$(jget '$.fenced')/$(step_field copy state)/$(step_field catch-up state)" 0/done/failed \
	"two-sources-made: catch-up failed, before the fence, writes open"
sql n1.db "UPDATE acct SET email = 'changed' WHERE id = $b"
exact two-sources-made
equals "$(sql n4.db "SELECT count(*) FROM pragma_index_list('acct') WHERE \"unique\" AND origin = 'c'")" \
	1 "two-sources-made: n4's table has the source's unique index"

finish
