#!/usr/bin/env bash
# End-to-end tests of `reshard run` with the doubling strategy on SQLite
# shards, needing no server: two primaries db0, db1 (slot tables orders_0,
# orders_1) become four, db2 and db3 being the replicas reshard makes.
#
# Every scenario starts from the same few thousand rows (NULL and empty
# notes, unicode and quoted keys), each placed in the physical table that
# owns it under `from`, in a fresh directory, and ends by comparing the row
# sets exactly: every row once, on the physical table that owns it under
# `to`, every column unchanged.  The scenarios:
#
#    1. a clean run: exit 0, status JSON (every step done, not fenced),
#       the routing file at epoch 1;
#    2. a crash (fault point) after every step and before some, then resume;
#    3. crashes in the middle of verify and purge: the step resumes, the
#       chunks done before the crash are not done again;
#    4. kill -9 at random instants until a run completes;
#    5. a writer inserting and updating throughout, routed by the plan and
#       then by the published routing: fenced writes are refused with the
#       fence message, every write it saw succeed is in the final data;
#    6. a second `run` on the same plan is refused at once, naming the pid;
#    7. a changed plan is refused with what changed;
#    8. abort before publish leaves the sources as they were; abort after
#       publish refuses;
#    9. bad --until, a split plan, no confirmation without a terminal.
#
# Usage: tests/test_doubling.sh PATH/TO/reshard  (needs the sqlite3 CLI).
# Prints "ok - …" / "not ok - …" per check and "N passed, M failed" last;
# exits 1 when a check failed.  Deterministic: no clock or random source
# decides an outcome, only how far a killed run got.
set -uo pipefail

bin=${1:?usage: test_doubling.sh PATH/TO/reshard}
case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac
export LC_ALL=C
unset RESHARD_FAULT

# The shards and journals live in memory when /dev/shm is there: every
# step fsyncs the journal, and on a disk that alone would take minutes.
# RESHARD_TEST_TMPDIR chooses another place; RESHARD_TEST_KEEP=1 keeps
# every scenario's folder (else each goes when the next one starts).
base=${RESHARD_TEST_TMPDIR:-}
if [ -z "$base" ]; then
	base=${TMPDIR:-/tmp}
	[ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
fi
root=$(mktemp -d "$base/reshard-doubling.XXXXXX") || exit 1
background=()
cleanup() {
	for pid in "${background[@]}"; do
		kill -9 "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -n "${RESHARD_TEST_KEEP:-}" ]; then
		echo "# kept $root"
	else
		rm -rf "$root"
	fi
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 141' PIPE
trap 'exit 143' TERM

passed=0 failed=0
ok() {
	passed=$((passed + 1))
	echo "ok - $1"
}
not_ok() { # not_ok NAME [DETAIL FILE]: the detail, indented, as comments
	failed=$((failed + 1))
	echo "not ok - $1"
	if [ $# -gt 1 ] && [ -s "$2" ]; then
		head -n 15 "$2" | sed 's/^/#   /'
	fi
}
check() { # check NAME COMMAND...: the command must succeed
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}

# run_reshard CODE NAME ARGS...: run reshard in the current scenario's
# folder with its output in $dir/out and $dir/err; the exit status must be
# CODE.  Returns 0 when it was.
run_reshard() {
	local want=$1 name=$2 got
	shift 2
	"$bin" "$@" >"$dir/out" 2>"$dir/err" </dev/null
	got=$?
	if [ "$got" -eq "$want" ]; then
		ok "$name"
		return 0
	fi
	echo "exit $got, expected $want; stderr:" >"$dir/why"
	cat "$dir/err" >>"$dir/why"
	not_ok "$name" "$dir/why"
	return 1
}

# has FILE TEXT NAME: FILE contains TEXT (fixed string).
has() {
	if grep -qF -- "$2" "$1"; then
		ok "$3"
	else
		{
			echo "no \"$2\" in:"
			cat "$1"
		} >"$dir/why"
		not_ok "$3" "$dir/why"
	fi
}

# equals GOT WANT NAME
equals() {
	if [ "$1" == "$2" ]; then
		ok "$3"
	else
		echo "got '$1', expected '$2'" >"$dir/why"
		not_ok "$3" "$dir/why"
	fi
}

# section NAME: say how long the previous section took, as a comment.
section_name='' section_start=0
section() {
	local now=$(($(date +%s%N) / 1000000))
	[ -n "$section_name" ] &&
		echo "# $section_name took $((now - section_start)) ms"
	section_name=$1 section_start=$now
}

sql() { sqlite3 -batch -cmd '.timeout 5000' "$@"; }

# ---------------------------------------------------------------------
# The data, made once: keys, rows, and the owner of every key under
# `from` and `to` as `reshard route` says, in template/master.db.

steps=(preflight fence catch-up promote verify publish unfence purge final-check)
n_rows=3000
n_keys=400
template=$root/template
mkdir -p "$template"

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

table_sql='(id INTEGER PRIMARY KEY, customer_id TEXT NOT NULL,
            amount DECIMAL(12,2), note TEXT)'

make_template() {
	local keys=()
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
	mapfile -t keys < <(sql "$template/master.db" "SELECT k FROM keys")
	"$bin" route "$template/plan.cfg" -- "${keys[@]}" \
		>"$template/routes.tsv" || return 1
	sql "$template/master.db" \
		".mode tabs" ".import $template/routes.tsv routes" || return 1
	# Each row into the physical table that owns it under `from`.
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

# fresh NAME [BATCH_ROWS [MAX_ROWS_PER_SECOND]]: a new scenario folder with
# the initial shards, sets $dir and cds into it.
fresh() {
	[ -n "${dir:-}" ] && [ -z "${RESHARD_TEST_KEEP:-}" ] && rm -rf "$dir"
	dir=$root/$1
	mkdir -p "$dir"
	cp "$template"/db0.db "$template"/db1.db "$dir"/
	write_plan "$dir" "${2:-50}" "${3:-0}"
	cd "$dir" || exit 1
}

# The rows of the data (master.db: the scenario's own copy when it changed
# the data, else the template's) as they should sit under map WHICH
# (from_owner or to_owner): one line per row, sorted,
# owner<TAB>id<TAB>key<TAB>amount<TAB>note, values quoted (NULL apart from
# '').
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

# own_master: the scenario changes the data; expected_rows follows.
own_master() { cp "$template/master.db" "$dir/master.db"; }

# The rows the shards DB… hold now, in the same form (errors too, such as
# a missing file or table, so that they show as differences).
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

# same_rows NAME WHICH DB…: the shards hold exactly the expected rows.
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

final_rows() { same_rows "$1" to_owner db0 db1 db2 db3; }

# status_json: the status JSON of the scenario's plan in $dir/status.json.
status_json() {
	if ! "$bin" status "$dir/plan.cfg" --format json >"$dir/status.json" \
		2>"$dir/status.err"; then
		{
			echo "stdout:"
			cat "$dir/status.json"
			echo "stderr:"
			cat "$dir/status.err"
		} >"$dir/why"
		not_ok "status of $dir failed" "$dir/why"
	fi
}

# jget PATH: a value of $dir/status.json (booleans as 0/1).
jget() {
	sql :memory: "SELECT json_extract(readfile('$dir/status.json'), '$1')"
}

# step_field STEP FIELD: a field of one step in $dir/status.json.
step_field() {
	sql :memory: "SELECT json_extract(value, '\$.$2')
		FROM json_each(readfile('$dir/status.json'), '\$.steps')
		WHERE json_extract(value, '\$.name') = '$1'"
}

# The state of every step, "name=state name=state …".
step_states() {
	sql :memory: "SELECT group_concat(json_extract(value, '\$.name') || '='
		|| json_extract(value, '\$.state'), ' ')
		FROM json_each(readfile('$dir/status.json'), '\$.steps')"
}
all_done=$(printf '%s=done ' "${steps[@]}")
all_done=${all_done% }

# complete NAME: the run is finished, unfenced, every row on its owner.
complete() {
	status_json
	equals "$(step_states)" "$all_done" "$1: status shows every step done"
	equals "$(jget '$.fenced')" 0 "$1: status shows writes not fenced"
	final_rows "$1: final row set exact"
}

# journal_chunks STEP: "count distinct done" of STEP's chunks in the journal.
journal_chunks() {
	sql -readonly "$dir/orders-2x.journal" \
		"SELECT count(*), count(DISTINCT shard || '/' || table_name || '/'
		        || number), sum(state = 'done')
		 FROM chunks WHERE step = '$1'"
}

# fence_triggers DB: how many triggers DB holds.
fence_triggers() {
	sql -readonly "$dir/$1.db" \
		"SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'"
}

# bypass_fence DB TABLE SQL: run SQL on a fenced TABLE, taking its fence
# triggers off and putting them back in the same transaction.
bypass_fence() {
	local db=$1 table=$2 statements=$3 saved
	saved=$(sql "$dir/$db.db" "SELECT group_concat(sql, '; ') FROM
		sqlite_schema WHERE type = 'trigger' AND tbl_name = '$table'")
	sql "$dir/$db.db" "BEGIN;
		$(sql "$dir/$db.db" "SELECT group_concat('DROP TRIGGER \"'
			|| name || '\"', '; ') FROM sqlite_schema
			WHERE type = 'trigger' AND tbl_name = '$table'");
		$statements; $saved; COMMIT;"
}

if ! command -v sqlite3 >/dev/null; then
	echo "not ok - the sqlite3 command-line shell is needed"
	echo "0 passed, 1 failed"
	exit 1
fi
section setup
if ! make_template; then
	echo "not ok - making the SQLite shards"
	echo "0 passed, 1 failed"
	exit 1
fi
ok "made db0, db1: $n_rows rows, $n_keys keys, $(grep -c moves "$template/routes.tsv") of them moving"

# ---------------------------------------------------------------------
# 1. A clean run.
section clean
fresh clean
run_reshard 0 "clean: run --yes" run plan.cfg --yes
complete "clean"
equals "$(jget '$.epoch')" 1 "clean: status shows epoch 1"
check "clean: routing file has epoch 1" grep -qE '^epoch = 1L?;$' routing.cfg
check "clean: no fence trigger left on any shard" \
	test "$(fence_triggers db0)$(fence_triggers db1)$(fence_triggers db2)$(fence_triggers db3)" = 0000
declare -A clean_chunks clean_rows
for s in verify purge final-check; do
	clean_chunks[$s]=$(step_field "$s" chunks)
	clean_rows[$s]=$(step_field "$s" rows)
done
biggest_purge_table=$(sql -readonly orders-2x.journal "SELECT max(n) FROM
	(SELECT count(*) AS n FROM chunks WHERE step = 'purge'
	 GROUP BY shard, table_name)")
if [ "${clean_chunks[verify]:-0}" -gt 10 ] && [ "${clean_chunks[purge]:-0}" -gt 10 ]; then
	ok "clean: many chunks (verify ${clean_chunks[verify]}, purge ${clean_chunks[purge]})"
else
	not_ok "clean: many chunks (verify ${clean_chunks[verify]:-?}, purge ${clean_chunks[purge]:-?})"
fi
run_reshard 0 "clean: run again after the end does nothing" run plan.cfg --yes
has err "done earlier" "clean: run again says the steps were done earlier"
final_rows "clean: row set unchanged by a second run"

# ---------------------------------------------------------------------
# 2. A crash at every step boundary, then resume.
section step-boundaries
for s in "${steps[@]}"; do
	fresh "after-$s"
	RESHARD_FAULT=after-step:$s run_reshard 99 "after-step:$s: crash" \
		run plan.cfg --yes
	# The fence outlives the process: on from fence until unfence.
	case "$s" in
	fence | catch-up | promote | verify | publish) fenced=1 ;;
	*) fenced=0 ;;
	esac
	status_json
	equals "$(jget '$.fenced')" "$fenced" \
		"after-step:$s: status after the crash shows fenced = $fenced"
	run_reshard 0 "after-step:$s: resume" run plan.cfg --yes
	has err "step $(printf '%-14s' "$s") done earlier" \
		"after-step:$s: resume skips $s, recorded done before the crash"
	complete "after-step:$s"
done
for s in fence promote publish purge; do
	fresh "before-$s"
	RESHARD_FAULT=before-step:$s run_reshard 99 "before-step:$s: crash" \
		run plan.cfg --yes
	status_json
	equals "$(step_field "$s" state)/$(step_field "$s" attempts)" pending/0 \
		"before-step:$s: $s not begun"
	run_reshard 0 "before-step:$s: resume" run plan.cfg --yes
	status_json
	equals "$(step_field "$s" attempts)" 1 "before-step:$s: $s run once"
	complete "before-step:$s"
done

# ---------------------------------------------------------------------
# 3. Crashes in the middle of verify and purge: the step resumes.
section mid-step
fresh mid-verify
own_master
RESHARD_FAULT=after-chunk:verify:3 run_reshard 99 "mid-verify: crash after chunk 3" \
	run plan.cfg --yes
status_json
equals "$(step_field verify state)/$(step_field verify chunks)" running/3 \
	"mid-verify: journal has verify running with 3 chunks done"
# Change the copy of a moving row of chunk 1 on its new owner: verify
# would notice if it did that chunk again.  The change is expected to
# survive (verify passed that chunk before the change).
tampered=$(sql orders-2x.journal "SELECT CAST(json_extract(upto_key, '\$[0]')
	AS INTEGER) FROM chunks WHERE step = 'verify' AND shard = 'db0'
	AND table_name = 'orders_0' AND number = 0")
read -r tampered_id tampered_owner < <(sql -separator ' ' master.db \
	"SELECT o.id, r.to_owner FROM orders o JOIN routes r ON r.key = o.customer_id
	 WHERE r.from_owner = 'db0.orders_0' AND r.moves = 'moves'
	   AND o.id <= ${tampered:-0} ORDER BY o.id LIMIT 1")
if [ -n "${tampered_id:-}" ] &&
	bypass_fence "${tampered_owner%%.*}" "${tampered_owner#*.}" \
		"UPDATE ${tampered_owner#*.} SET note = 'changed after verify'
		 WHERE id = $tampered_id" &&
	sql master.db "UPDATE orders SET note = 'changed after verify'
		WHERE id = $tampered_id"; then
	ok "mid-verify: changed row $tampered_id on $tampered_owner (chunk 1, verified)"
else
	not_ok "mid-verify: change a row of a verified chunk"
fi
run_reshard 0 "mid-verify: resume" run plan.cfg --yes
has err "step verify         resuming" "mid-verify: verify resumed, not restarted"
status_json
equals "$(step_field verify attempts)" 2 "mid-verify: verify attempts = 2"
equals "$(step_field verify chunks)" "${clean_chunks[verify]}" \
	"mid-verify: verify chunks = a clean run's"
# The step's rows are those of the whole step, as in a clean run, not
# those of its last attempt.
equals "$(step_field verify rows)" "${clean_rows[verify]}" \
	"mid-verify: verify rows = a clean run's"
equals "$(journal_chunks verify)" \
	"${clean_chunks[verify]}|${clean_chunks[verify]}|${clean_chunks[verify]}" \
	"mid-verify: journal chunks of verify unique and done"
complete "mid-verify"

fresh mid-purge
RESHARD_FAULT=after-chunk:purge:5 run_reshard 99 "mid-purge: crash after chunk 5" \
	run plan.cfg --yes
status_json
equals "$(step_field purge state)/$(step_field purge chunks)" running/5 \
	"mid-purge: journal has purge running with 5 chunks done"
# The resumed process must finish only the chunks left: the fault point
# one beyond them must not be reached (it counts the step's chunks in this
# process; fault-count below checks that it does).
left=$((${clean_chunks[purge]:-0} - 5))
RESHARD_FAULT=after-chunk:purge:$((left + 1)) run_reshard 0 \
	"mid-purge: resume finishes at most the $left chunks left" run plan.cfg --yes
has err "step purge          resuming" "mid-purge: purge resumed, not restarted"
status_json
equals "$(step_field purge attempts)" 2 "mid-purge: purge attempts = 2"
equals "$(step_field purge chunks)" "${clean_chunks[purge]}" \
	"mid-purge: purge chunks = a clean run's"
equals "$(step_field purge rows)" "${clean_rows[purge]}" \
	"mid-purge: purge rows = a clean run's"
equals "$(journal_chunks purge)" \
	"${clean_chunks[purge]}|${clean_chunks[purge]}|${clean_chunks[purge]}" \
	"mid-purge: journal chunks of purge unique and done"
complete "mid-purge"

# The fault point counts the chunks the step finished in this process
# (engine.h), over all its tables: one more than the biggest table has
# must still fire.
section fault-count
fresh fault-count
run_reshard 0 "fault-count: run --until unfence" run plan.cfg --until unfence --yes
n=$((biggest_purge_table + 1))
RESHARD_FAULT=after-chunk:purge:$n run_reshard 99 \
	"fault-count: after-chunk:purge:$n fires (purge has ${clean_chunks[purge]} chunks, at most $biggest_purge_table a table)" \
	run plan.cfg --yes
run_reshard 0 "fault-count: resume" run plan.cfg --yes
complete "fault-count"

# ---------------------------------------------------------------------
# 4. kill -9 at random instants until a run completes.  Small chunks and
# a throttled purge make the run last long enough to be cut anywhere.  The
# first kills come within 60 ms, among the short first steps; then the
# window grows with each attempt, as final-check starts its count over
# when resumed and needs one uninterrupted pass.
section sigkill
fresh sigkill 10 3000
RANDOM=20240611
attempts=0 rc=1 killed_in=()
while [ "$rc" -ne 0 ] && [ "$attempts" -lt 40 ]; do
	attempts=$((attempts + 1))
	window=$((attempts <= 6 ? 60 : 100 * attempts))
	delay=$((RANDOM % window))
	"$bin" run plan.cfg --yes >out 2>>err </dev/null &
	pid=$!
	sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rc=$?
	if [ "$rc" -ne 0 ]; then
		killed_in+=("$(sql -readonly orders-2x.journal "SELECT coalesce(
			(SELECT name FROM steps WHERE state = 'running'),
			(SELECT 'after ' || name FROM steps WHERE state = 'done'
			 ORDER BY first_begun DESC LIMIT 1), 'start')" \
			2>/dev/null)@${delay}ms")
	fi
done
if [ "$rc" -eq 0 ]; then
	ok "sigkill: a run completed after $((attempts - 1)) kills"
else
	not_ok "sigkill: no run completed in 40 attempts (last exit $rc)" err
fi
echo "# killed in: ${killed_in[*]}"
complete "sigkill"

# ---------------------------------------------------------------------
# 5. A writer throughout the run.  It routes each write with `reshard
# route` by the from map until the routing file exists, then by the to
# map, and records in writer.log every write that succeeded, in
# writer.rejected every write refused by the fence.
section writer
fresh writer
own_master
fence_message="writes paused by reshard: run orders-2x, step fence"
mapfile -t writer_keys < <(sql master.db "SELECT k FROM keys WHERE n % 3 = 0")
mapfile -t writer_rows < <(sql -separator $'\t' master.db \
	"SELECT id, customer_id FROM orders WHERE id % 7 = 0 ORDER BY id")
writer() {
	local i=0 id key owner column note amount out verb
	while [ ! -e writer.stop ]; do
		i=$((i + 1))
		echo "$i" >writer.iter
		column=2
		[ -e routing.cfg ] && column=3
		note="writer $i: ünïcødé '$i'"
		amount=$((i * 37 % 100000)).$((i % 10))0
		if [ $((i % 2)) -eq 1 ]; then
			verb=insert id=$((100000 + i))
			key=${writer_keys[$((i % ${#writer_keys[@]}))]}
		else
			verb=update
			IFS=$'\t' read -r id key <<<"${writer_rows[$((i * 13 % ${#writer_rows[@]}))]}"
		fi
		if ! owner=$("$bin" route plan.cfg -- "$key" 2>&1) ||
			[[ "$owner" != "$key"$'\t'* ]]; then
			echo "route $key: $owner" >>writer.failed
			continue
		fi
		owner=$(cut -f$column <<<"$owner")
		if [ "$verb" = insert ]; then
			out=$(sql "${owner%%.*}.db" "INSERT INTO ${owner#*.}
				VALUES ($id, '${key//\'/\'\'}', $amount,
				        '${note//\'/\'\'}'); SELECT changes();" 2>&1)
		else
			out=$(sql "${owner%%.*}.db" "UPDATE ${owner#*.}
				SET amount = $amount, note = '${note//\'/\'\'}'
				WHERE id = $id; SELECT changes();" 2>&1)
		fi
		if [ "$out" = 1 ]; then
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$verb" "$id" "$key" \
				"$amount" "$note" "$owner" >>writer.log
		elif [[ "$out" == *"$fence_message"* ]]; then
			echo "$verb $id on $owner: $out" >>writer.rejected
		else
			echo "$verb $id on $owner: $out" >>writer.failed
		fi
	done
}
# wait_for WHAT SECONDS COMMAND...: poll COMMAND every 20 ms.
wait_for() {
	local what=$1 tries=$(($2 * 50))
	shift 2
	while ! "$@"; do
		tries=$((tries - 1))
		if [ "$tries" -le 0 ]; then
			echo "timed out waiting for $what" >&2
			return 1
		fi
		sleep 0.02
	done
}
log_lines() { [ -e "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ]; }
iter_past() { [ "$(cat writer.iter 2>/dev/null || echo 0)" -ge "$1" ]; }
touch writer.log
writer &
writer_pid=$!
background+=("$writer_pid")
check "writer: writes go through before the fence" \
	wait_for "10 writes" 20 log_lines writer.log 10
run_reshard 0 "writer: run --until fence" run plan.cfg --until fence --yes
status_json
equals "$(jget '$.fenced')" 1 "writer: status shows writes fenced"
check "writer: its writes are refused while fenced" \
	wait_for "a refused write" 20 log_lines writer.rejected 1
sql db0.db "INSERT INTO orders_0 VALUES (99999, 'cust-00000', 1, 'x')" \
	>fenced.out 2>&1
check "writer: an insert on fenced db0 fails" test "$?" -ne 0
has fenced.out "$fence_message" "writer: the refusal names the run and the fence"
run_reshard 0 "writer: run --until publish" run plan.cfg --until publish --yes
sql db2.db "UPDATE orders_1 SET note = 'x'" >fenced.out 2>&1
check "writer: an update on promoted db2 fails before unfence" test "$?" -ne 0
has fenced.out "$fence_message" "writer: the replica carries the fence"
# No write may still be on its way by the routing read before publish.
iteration=$(cat writer.iter)
check "writer: writer routes by the published routing" \
	wait_for "two writer iterations" 20 iter_past $((iteration + 2))
successes=$(wc -l <writer.log)
run_reshard 0 "writer: run to the end" run plan.cfg --yes
check "writer: writes go through after unfence" \
	wait_for "10 more writes" 20 log_lines writer.log $((successes + 10))
touch writer.stop
wait "$writer_pid"
check "writer: no write failed other than by the fence" test ! -s writer.failed
[ -s writer.failed ] && head -n 5 writer.failed | sed 's/^/#   /'
# Expected: the initial rows with the writer's writes applied, in order.
while IFS=$'\t' read -r verb id key amount note owner; do
	if [ "$verb" = insert ]; then
		echo "INSERT INTO orders VALUES ($id, '${key//\'/\'\'}', $amount, '${note//\'/\'\'}');"
	else
		echo "UPDATE orders SET amount = $amount, note = '${note//\'/\'\'}' WHERE id = $id;"
	fi
done <writer.log | sql master.db
status_json
equals "$(step_states)" "$all_done" "writer: status shows every step done"
final_rows "writer: final rows = initial rows + the writer's writes"
# And each id the writer wrote, in its last version, on its owner.
cut -f2 writer.log | sort -u >written.ids
awk -F'\t' 'NR == FNR { want[$1] = 1; next } ($2 in want)' written.ids \
	rows.expected >written.expected
comm -23 written.expected rows.actual >written.missing
check "writer: every one of its $(wc -l <writer.log) successful writes ($(wc -l <written.ids) rows) is on its owner" \
	test -s written.expected -a ! -s written.missing
echo "# writer: $(wc -l <writer.log) writes succeeded, $(wc -l <writer.rejected) refused by the fence"

# ---------------------------------------------------------------------
# 6. One run at a time: a second run is refused at once, naming the pid.
section concurrent
fresh concurrent 10 100
"$bin" run plan.cfg --yes >first.out 2>first.err </dev/null &
first=$!
background+=("$first")
purge_running() { # quiet: the journal may not exist yet
	"$bin" status plan.cfg --format json >status.json 2>/dev/null &&
		[ "$(step_field purge state 2>/dev/null)" = running ]
}
check "concurrent: first run reaches purge (slow, throttled)" \
	wait_for "purge" 20 purge_running
jget '$.running' >running.txt
has running.txt "pid $first" "concurrent: status names the running pid"
started=$(date +%s%N)
run_reshard 1 "concurrent: a second run is refused (exit 1)" run plan.cfg --yes
elapsed=$((($(date +%s%N) - started) / 1000000))
has err "pid $first" "concurrent: the refusal names the holder's pid"
if [ "$elapsed" -lt 2000 ]; then
	ok "concurrent: refused at once (${elapsed} ms)"
else
	not_ok "concurrent: refused at once (took ${elapsed} ms)"
fi
run_reshard 1 "concurrent: abort is refused too while it runs" abort plan.cfg
has err "pid $first" "concurrent: abort names the holder's pid"
kill -TERM "$first"
wait "$first"
equals "$?" 4 "concurrent: SIGTERM stops the first run at a checkpoint (exit 4)"
has first.err "stopped at a checkpoint of step purge" \
	"concurrent: it says where it stopped"
write_plan "$dir" 50 0 # options are not part of the plan's identity
run_reshard 0 "concurrent: resume, unthrottled" run plan.cfg --yes
complete "concurrent"

# ---------------------------------------------------------------------
# 7. A changed plan is not resumed.
section changed
fresh changed
run_reshard 0 "changed: run --until fence" run plan.cfg --until fence --yes
write_plan "$dir" 50 0 routing-new.cfg
run_reshard 2 "changed: changed publish file refused (exit 2)" run plan.cfg --yes
has err "was: \"publish.file = $dir/routing.cfg\"" "changed: message says what it was"
has err "now: \"publish.file = $dir/routing-new.cfg\"" "changed: message says what it is now"
status_json
equals "$(step_field catch-up state)" pending "changed: nothing more was done"
write_plan "$dir"
run_reshard 0 "changed: the original plan resumes" run plan.cfg --yes
check "changed: no routing file under the refused name" test ! -e routing-new.cfg
complete "changed"

# ---------------------------------------------------------------------
# 8. abort before publish undoes; after publish it refuses.
section abort
fresh abort
run_reshard 0 "abort: run --until promote" run plan.cfg --until promote --yes
check "abort: replicas made" test -s db2.db -a -s db3.db
run_reshard 0 "abort: abort before publish" abort plan.cfg
same_rows "abort: sources as before" from_owner db0 db1
equals "$(fence_triggers db0)/$(fence_triggers db1)" 0/0 "abort: no trigger left on db0, db1"
check "abort: replica files removed" test ! -e db2.db -a ! -e db3.db
check "abort: journal set aside" \
	test ! -e orders-2x.journal -a -n "$(compgen -G 'orders-2x.journal.aborted-*')"
run_reshard 0 "abort: a new run completes" run plan.cfg --yes
status_json
equals "$(step_field preflight attempts)" 1 "abort: the new run started from the beginning"
complete "abort"
run_reshard 2 "abort: abort after the end refuses (exit 2)" abort plan.cfg
has err "publish" "abort: the refusal says publish was passed"
final_rows "abort: refused abort changed nothing"

fresh abort-fenced
run_reshard 0 "abort-fenced: run --until fence" run plan.cfg --until fence --yes
run_reshard 0 "abort-fenced: abort" abort plan.cfg
equals "$(fence_triggers db0)/$(fence_triggers db1)" 0/0 "abort-fenced: fences released"
same_rows "abort-fenced: sources as before" from_owner db0 db1
check "abort-fenced: no replica made" test ! -e db2.db -a ! -e db3.db

fresh abort-published
run_reshard 0 "abort-published: run --until publish" run plan.cfg --until publish --yes
run_reshard 2 "abort-published: abort refuses (exit 2)" abort plan.cfg
has err "passed publish" "abort-published: it says publish was passed"
has err "run plan.cfg" "abort-published: it says how to go on"
status_json
equals "$(jget '$.fenced')" 1 "abort-published: fences untouched"
run_reshard 0 "abort-published: the run goes on" run plan.cfg --yes
complete "abort-published"

# ---------------------------------------------------------------------
# 9. Bad usage.
section usage
fresh usage
run_reshard 2 "usage: --until with an unknown step (exit 2)" run plan.cfg --until fencing --yes
has err "fencing" "usage: the message names the step"
check "usage: nothing was started" test ! -e orders-2x.journal
run_reshard 2 "usage: abort of a plan never run (exit 2)" abort plan.cfg
"$bin" run plan.cfg </dev/null >out 2>err
equals "$?" 2 "usage: without --yes nor a terminal, run stops before promote (exit 2)"
has err "--yes" "usage: it says to use --yes"
status_json
equals "$(step_field catch-up state)/$(step_field promote state)" done/pending \
	"usage: promote not begun"
write_plan "$dir" 50 0 routing.cfg split
run_reshard 2 "usage: run on a split plan is refused (exit 2)" run plan.cfg --yes
has err 'strategy "split" cannot be run' "usage: the message says split cannot be run yet"

section end
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
