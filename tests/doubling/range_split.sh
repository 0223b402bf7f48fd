#!/usr/bin/env bash
# range_split: a doubling that splits one node's hash range onto its
# replica.  `from` gives db0 the lower half of the points and db1 the upper
# half; `to` cuts db0's half in two and gives the upper quarter to db2, db0's
# replica.  Only the pair db0/db2 is fenced, copied, promoted and purged:
# db1 has no replica and is no one's, keeps every row, and is left exactly
# as it was (the same bytes: no fence, no marker, no delete log, no purge).
# The row set is exact against the oracle's owners.
. "$(dirname "$0")/lib.sh"

# One table a node (`orders`, not slot tables), maps by ranges.
# shellcheck disable=SC2034,SC2054 # lib.sh reads it; the commas are the oracle's
oracle_maps=(--hash sha256_64 --table orders
	--from ranges:0x7fffffffffffffff=db0,max=db1
	--to ranges:0x3fffffffffffffff=db0,0x7fffffffffffffff=db2,max=db1)
steps_touched=(preflight pre-verify fence catch-up promote verify publish unfence purge final-check)

write_plan() {
	cat >"$1/plan.cfg" <<PLAN
version = 1;
name = "orders-2x";
hash = "sha256_64";
tables = ( { name = "orders"; key = "customer_id"; } );
shards = (
  { name = "db0"; url = "sqlite://db0.db"; replica = "db2"; },
  { name = "db1"; url = "sqlite://db1.db"; },
  { name = "db2"; url = "sqlite://db2.db"; }
);
from = { map = "ranges"; ranges = (
  { end = "0x7fffffffffffffff"; node = "db0"; },
  { end = "max"; node = "db1"; } ); };
to = { map = "ranges"; ranges = (
  { end = "0x3fffffffffffffff"; node = "db0"; },
  { end = "0x7fffffffffffffff"; node = "db2"; },
  { end = "max"; node = "db1"; } ); };
strategy = "doubling";
options = { batch_rows = ${2:-50}; };
publish = { file = "routing.cfg"; };
PLAN
}

# The template as lib.sh makes it, with one `orders` table a node.
make_template() {
	mkdir -p "$template" || return 1
	write_plan "$template"
	sql "$template/master.db" <<SQL || return 1
CREATE TABLE keys (n INTEGER PRIMARY KEY, k TEXT NOT NULL UNIQUE);
WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c
                        WHERE n < $n_keys - 1)
INSERT INTO keys SELECT n, CASE n % 10
  WHEN 3 THEN 'клиент-' || n WHEN 9 THEN '🙂 ' || n
  ELSE printf('cust-%05d', n) END FROM c;
CREATE TABLE orders $table_sql;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c
                        WHERE i < $n_rows)
INSERT INTO orders SELECT i,
  (SELECT k FROM keys WHERE n = (i * 7919) % $n_keys),
  CASE WHEN i % 17 = 0 THEN NULL
       ELSE printf('%.2f', ((i * 7907) % 1000000) / 100.0) END,
  CASE WHEN i % 5 = 0 THEN NULL ELSE 'note ' || i END
FROM c;
CREATE TABLE routes (key TEXT PRIMARY KEY, from_owner TEXT NOT NULL,
                     to_owner TEXT NOT NULL, moves TEXT, point TEXT);
SQL
	sql "$template/master.db" "SELECT k FROM keys ORDER BY n" |
		python3 -S "$oracle" "${oracle_maps[@]}" >"$template/routes.tsv" ||
		return 1
	sql "$template/master.db" \
		".mode tabs" ".import $template/routes.tsv routes" || return 1
	local db
	for db in db0 db1; do
		sql "$template/$db.db" <<SQL || return 1
CREATE TABLE orders $table_sql;
ATTACH '$template/master.db' AS m;
INSERT INTO orders SELECT o.* FROM m.orders o
  JOIN m.routes r ON r.key = o.customer_id
  WHERE r.from_owner = '$db';
SQL
	done
}

actual_rows() {
	local db attach=() query=''
	for db in "$@"; do
		attach+=("ATTACH 'file:$dir/$db.db?mode=ro' AS $db")
		query+="${query:+ UNION ALL }SELECT '$db', id,
			quote(customer_id), quote(amount), quote(note)
			FROM $db.orders"
	done
	sql -separator $'\t' :memory: "${attach[@]}" "$query" 2>&1 | sort
}
final_rows() { same_rows "$1" to_owner db0 db1 db2; }

begin "$@"

section range-split
fresh range-split
# The oracle names owners without a table here (one table a node).
equals "$(sql "$template/master.db" "SELECT count(*) FROM routes
	WHERE from_owner = 'db1' AND to_owner <> 'db1'")" 0 \
	"range-split: by the oracle, nothing moves off db1"
for pair in db0/db0 db0/db2 db1/db1; do
	check "range-split: by the oracle, keys of ${pair%/*} go to ${pair#*/}" test \
		"$(sql "$template/master.db" "SELECT count(*) FROM routes
		WHERE from_owner = '${pair%/*}' AND to_owner = '${pair#*/}'")" -gt 0
done
check "range-split: db0 and db1 hold rows" test \
	"$(sql db0.db "SELECT count(*) FROM orders")" -gt 0 -a \
	"$(sql db1.db "SELECT count(*) FROM orders")" -gt 0
db1_before=$(sha256sum db1.db)
run_reshard 0 "range-split: run --yes" run plan.cfg --yes
has err "db0: writes fenced" "range-split: db0 is fenced"
check "range-split: db1 is never fenced" sh -c '! grep -q "db1: writes" err'
has err "db2: a primary of its own" "range-split: db2 is promoted"
equals "$(sha256sum db1.db)" "$db1_before" \
	"range-split: db1 is byte for byte as it was (no fence, marker, log or purge)"
equals "$(sql db0.db "SELECT count(*) FROM reshard_marker")/$(sql db2.db \
	"SELECT count(*) FROM reshard_marker")" 1/1 \
	"range-split: the pair db0, db2 carries the run's marker"
complete "range-split"

finish
