# tests/doubling/lib.sh: what the doubling scenarios share.  Sourced, not run.
# shellcheck shell=bash
#
# Each scenario (tests/doubling/NAME.sh, a ctest of its own) tests `reshard
# run` with the doubling strategy on SQLite shards, needing no server: two
# primaries db0, db1 (slot tables orders_0, orders_1) become four, db2 and
# db3 being the replicas reshard makes.  It starts from a few thousand rows
# (NULL and empty notes, unicode and quoted keys), each in the physical
# table that owns it under `from`, and ends by comparing row sets exactly:
# every row once, on the physical table that owns it under `to`, every
# column unchanged.  Who owns a key comes from tests/oracle.py, a Python
# implementation of the hashes and maps that shares no code with reshard,
# so that a bug in reshard's hash or map code cannot move the rows and the
# expectation together.
#
# A scenario script:
#
#     #!/usr/bin/env bash
#     # NAME: what it checks, in a sentence or two.
#     . "$(dirname "$0")/lib.sh"
#     begin "$@"            # checks the tools, makes this script's template
#     section NAME          # times what follows
#     fresh NAME            # a folder with the initial db0, db1 and plan.cfg
#     run_reshard 0 "NAME: run --yes" run plan.cfg --yes
#     complete "NAME"       # every step done, unfenced, rows exact
#     finish                # prints "N passed, M failed", exits 1 if any failed
#
# Usage of a scenario: tests/doubling/NAME.sh PATH/TO/reshard (needs the
# sqlite3 shell and python3).  It prints "ok - …" / "not ok - …" per check
# (details indented as "#" comments) and "N passed, M failed" last.  Each
# script works in its own temporary root, so scenarios can run in parallel.
# Deterministic: no clock or random source decides an outcome, only how
# far a killed run got.
# shellcheck disable=SC2034 # variables the scenario scripts use
set -uo pipefail
export LC_ALL=C
unset RESHARD_FAULT

lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/harness.sh
. "$lib_dir/../harness.sh"
oracle=$lib_dir/../oracle.py
scenario=$(basename "$0" .sh)

steps=(preflight pre-verify fence catch-up promote verify publish unfence purge final-check)
all_done=$(printf '%s=done ' "${steps[@]}")
all_done=${all_done% }
n_rows=3000
n_keys=400
table_sql='(id INTEGER PRIMARY KEY, customer_id TEXT NOT NULL,
            amount DECIMAL(12,2), note TEXT)'
fence_message="writes paused by reshard: run orders-2x, step fence"
# The maps of write_plan's plan, as tests/oracle.py takes them: keep the
# two in step (clean.sh checks that `reshard route` agrees).
# shellcheck disable=SC2054 # the commas are the oracle's
oracle_maps=(--hash sha256_64 --table orders
	--from slots:2:2:db0,db1 --to slots:4:2:db0,db1,db2,db3)

passed=0 failed=0
background=() # pids the cleanup kills: add any process started with &
declare -A clean_chunks clean_rows # filled by clean_counts
dir=''

# ---------------------------------------------------------------------
# Checks.  Each prints one "ok - NAME" or "not ok - NAME" line.

# ---------------------------------------------------------------------
# The script's life: begin, sections, finish.

# begin PATH/TO/reshard: check the tools; make $root, the cleanup traps, the template.
begin() {
	harness_begin doubling "$@"
	template=$root/template
	section setup
	make_template || bail "making the SQLite shards"
	local moving
	moving=$(grep -c moves "$template/routes.tsv")
	ok "made db0, db1: $n_rows rows, $n_keys keys, $moving of them moving"
}

# section NAME: say how long the previous section took, as a comment.
section_name='' section_start=0
# ---------------------------------------------------------------------
# The data and the folders.

# write_plan DIR [BATCH_ROWS [MAX_ROWS_PER_SECOND [PUBLISH_FILE [STRATEGY]]]]
write_plan() {
	cat >"$1/plan.cfg" <<PLAN
version = 1;
name = "orders-2x";
hash = "sha256_64";
tables = ( { name = "orders"; key = "customer_id"; } );
shards = (
  { name = "db0"; url = "sqlite://db0.db"; replica = "db2"; },
  { name = "db1"; url = "sqlite://db1.db"; replica = "db3"; },
  { name = "db2"; url = "sqlite://db2.db"; },
  { name = "db3"; url = "sqlite://db3.db"; }
);
from = { map = "slots"; databases = 2; tables_per_db = 2; nodes = ["db0", "db1"]; };
to   = { map = "slots"; databases = 4; tables_per_db = 2; nodes = ["db0", "db1", "db2", "db3"]; };
strategy = "${5:-doubling}";
options = { batch_rows = ${2:-50}; max_rows_per_second = ${3:-0}; };
publish = { file = "${4:-routing.cfg}"; };
PLAN
}

# make_template: $template/master.db (keys, orders, oracle's routes), db0.db, db1.db.
make_template() {
	mkdir -p "$template" || return 1
	write_plan "$template"
	sql "$template/master.db" <<SQL || return 1
CREATE TABLE keys (n INTEGER PRIMARY KEY, k TEXT NOT NULL UNIQUE);
WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c
                        WHERE n < $n_keys - 1)
INSERT INTO keys SELECT n, CASE n % 10
  WHEN 3 THEN 'клиент-' || n
  WHEN 5 THEN '客户-' || n
  WHEN 7 THEN 'Zoë O''Brien ' || n
  WHEN 9 THEN '🙂 ' || n
  ELSE printf('cust-%05d', n) END FROM c;
CREATE TABLE orders $table_sql;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c
                        WHERE i < $n_rows)
INSERT INTO orders SELECT i,
  (SELECT k FROM keys WHERE n = (i * 7919) % $n_keys),
  CASE WHEN i % 17 = 0 THEN NULL
       ELSE printf('%.2f', ((i * 7907) % 1000000) / 100.0) END,
  CASE WHEN i % 5 = 0 THEN NULL
       WHEN i % 11 = 0 THEN ''
       WHEN i % 3 = 0 THEN 'café ☕ ' || i
       WHEN i % 7 = 0 THEN 'it''s "quoted", ' || i
       ELSE 'note ' || i END
FROM c;
CREATE TABLE routes (key TEXT PRIMARY KEY, from_owner TEXT NOT NULL,
                     to_owner TEXT NOT NULL, moves TEXT, point TEXT);
SQL
	# The owners by the oracle, never by reshard: one key a line.  -S:
	# the oracle needs no site packages, nor the time they take to load.
	sql "$template/master.db" "SELECT k FROM keys ORDER BY n" |
		python3 -S "$oracle" "${oracle_maps[@]}" >"$template/routes.tsv" ||
		return 1
	[ "$(wc -l <"$template/routes.tsv")" -eq "$n_keys" ] || return 1
	sql "$template/master.db" \
		".mode tabs" ".import $template/routes.tsv routes" || return 1
	# Each row into the physical table that owns it under `from`.
	local db t
	for db in db0 db1; do
		for t in 0 1; do
			sql "$template/$db.db" <<SQL || return 1
CREATE TABLE orders_$t $table_sql;
ATTACH '$template/master.db' AS m;
INSERT INTO orders_$t SELECT o.* FROM m.orders o
  JOIN m.routes r ON r.key = o.customer_id
  WHERE r.from_owner = '$db.orders_$t';
SQL
		done
	done
}

# fresh NAME [BATCH_ROWS [MAX_ROWS_PER_SECOND]]: cd to a new $dir: db0, db1, plan.cfg.
fresh() {
	[ -n "$dir" ] && [ -z "${RESHARD_TEST_KEEP:-}" ] && rm -rf "$dir"
	dir=$root/$1
	mkdir -p "$dir"
	cp "$template"/db0.db "$template"/db1.db "$dir"/
	write_plan "$dir" "${2:-50}" "${3:-0}"
	cd "$dir" || exit 1
}

# own_master: a master.db of $dir's own, to change the expected data (expected_rows).
own_master() { cp "$template/master.db" "$dir/master.db"; }

# read_owners: fill from_owner[KEY] and to_owner[KEY] with the oracle's owners.
declare -A from_owner to_owner
read_owners() {
	local key f t
	while IFS=$'\t' read -r key f t; do
		from_owner[$key]=$f to_owner[$key]=$t
	done < <(sql -separator $'\t' "$template/master.db" \
		"SELECT key, from_owner, to_owner FROM routes")
}

# ---------------------------------------------------------------------
# Row sets.  A row is one sorted line owner<TAB>id<TAB>key<TAB>amount<TAB>note,
# values quoted (so NULL and '' differ).

# expected_rows from_owner|to_owner: master.db's rows as they belong under that map.
expected_rows() {
	local master=$template/master.db cache=$template/expected.$1
	if [ -e "$dir/master.db" ]; then
		master=$dir/master.db cache=$dir/expected.$1
		rm -f "$cache"
	fi
	[ -e "$cache" ] || sql -separator $'\t' "$master" \
		"SELECT r.$1, o.id, quote(o.customer_id), quote(o.amount),
		        quote(o.note)
		 FROM orders o JOIN routes r ON r.key = o.customer_id" |
		sort >"$cache"
	cat "$cache"
}

# actual_rows DB...: the rows the shards hold now (and errors, to show as differences).
actual_rows() {
	local db t attach=() query=''
	for db in "$@"; do
		attach+=("ATTACH 'file:$dir/$db.db?mode=ro' AS $db")
		for t in 0 1; do
			query+="${query:+ UNION ALL }SELECT '$db.orders_$t', id,
				quote(customer_id), quote(amount), quote(note)
				FROM $db.orders_$t"
		done
	done
	sql -separator $'\t' :memory: "${attach[@]}" "$query" 2>&1 | sort
}

# same_rows NAME from_owner|to_owner DB...: the shards hold exactly the expected rows.
same_rows() {
	local name=$1 which=$2
	shift 2
	expected_rows "$which" >"$dir/rows.expected"
	actual_rows "$@" >"$dir/rows.actual"
	if cmp -s "$dir/rows.expected" "$dir/rows.actual"; then
		ok "$name ($(wc -l <"$dir/rows.actual") rows exactly)"
		return 0
	fi
	{
		echo "expected $(wc -l <"$dir/rows.expected") rows," \
			"found $(wc -l <"$dir/rows.actual"); first differences" \
			"(< expected, > found):"
		diff "$dir/rows.expected" "$dir/rows.actual" | grep '^[<>]'
	} >"$dir/why"
	not_ok "$name" "$dir/why"
	return 1
}

# final_rows NAME: passes when db0..db3 hold exactly the rows under `to`.
final_rows() { same_rows "$1" to_owner db0 db1 db2 db3; }

# ---------------------------------------------------------------------
# Status, journal, fences.

# complete NAME: three checks: every step done, writes not fenced, final rows exact.
complete() {
	status_json
	equals "$(step_states)" "$all_done" "$1: status shows every step done"
	equals "$(jget '$.fenced')" 0 "$1: status shows writes not fenced"
	final_rows "$1: final row set exact"
}

# journal_chunks STEP: "count|distinct|done" of STEP's chunks in $dir's journal.
journal_chunks() {
	sql -readonly "$dir/orders-2x.journal" \
		"SELECT count(*), count(DISTINCT shard || '/' || table_name || '/'
		        || number), sum(state = 'done')
		 FROM chunks WHERE step = '$1'"
}

# clean_counts: after a clean run: clean_chunks[STEP], clean_rows[STEP], biggest_purge_table.
clean_counts() {
	local s
	status_json
	for s in pre-verify purge final-check; do
		clean_chunks[$s]=$(step_field "$s" chunks)
		clean_rows[$s]=$(step_field "$s" rows)
		[ -n "${clean_chunks[$s]}" ] && [ -n "${clean_rows[$s]}" ] ||
			return 1
	done
	biggest_purge_table=$(sql -readonly "$dir/orders-2x.journal" "SELECT
		max(n) FROM (SELECT count(*) AS n FROM chunks WHERE step = 'purge'
		GROUP BY shard, table_name)")
	[ -n "$biggest_purge_table" ]
}

# fence_triggers DB: how many triggers $dir/DB.db holds.
fence_triggers() {
	sql -readonly "$dir/$1.db" \
		"SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'"
}

# bypass_fence DB TABLE SQL: SQL on a fenced table, its fence triggers
# off for one transaction.  Change capture stays on: the write is logged,
# as any write that fires the table's triggers is.
bypass_fence() {
	local db=$1 table=$2 statements=$3 saved
	local fence="type = 'trigger' AND tbl_name = '$table'
		AND name LIKE 'reshard\\_fence\\_%' ESCAPE '\\'"
	saved=$(sql "$dir/$db.db" "SELECT group_concat(sql, '; ') FROM
		sqlite_schema WHERE $fence")
	sql "$dir/$db.db" "BEGIN;
		$(sql "$dir/$db.db" "SELECT group_concat('DROP TRIGGER \"'
			|| name || '\"', '; ') FROM sqlite_schema WHERE $fence");
		$statements; $saved; COMMIT;"
}

# ---------------------------------------------------------------------
# Waiting.
