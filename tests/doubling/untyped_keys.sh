#!/usr/bin/env bash
# untyped_keys: a table whose primary key column has no type
# (`id PRIMARY KEY`), holding integers.  SQLite keeps them as integers,
# and sorts every integer below every text; keys travel as text, so the
# range after the first chunk, bound by the text '50', held no integer:
# every step read one chunk, the run ended with exit 0 and the rows past
# it never moved (found by a review).  The read now refuses such a key,
# naming the table, the column and the value, before anything is fenced
# (exit 2); so is one of a STRICT table's ANY key column.  With the keys
# stored as text, the same table is walked and the run completes exactly.
. "$(dirname "$0")/lib.sh"
table_sql='(id PRIMARY KEY, customer_id TEXT NOT NULL,
            amount DECIMAL(12,2), note TEXT)'
begin "$@"

section untyped-integers
fresh untyped-integers
equals "$(sql db0.db "SELECT typeof(id) FROM orders_0 GROUP BY 1")" integer \
	"untyped-integers: db0's ids are stored as integers"
run_reshard 2 "untyped-integers: the run stops at preflight (exit 2)" run plan.cfg --yes
has err "primary key column id () holds INTEGER" \
	"untyped-integers: the key is named with its storage"
has err "declare the column INTEGER" "untyped-integers: it says what to change"
status_json
equals "$(step_field preflight state)/$(step_field fence state)/$(jget '$.fenced')" failed/pending/0 \
	"untyped-integers: preflight failed, nothing fenced"
same_rows "untyped-integers: the sources as they were" from_owner db0 db1

section strict-any
# A STRICT table's ANY column keeps values as given too.
fresh strict-any
for db in db0 db1; do
	for t in 0 1; do
		sql "$db.db" "CREATE TABLE s (id ANY PRIMARY KEY, customer_id TEXT NOT NULL,
				amount ANY, note TEXT) STRICT;
			INSERT INTO s SELECT * FROM orders_$t; DROP TABLE orders_$t;
			ALTER TABLE s RENAME TO orders_$t"
	done
done
run_reshard 2 "strict-any: the run stops at preflight (exit 2)" run plan.cfg --yes
has err "primary key column id (ANY) holds INTEGER" "strict-any: the key is named with its storage"
same_rows "strict-any: the sources as they were" from_owner db0 db1

section untyped-text
fresh untyped-text
for db in db0 db1; do
	for t in 0 1; do sql "$db.db" "UPDATE orders_$t SET id = CAST(id AS TEXT)"; done
done
equals "$(sql db0.db "SELECT typeof(id) FROM orders_0 GROUP BY 1")" text \
	"untyped-text: db0's ids are stored as text"
run_reshard 0 "untyped-text: the run completes" run plan.cfg --yes
complete untyped-text
finish
