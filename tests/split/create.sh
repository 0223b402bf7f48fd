#!/usr/bin/env bash
# create: with options.create_tables, a target that lacks the tables gets
# them from the first source's definition.  Preflight says what it will
# make and changes nothing; capture makes the tables (columns, types,
# NOT NULL, defaults, checks and primary key exactly as n0's, without the
# secondary indexes); the copy makes the indexes once its rows are in; the
# run then completes exactly.  Abort after capture and after the copy
# drops the tables the run made and nothing else; a table the run made
# that holds a row it did not copy is kept.  Without the option a missing
# table is refused, naming the option.
. "$(dirname "$0")/lib.sh"
begin "$@"

# shape DB TABLE: the table's columns (name, type, NOT NULL, default,
# key position) and its statement minus the name, one line each.
shape() {
	sql -readonly "$1" "SELECT name || ' ' || type || ' ' || \"notnull\" ||
		' ' || quote(dflt_value) || ' ' || pk FROM pragma_table_info('$2')"
	sql -readonly "$1" "SELECT substr(sql, instr(sql, '(')) FROM sqlite_schema
		WHERE type = 'table' AND name = '$2'"
}

# indexes DB: "name table unique columns" of every index made by a
# statement, one a line.
indexes() {
	sql -readonly "$1" "SELECT s.name || ' ' || s.tbl_name || ' ' ||
		l.\"unique\" || ' ' || (SELECT group_concat(name) FROM
		pragma_index_info(s.name)) FROM sqlite_schema s
		JOIN pragma_index_list(s.tbl_name) l ON l.name = s.name
		WHERE s.type = 'index' AND s.sql IS NOT NULL ORDER BY s.name"
}

# tables DB: the tables of DB but reshard's marker, by name.
tables() {
	sql -readonly "$1" "SELECT group_concat(name, ' ') FROM (SELECT name
		FROM sqlite_schema WHERE type = 'table' AND name <> 'reshard_marker'
		ORDER BY name)"
}

# prepare NAME: a ring whose n4 has no tables, whose sources carry a
# check, a default and two secondary indexes (n0's define the targets).
prepare() {
	fresh "$1" ring "create_tables = true;"
	sql n4.db "DROP TABLE orders; DROP TABLE items"
	for n in "${sources[@]}"; do
		sql "$n.db" "CREATE INDEX orders_note ON orders (note DESC);
			CREATE INDEX lines_by_customer ON items (customer, qty)
			WHERE qty > 0;
			ALTER TABLE items ADD COLUMN packed TEXT NOT NULL
			DEFAULT 'no' CHECK (packed IN ('no', 'yes'))"
	done
}

section refused
fresh refused
sql n4.db "DROP TABLE orders"
run_reshard 1 "refused: a missing table without the option" run plan.cfg --yes
has err "table orders is missing on n4" "refused: names the table"
has err "options.create_tables = true" "refused: names the option"

section made
prepare made
run_reshard 0 "made: preflight" run plan.cfg --yes --until preflight
has err "n4: table orders will be made in capture, and 1 secondary index after the copy" \
	"made: preflight says what it will make"
equals "$(tables n4.db)" "" "made: preflight made nothing"
run_reshard 0 "made: capture" run plan.cfg --yes --until capture
has err "n4: table items made" "made: capture says it made items"
for t in orders items; do
	equals "$(shape n4.db $t)" "$(shape n0.db $t)" \
		"made: $t on n4 is defined as on n0"
done
equals "$(indexes n4.db)" "" "made: no secondary index before the copy"
run_reshard 0 "made: copy" run plan.cfg --yes --until copy
equals "$(indexes n4.db)" "$(indexes n0.db)" \
	"made: after the copy, n4 has n0's secondary indexes"
has err "n4: table items: 1 secondary index made" "made: copy says so"
run_reshard 0 "made: the rest of the run" run plan.cfg --yes
status_json
equals "$(step_states)" "$all_done" "made: every step done"
# items now has a column the template's rows lack: compare what stayed.
equals "$(count_rows n4)" "$(sql "$root/template-ring/master.db" "SELECT
	(SELECT count(*) FROM orders JOIN routes ON key = customer WHERE moves)
	|| '/' || (SELECT count(*) FROM items JOIN routes ON key = customer
	WHERE moves)")" "made: n4 holds the oracle's movers"
orders_columns='id, quote(customer), quote(amount), quote(note)'
final_rows "made: every row once, on its owner under to, unchanged"
no_leftovers "made: nothing of reshard's left"

section abort-capture
prepare abort-capture
run_reshard 0 "abort-capture: capture" run plan.cfg --yes --until capture
run_reshard 0 "abort-capture: abort" abort plan.cfg
has err "n4: table orders, made by this run, dropped" "abort-capture: says so"
equals "$(tables n4.db)" "" "abort-capture: n4 has no table left"
same_rows "abort-capture: every row on its source, unchanged" from_owner "${sources[@]}"
no_leftovers "abort-capture: nothing of reshard's left"

section abort-copy
prepare abort-copy
run_reshard 0 "abort-copy: copy" run plan.cfg --yes --until copy
run_reshard 0 "abort-copy: abort" abort plan.cfg
equals "$(tables n4.db)" "" "abort-copy: the tables made and filled are gone"
same_rows "abort-copy: every row on its source, unchanged" from_owner "${sources[@]}"

section kept
prepare kept
run_reshard 0 "kept: capture" run plan.cfg --yes --until capture
sql n4.db "INSERT INTO orders VALUES (99999999, 'someone', 1, 'not copied')"
run_reshard 0 "kept: abort" abort plan.cfg
has err "table orders, made by this run, holds 1 rows it did not copy: kept" \
	"kept: abort names the table it keeps"
equals "$(tables n4.db)" "orders" "kept: only that table is left"
equals "$(sql n4.db "SELECT note FROM orders")" "not copied" \
	"kept: with its row"

finish
