#!/usr/bin/env bash
# The servers compute a key's point as reshard does: the expressions of
# pg_sql_point and the trigger statements of mysql_sql_point_set (run in
# a BEFORE INSERT trigger, as the fence and the guard run them), all four
# hashes, for text and integer keys, run by PostgreSQL and by MariaDB
# over the keys of integration/point_sql_gen (the hash test vectors, whose
# sha256_64 points come from Python's hashlib, fnv1a_64 from a Python
# FNV-1a and java from a JVM, and 100,000 pseudo-random text keys and
# 20,000 integer keys checked against reshard's C implementation, the
# non-negative ones also in a ZEROFILL column on MariaDB), give
# exactly the expected points, NULL where reshard refuses the key.
# Then which keys move: the servers test those points against the moving
# set of seven pairs of maps (a ring of 4 growing to 5, ranges handing a
# quarter's half to a new node, modulo 4 -> 5, slots 2x4 -> 4x4 by
# sha256_64 over cliente:0 ... cliente:49999; ranges by value with
# identity over 0 ... 2000; a ring by fnv1a_64 and a modulo by java), and
# tests/oracle.py, which shares no code with reshard, says the same of
# every key.
# Usage: integration/scenario_point_sql.sh (after integration/servers.sh
# start).
set -uo pipefail
export LC_ALL=C.UTF-8
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck disable=SC1091
source "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}/env"
gen=${RESHARD_POINT_SQL_GEN:-$root/build/point_sql_gen}
tmp=$(mktemp -d /tmp/reshard-point-sql.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)) && echo "ok - $1"; }
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $1"
	[ -z "${2:-}" ] || sed 's/^/#   /' "$2"
}
pg_app=${RESHARD_PG_PRIMARY_URL:?no PostgreSQL primary in the servers env}
my_app=${RESHARD_MY_PRIMARY_URL:?no MariaDB primary in the servers env}
pg() { PGOPTIONS="-c client_min_messages=warning" psql -X -w -q -At -F $'\t' -P 'null=\N' -v ON_ERROR_STOP=1 "$@"; }
my() { # my URL ARGS...
	local url=$1
	shift
	[[ $url =~ ^mysql://([^:]+):([^@]+)@([^:/]+):([0-9]+)/(.+)$ ]] || return 2
	mariadb --no-defaults --batch --skip-column-names --local-infile=1 \
		--default-character-set=utf8mb4 -u "${BASH_REMATCH[1]}" \
		-p"${BASH_REMATCH[2]}" -h "${BASH_REMATCH[3]}" \
		-P "${BASH_REMATCH[4]}" "${BASH_REMATCH[5]}" "$@"
}

# same NAME EXPECTED GOT: the files are equal, else the first differences.
same() {
	if [ -s "$2" ] && cmp -s "$2" "$3"; then
		ok "$1 ($(wc -l <"$3") keys)"
	else
		{
			echo "expected $(wc -l <"$2") lines, got $(wc -l <"$3"); first differences (< expected, > got):"
			diff "$2" "$3" | grep '^[<>]' | head -n 10
		} >"$tmp/why"
		not_ok "$1" "$tmp/why"
	fi
}

"$gen" "$tmp" || { echo "Bail out! point_sql_gen failed"; exit 1; }
cut -f1,2 "$tmp/text.tsv" >"$tmp/tk.tsv"
cut -f1,2 "$tmp/int.tsv" >"$tmp/ti.tsv"
cat "$tmp/text.tsv" "$tmp/int.tsv" >"$tmp/want"

pg "$pg_app" -c "DROP DATABASE IF EXISTS point_sql WITH (FORCE)" -c "CREATE DATABASE point_sql"
pg_db=${pg_app%/*}/point_sql
pg "$pg_db" -c "CREATE TABLE tk (n int, hex text, k text)" \
	-c "CREATE TABLE ti (n int, k bigint)" \
	-c "\\copy tk (n, hex) FROM '$tmp/tk.tsv'" \
	-c "\\copy ti FROM '$tmp/ti.tsv'" \
	-c "UPDATE tk SET k = convert_from(decode(hex, 'hex'), 'UTF8')"
pg "$pg_db" -f "$tmp/pg.sql" >"$tmp/pg.got" 2>&1
same "PostgreSQL computes every point as reshard does" "$tmp/want" "$tmp/pg.got"

# Every MariaDB table has a primary key: the replica applies row events
# by it, and without one it scans the table for each updated row (the
# 120,037-row UPDATE below kept pair 1's replica 25 minutes behind, and
# the doubling scenarios run after it on the same servers refused it).
my "$my_app" -e "DROP DATABASE IF EXISTS point_sql; CREATE DATABASE point_sql"
my_db=${my_app%/*}/point_sql
my "$my_db" -e "CREATE TABLE tk (n int PRIMARY KEY, hex text, k text) DEFAULT CHARSET=utf8mb4;
	CREATE TABLE ti (n int PRIMARY KEY, k bigint);
	LOAD DATA LOCAL INFILE '$tmp/tk.tsv' INTO TABLE tk (n, hex);
	LOAD DATA LOCAL INFILE '$tmp/ti.tsv' INTO TABLE ti;
	UPDATE tk SET k = CONVERT(UNHEX(hex) USING utf8mb4)"
# MariaDB prints NULL where PostgreSQL prints \N.
nulls() { awk 'BEGIN { FS = OFS = "\t" } { for (i = 1; i <= NF; i++) if ($i == "NULL") $i = "\\N"; print }'; }
my "$my_db" <"$tmp/my.sql" 2>&1 | nulls >"$tmp/my.got"
same "MariaDB computes every point as reshard does" "$tmp/want" "$tmp/my.got"
# The keys that latin1 holds, in a latin1 column: hashed as their UTF-8.
my "$my_db" -e "ALTER TABLE tk ADD COLUMN l varchar(200) CHARACTER SET latin1;
	SET SESSION sql_mode = '';
	UPDATE tk SET l = k WHERE CAST(CONVERT(CONVERT(k USING latin1) USING utf8mb4) AS BINARY) = CAST(k AS BINARY)"
my "$my_db" -e "SELECT n FROM tk WHERE l IS NOT NULL ORDER BY n" >"$tmp/latin1.n"
awk -F'\t' 'NR == FNR { keep[$1] = 1; next } ($1 in keep)' "$tmp/latin1.n" "$tmp/text.tsv" |
	cat >"$tmp/want-latin1"
my "$my_db" <"$tmp/my-latin1.sql" 2>&1 | nulls >"$tmp/my-latin1.got"
same "MariaDB hashes a latin1 column's keys as their UTF-8 text" "$tmp/want-latin1" "$tmp/my-latin1.got"

# A ZEROFILL integer key: MariaDB's text of it is padded ("00042"), and
# the point is that of its digits alone.  The integer keys' statements on
# such a column, for the keys it holds (not the negative ones).
sed -n '/^DROP TABLE IF EXISTS pt_ti;/,/FROM pt_ti ORDER BY n;$/p' "$tmp/my.sql" |
	sed -e 's/pt_ti/pt_tz/g' -e 's/ k bigint,/ k bigint(20) unsigned zerofill,/' \
		-e 's/ FROM ti;$/ FROM ti WHERE k >= 0;/' -e 's/^SELECT n, k, /SELECT n, k + 0, /' \
		>"$tmp/my-zerofill.sql"
awk -F'\t' '$2 !~ /^-/' "$tmp/int.tsv" >"$tmp/want-zerofill"
my "$my_db" <"$tmp/my-zerofill.sql" 2>&1 | nulls >"$tmp/my-zerofill.got"
same "MariaDB hashes a ZEROFILL key's digits, not its padded text" "$tmp/want-zerofill" "$tmp/my-zerofill.got"

# Which keys move, by SQL, against the oracle.
seq 0 49999 | sed 's/^/cliente:/' >"$tmp/km.keys"
seq 0 2000 >"$tmp/ki.keys"
for t in km ki; do
	awk '{ print NR - 1 "\t" $0 }' "$tmp/$t.keys" >"$tmp/$t.tsv"
done
pg "$pg_db" -c "CREATE TABLE km (n int, k text)" -c "CREATE TABLE ki (n int, k bigint)" \
	-c "\\copy km FROM '$tmp/km.tsv'" -c "\\copy ki FROM '$tmp/ki.tsv'"
my "$my_db" -e "CREATE TABLE km (n int PRIMARY KEY, k text) DEFAULT CHARSET=utf8mb4;
	CREATE TABLE ki (n int PRIMARY KEY, k bigint);
	LOAD DATA LOCAL INFILE '$tmp/km.tsv' INTO TABLE km;
	LOAD DATA LOCAL INFILE '$tmp/ki.tsv' INTO TABLE ki"
while IFS=$'\t' read -r name hash keys from to; do
	python3 "$root/tests/oracle.py" --hash "$hash" --from "$from" --to "$to" \
		<"$tmp/$keys.keys" | awk -F'\t' '{ print NR - 1 "\t" $4 }' >"$tmp/$name.want"
	grep -q moves "$tmp/$name.want" && grep -q stays "$tmp/$name.want" ||
		not_ok "$name: the oracle has keys that move and keys that stay"
	pg "$pg_db" -f "$tmp/moves-$name.pg.sql" >"$tmp/$name.pg" 2>&1
	same "$name: PostgreSQL tells the keys that move as the oracle does" "$tmp/$name.want" "$tmp/$name.pg"
	my "$my_db" <"$tmp/moves-$name.my.sql" >"$tmp/$name.my" 2>&1
	same "$name: MariaDB tells the keys that move as the oracle does" "$tmp/$name.want" "$tmp/$name.my"
done <"$tmp/moves.tsv"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
