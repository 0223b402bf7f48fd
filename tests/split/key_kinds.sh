#!/usr/bin/env bash
# key_kinds: a shard key whose text as the engine hands it over is not its
# canonical text: a BLOB (a binary UUID, as MariaDB's BINARY(16) keys
# are), which SQLite reads as its raw bytes and whose canonical text, the
# one a key is hashed by, is lowercase hex.  Every part of the run must
# place a row by that one text: the copy (rows read), the replay (keys
# from the change log), the recheck under the fence, the live dry-run and
# purge.  Rows deleted and shard keys changed after the copy, before the
# replay: at the end every row is once on the oracle's owner of its hex
# key under `to`, no deleted row anywhere.  And a text shard key with
# COLLATE NOCASE changed only in case ('tenant-7' to 'TENANT-7', another
# owner): the capture logs its old value, or the copy on the old value's
# owner would stay behind, a second live version of the row.
. "$(dirname "$0")/lib.sh"
begin "$@"

section key_kinds
maps ring
dir=$root/key_kinds
mkdir -p "$dir" && cd "$dir" || exit 1

# 600 tenants, 16 bytes each (some of them NUL or 0xff, none UTF-8 as a
# whole).  The oracle is asked with the canonical text, lowercase hex.
"$python" -S - >"$dir/tenants" <<'PY'
for i in range(600):
    h = "%08x%04x4%03x8%03x%012x" % ((i * 2654435761) % 2**32, i,
                                       i % 4096, (7 * i) % 4096, i * 40503)
    h = "ff" + h[2:30] + "00"
    print("X'%s'" % h, h)
PY
cut -d' ' -f2 "$dir/tenants" | xargs "$python" -S "$data" owners \
	"$oracle_from" "$oracle_to" >"$dir/owners" ||
	bail "asking the oracle for the owners"
paste -d' ' "$dir/tenants" "$dir/owners" >"$dir/routes" # as_kept canonical from to
equals "$(wc -l <"$dir/routes")" 600 "key_kinds: the oracle placed 600 tenants"
moving=$(awk '$3 != $4' "$dir/routes" | wc -l)
check "key_kinds: some tenants move to n4 ($moving)" test "$moving" -gt 50

# A name that moves to n4 in lower case and stays on its source in
# capitals.
for i in $(seq 1 300); do
	read -r low_from low_to < <(owners "tenant-$i")
	read -r up_from up_to < <(owners "TENANT-$i")
	if [ "$low_to" = n4 ] && [ "$up_from" = "$low_from" ] &&
		[ "$up_to" = "$low_from" ]; then
		case_id=$i case_src=$low_from
		break
	fi
done
[ -n "${case_id:-}" ] || bail "no name that moves only in lower case"

for n in "${nodes[@]}"; do
	{
		echo "CREATE TABLE named (id INTEGER PRIMARY KEY,
			name TEXT COLLATE NOCASE NOT NULL);"
		[ "$n" = "$case_src" ] &&
			echo "INSERT INTO named VALUES ($case_id, 'tenant-$case_id');"
		echo "CREATE TABLE accounts (id INTEGER PRIMARY KEY,
			tenant BLOB NOT NULL, note TEXT);"
		echo "BEGIN;"
		awk -v n="$n" '$3 == n {
			printf "INSERT INTO accounts VALUES (%d, %s, '\''note %d'\'');\n", NR, $1, NR }' \
			"$dir/routes"
		echo "COMMIT;"
	} | sql "$dir/$n.db" || bail "making $n"
done

plan_tables='( { name = "accounts"; key = "tenant"; },
           { name = "named"; key = "name"; } )' write_plan plan.cfg

# The live dry-run reads the rows and hashes the canonical text.
run_reshard 0 "key_kinds: dry-run" dry-run plan.cfg --summary --format json
equals "$(sql :memory: "SELECT json_extract(readfile('$dir/out'), '\$.moved')")" \
	"$((moving + 1))" "key_kinds: dry-run moves the oracle's $moving + 1 rows"

run_reshard 0 "key_kinds: run --until copy" run plan.cfg --until copy --yes
equals "$(sql "$dir/n4.db" "SELECT count(*) FROM accounts")" "$moving" \
	"key_kinds: the copy put the oracle's $moving movers on n4"
equals "$(sql "$dir/n4.db" "SELECT name FROM named")" "tenant-$case_id" \
	"key_kinds: the copy put tenant-$case_id on n4"

# After the copy: delete three movers of n1 … n3; on n0, give a mover
# the key of a tenant that stays (it must leave n4) and a staying row the
# key of one that moves (it must reach n4).  The replay reads the old keys
# from the change logs, canonical.
read -r -a gone < <(awk '$3 != "n0" && $3 != $4 { print NR }' "$dir/routes" |
	head -3 | tr '\n' ' ')
mover=$(awk '$3 == "n0" && $4 == "n4" { print NR }' "$dir/routes" | sed -n 1p)
move_key=$(awk '$3 == "n0" && $4 == "n4" { print $1 }' "$dir/routes" | sed -n 2p)
stayer=$(awk '$3 == "n0" && $4 == "n0" { print NR }' "$dir/routes" | sed -n 1p)
stay_key=$(awk '$3 == "n0" && $4 == "n0" { print $1 }' "$dir/routes" | sed -n 2p)
for id in "${gone[@]}"; do
	owner=$(awk -v id="$id" 'NR == id { print $3 }' "$dir/routes")
	sql "$dir/$owner.db" "DELETE FROM accounts WHERE id = $id" || bail "deleting $id"
done
# (Three rows that stay are added too: final-check counts deletes only
# from publish on, and would take three fewer rows for lost ones.)
sql "$dir/n0.db" "UPDATE accounts SET tenant = $stay_key WHERE id = $mover;
	UPDATE accounts SET tenant = $move_key WHERE id = $stayer;
	INSERT INTO accounts VALUES (601, $stay_key, 'new'), (602, $stay_key, 'new'),
		(603, $stay_key, 'new')" ||
	bail "changing the keys of $mover and $stayer"
sql "$dir/$case_src.db" "UPDATE named SET name = 'TENANT-$case_id'" ||
	bail "changing the case of tenant-$case_id"

run_reshard 0 "key_kinds: run to the end" run plan.cfg --yes

# Expected: each row on the oracle's owner of its canonical key under
# `to`, with the changes above.
"$python" -S - "$dir/routes" "${gone[*]}" "$mover" "$stay_key" "$stayer" \
	"$move_key" >"$dir/rows.expected" <<'PY'
import sys
routes = [l.split() for l in open(sys.argv[1])]
gone = {int(i) for i in sys.argv[2].split()}
change = {int(sys.argv[3]): sys.argv[4], int(sys.argv[5]): sys.argv[6]}
to = {kept: t for kept, canon, f, t in routes}
out = []
for i, (kept, canon, f, t) in enumerate(routes, 1):
    if i in gone:
        continue
    key = change.get(i, kept)
    out.append("%s\t%d\t%s" % (to[key], i, key[2:-1].upper()))
out += ["n0\t%d\t%s" % (i, sys.argv[4][2:-1].upper()) for i in (601, 602, 603)]
print("\n".join(sorted(out)))
PY
for n in "${nodes[@]}"; do
	sql -separator $'\t' "$dir/$n.db" "SELECT '$n', id, hex(tenant) FROM accounts"
done | sort >"$dir/rows.actual"
if cmp -s "$dir/rows.expected" "$dir/rows.actual"; then
	ok "key_kinds: every row once, on the owner of its canonical key ($(wc -l <"$dir/rows.actual") rows)"
else
	diff "$dir/rows.expected" "$dir/rows.actual" | grep '^[<>]' | head -20 >"$dir/why"
	not_ok "key_kinds: every row once, on the owner of its canonical key" "$dir/why"
fi
equals "$(sql "$dir/n4.db" "SELECT count(*) FROM accounts WHERE id IN ($(
	IFS=,
	echo "${gone[*]}"
))")" 0 "key_kinds: no deleted row came back on n4"
named=$(for n in "${nodes[@]}"; do
	sql "$dir/$n.db" "SELECT '$n:' || name FROM named"
done | tr '\n' ' ')
equals "$named" "$case_src:TENANT-$case_id " \
	"key_kinds: the row whose key changed case is once, on $case_src"
finish
