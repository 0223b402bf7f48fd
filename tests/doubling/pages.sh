#!/usr/bin/env bash
# pages: a new owner that holds far more rows in a chunk's key range than
# the chunk itself is read a page at a time (a batch), never all at once,
# and every page counts.  After unfence the application writes 300 rows
# with ids below every existing one to db2.orders_0 (they fall in the
# first chunk's range of db0.orders_0): purge's confirmation of that chunk
# reads db2's side in several pages, purges what it must, keeps nothing,
# and the rows written stay exactly where they belong.
. "$(dirname "$0")/lib.sh"
begin "$@"

section pages
fresh pages
own_master
run_reshard 0 "pages: run --until unfence" run plan.cfg --until unfence --yes
mapfile -t keys < <(sql master.db "SELECT key FROM routes WHERE to_owner = 'db2.orders_0'")
check "pages: keys db2.orders_0 owns (${#keys[@]})" test "${#keys[@]}" -gt 0
for n in $(seq 1 300); do
	k=${keys[$((n % ${#keys[@]}))]}
	printf "INSERT INTO orders_0 VALUES (%d, '%s', 1.5, 'written after unfence');\n" \
		"-$n" "${k//\'/\'\'}"
done >inserts.sql
check "pages: the application writes 300 rows to db2.orders_0" \
	sql db2.db ".read inserts.sql"
sed 's/^INSERT INTO orders_0 VALUES/INSERT INTO orders VALUES/' inserts.sql >master.sql
sql master.db ".read master.sql"
run_reshard 0 "pages: purge and final-check finish" run plan.cfg --yes
status_json
equals "$(jget '$.kept_rows')" '[]' "pages: purge kept no row"
complete "pages"
finish
