#!/usr/bin/env bash
# refusals: what preflight refuses, each with its exit status and a message
# that names what is wrong and on which shard: a target that already holds
# a row (in either table), a target table missing, target columns of
# another kind (naming the column and both types), a missing column, a
# different primary key, a `from` shard missing from `to`, rows that would
# move between two sources (or maps or a pinned key that would move a key
# written later so) or to another table of their own source, a row
# on a source that does not own it, a source column named reshard_pos (the
# change log's own).  Each
# time nothing is installed on any shard (no marker, no trigger, no change
# table) and no shard's file changed; once the cause is fixed, the same plan
# runs to the end exactly.
. "$(dirname "$0")/lib.sh"
begin "$@"

# untouched NAME: no shard's file differs from the template's, but for
# the shards named in $changed (set by the scenario before it runs).
changed=''
untouched() {
	local n differ=''
	for n in "${nodes[@]}"; do
		case " $changed " in *" $n "*) continue ;; esac
		cmp -s "$n.db" "$root/template-$kind/$n.db" || differ+=" $n"
	done
	equals "${differ:-none}" none "$1: no shard's file changed"
}

# refused NAME CODE TEXT...: run exits CODE in preflight, stderr has each
# TEXT, nothing is installed and no shard changed.
refused() {
	local name=$1 code=$2 text
	shift 2
	run_reshard "$code" "$name: run is refused (exit $code)" run plan.cfg --yes
	has err "step preflight      starting" "$name: in preflight"
	if grep -q '^step capture' err; then
		not_ok "$name: capture must not have started"
	fi
	for text in "$@"; do
		has err "$text" "$name: the message says \"$text\""
	done
	nothing_installed "$name: nothing installed on any shard"
	untouched "$name"
}

# fixed NAME: after the cause is removed, the run completes exactly.
fixed() {
	rm -f "$plan_name".journal*
	run_reshard 0 "$1: fixed, the run completes" run plan.cfg --yes
	final_rows "$1: fixed, every row on its owner under to"
}

section not-empty
fresh not-empty
changed=n4
sql n4.db "INSERT INTO orders VALUES (99999999, 'someone', 1, 'there before')"
refused not-empty 2 "table orders on n4, a target of the copy, already holds 1 rows" \
	"a target must start empty"
sql n4.db "DELETE FROM orders"
fixed not-empty

section not-empty-items
fresh not-empty-items
changed=n4
sql n4.db "INSERT INTO items VALUES (99999999, 0, 'someone', x'00', 1)"
refused not-empty-items 2 "table items on n4, a target of the copy, already holds 1 rows"

section missing-table
fresh missing-table
changed=n4
sql n4.db "DROP TABLE items"
refused missing-table 1 "table items is missing on n4, a target of the copy" \
	"create it with the columns and primary key of items on n0"
sql n4.db "CREATE TABLE items (order_id INTEGER NOT NULL, line INTEGER NOT NULL,
	customer TEXT NOT NULL, sku BLOB, qty INTEGER, PRIMARY KEY (order_id, line))"
fixed missing-table

section reshard-pos
fresh reshard-pos
changed=n0
sql n0.db "ALTER TABLE orders ADD COLUMN reshard_pos INTEGER"
refused reshard-pos 1 "table orders has a column reshard_pos, the name its change log needs"
sql n0.db "ALTER TABLE orders DROP COLUMN reshard_pos"
fixed reshard-pos

section other-kind
fresh other-kind
changed=n4
sql n4.db "DROP TABLE orders; CREATE TABLE orders (id INTEGER PRIMARY KEY,
	customer TEXT NOT NULL, amount BLOB, note INTEGER)"
refused other-kind 1 \
	"orders.amount is BLOB (bytes) on n4 but DECIMAL(12,2) (decimal) on n0" \
	"orders.note is INTEGER (integer) on n4 but TEXT (text) on n0" \
	"2 differences"
sql n4.db "DROP TABLE orders; CREATE TABLE orders (id INTEGER PRIMARY KEY,
	customer TEXT NOT NULL, amount NUMERIC(12,2), note VARCHAR(200))"
fixed other-kind

section missing-column
fresh missing-column
changed=n4
sql n4.db "DROP TABLE items; CREATE TABLE items (order_id INTEGER NOT NULL,
	line INTEGER NOT NULL, customer TEXT NOT NULL, sku BLOB,
	PRIMARY KEY (order_id, line))"
refused missing-column 1 "items on n4 has no column qty (INTEGER on n0)"

section other-key
fresh other-key
changed=n4
sql n4.db "DROP TABLE items; CREATE TABLE items (order_id INTEGER NOT NULL,
	line INTEGER NOT NULL, customer TEXT NOT NULL, sku BLOB, qty INTEGER,
	PRIMARY KEY (line, order_id))"
refused other-key 1 "items on n4: the primary key differs from that of items on n0"

section source-dropped
fresh source-dropped
changed=''
sed -i 's/nodes = \["n0", "n1", "n2", "n3", "n4"\]/nodes = ["n0", "n1", "n2", "n4"]/' plan.cfg
refused source-dropped 2 "shard n3 is in \`from\` but not in \`to\`" \
	"keep it in \`to\`"

section between-sources
fresh between-sources
# The same nodes with fewer virtual nodes, n4 added: some rows would move
# from one source to another.
sed -i 's/^to   = { map = "ring"; vnodes = 100;/to   = { map = "ring"; vnodes = 90;/' plan.cfg
grep -q 'vnodes = 90' plan.cfg || bail "between-sources: plan not changed"
refused between-sources 2 "would move onto a source shard" \
	", a source"

# The same maps with no row on any source yet: the maps alone move
# points between sources (keys written during the copy would be copied
# onto a source), and preflight refuses them too.
section between-sources-empty
fresh between-sources-empty
changed="${sources[*]}"
sed -i 's/^to   = { map = "ring"; vnodes = 100;/to   = { map = "ring"; vnodes = 90;/' plan.cfg
for n in "${sources[@]}"; do sql "$n.db" "DELETE FROM orders; DELETE FROM items"; done
refused between-sources-empty 2 "the maps move points onto a source shard although no row has them yet"
changed=''

# A key pinned onto another source with no row yet: a row written later
# would be copied onto that source; preflight refuses the pin by itself.
section pinned-empty
fresh pinned-empty isolate
read -r pin_from _ < <(owners nobody-yet)
pin_to=n0
[ "$pin_from" = n0 ] && pin_to=n1
printf 'key,node\ncust-00042,n4\nnobody-yet,%s\n' "$pin_to" >big-customers.csv
refused pinned-empty 2 \
	"the key 'nobody-yet', pinned by an override, would move from $pin_from onto $pin_to, a source shard"

# Rows moving to another table of their own source (a slots map doubling
# its tables in place) are refused too: that table is a source's, under
# its fence and capture, and its delete log runs until final-check.
section within-source
fresh within-source
changed=n0
sql n0.db "ALTER TABLE orders RENAME TO orders_0; ALTER TABLE items RENAME TO items_0"
cat >plan.cfg <<PLAN
version = 1;
name = "$plan_name";
hash = "sha256_64";
tables = ( { name = "orders"; key = "customer"; },
           { name = "items"; key = "customer"; } );
shards = ( { name = "n0"; url = "sqlite://n0.db"; } );
from = { map = "slots"; databases = 1; tables_per_db = 1; nodes = ["n0"]; };
to   = { map = "slots"; databases = 1; tables_per_db = 2; nodes = ["n0"]; };
strategy = "split";
PLAN
refused within-source 2 "would move onto a source shard" \
	"_1 on the same source"
changed=''

section misplaced
fresh misplaced
changed=n1
read -r from_n to_n < <(owners cust-00000)
equals "$from_n/$to_n" n3/n3 "misplaced: the oracle puts cust-00000 on n3 (from and to)"
sql n1.db "INSERT INTO orders VALUES (99999, 'cust-00000', 1, 'misplaced')"
refused misplaced 2 "orders on n1: customer 'cust-00000' (id = '99999') belongs to n3" \
	"does not own them under \`from\`"

finish
