#!/usr/bin/env bash
# blob_keys: a table whose primary key is a BLOB that is not UTF-8 (0xff
# bytes).  Keys leave the backend in canonical form (bytes as lowercase
# hex) and the journal keeps each chunk's key that way: it must bound the
# next read exactly and delete exactly those rows, or a run stopped in the
# middle of a step cannot resume from its last chunk.  A crash after chunk 2 of pre-verify and of purge,
# then `run` again: every step done, the row set exact.
. "$(dirname "$0")/lib.sh"
table_sql='(id BLOB PRIMARY KEY, customer_id TEXT NOT NULL,
            amount DECIMAL(12,2), note TEXT)'
begin "$@"

# Every id i becomes the 4 bytes ff, i >> 8, i & 0xff, fe: not UTF-8.
python3 -S -c '
import sys
print("BEGIN;")
for i in range(1, int(sys.argv[1]) + 1):
    print("UPDATE %s SET id = X%s WHERE id = %d;" % ("@T@", "'"'"'ff%04xfe'"'"'" % i, i))
print("COMMIT;")' "$n_rows" >"$root/blob_ids.sql"
sed 's/@T@/orders/' "$root/blob_ids.sql" | sql "$template/master.db" &&
	for db in db0 db1; do
		for t in 0 1; do
			sed "s/@T@/orders_$t/" "$root/blob_ids.sql" |
				sql "$template/$db.db" || exit 1
		done
	done && rm -f "$template"/expected.* ||
	bail "making the ids BLOBs"
equals "$(sql "$template/db0.db" "SELECT count(*) FROM orders_0
	WHERE typeof(id) <> 'blob' OR substr(hex(id), 1, 2) <> 'FF'")" 0 \
	"every id of db0.orders_0 is a BLOB starting with 0xff"

section blob-keys
fresh blob-keys
RESHARD_FAULT=after-chunk:pre-verify:2 run_reshard 99 \
	"blob-keys: crash after chunk 2 of pre-verify" run plan.cfg --yes
equals "$(sql orders-2x.journal "SELECT count(*) > 0 AND
	sum(upto_key NOT LIKE '[\"ff____fe\"]') = 0 FROM chunks WHERE step = 'pre-verify'")" 1 \
	"blob-keys: the journal keeps the chunks' keys canonical (hex)"
RESHARD_FAULT=after-chunk:purge:2 run_reshard 99 \
	"blob-keys: resume, crash after chunk 2 of purge" run plan.cfg --yes
has err "step pre-verify     resuming" "blob-keys: pre-verify resumed"
run_reshard 0 "blob-keys: resume to the end" run plan.cfg --yes
has err "step purge          resuming" "blob-keys: purge resumed"
complete blob-keys

# SQLite keeps whatever a column is given: a key stored as TEXT in the
# BLOB column has a canonical form (hex) that would bind back as a BLOB,
# not as that text, so a range bounded by it could skip rows.  The read
# refuses it, naming table, column and value, before anything is fenced;
# once the key is a BLOB again the run completes.
section text-in-blob
fresh text-in-blob
old=$(sql db0.db "SELECT hex(id) FROM orders_0 ORDER BY id LIMIT 1 OFFSET 7")
sql db0.db "UPDATE orders_0 SET id = 'k7' WHERE id = X'$old'"
run_reshard 2 "text-in-blob: the run stops at preflight (exit 2)" run plan.cfg --yes
has err "table orders_0: primary key column id (BLOB) holds TEXT 'k7', whose canonical bytes form is '6b37'" \
	"text-in-blob: the key is named with its storage and canonical form"
status_json
equals "$(step_field preflight state)/$(step_field fence state)/$(jget '$.fenced')" failed/pending/0 \
	"text-in-blob: preflight failed, nothing fenced"
sql db0.db "UPDATE orders_0 SET id = X'$old' WHERE id = 'k7'"
run_reshard 0 "text-in-blob: once the key is a BLOB again, the run completes" run plan.cfg --yes
complete text-in-blob
finish
