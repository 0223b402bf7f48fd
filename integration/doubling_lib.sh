# shellcheck shell=bash
# integration/doubling_lib.sh: a doubling on real servers, for
# scenario_doubling_{pg,my}.sh and scenario_modulo.sh.  Sourced,
# not run.
#
# The servers of integration/servers.sh (RESHARD_SERVERS_DIR/env): P
# primary/replica pairs of one engine (RESHARD_PAIRS, 1 when the env names
# one pair only).  The plan doubles P primaries p1..pP into 2P shards by
# promoting their replicas r1..rP: slots P x 2 -> 2P x 2 (MAP=slots, the
# default), so the replica of database i is database i + P; or modulo
# P -> 2P (MAP=modulo), node i's replica node i + P.  Rows (a composite primary key, NULLs,
# unicode) are placed on their owner under `from` by the oracle
# (tests/oracle.py, which shares no code with reshard); at the end every
# row must be exactly once on its owner under `to`, unchanged.
#
# A scenario script sets ENGINE (pg or my), sources this file, and calls
# begin, then its sections, then finish.  Checks print "ok - …" /
# "not ok - …"; the last line is "N passed, M failed".
# shellcheck disable=SC2034 # variables the scenario scripts use
set -uo pipefail
export LC_ALL=C.UTF-8

: "${ENGINE:?set ENGINE to pg or my}"
lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root_dir=$(dirname "$lib_dir")
oracle=$root_dir/tests/oracle.py
# shellcheck disable=SC1091
source "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}/env"
bin=${RESHARD_BIN:-$root_dir/build/reshard}
case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac
rows=${ROWS:-200000}
keys=${KEYS:-20000}
pairs=${RESHARD_PAIRS:-1}
# MAP: slots (P x 2 -> 2P x 2 slot tables orders_0, orders_1 on every
# node) or modulo (P -> 2P nodes, one table orders on each).
map=${MAP:-slots}
# LOGICAL_TABLES: the plan's tables, `orders` and optionally `items` (the
# same columns and shard key; a row whose id is a multiple of 4 is an
# item), and their physical tables under MAP.
read -ra logical <<<"${LOGICAL_TABLES:-orders}"
tables=()
for l in "${logical[@]}"; do
	case $l in orders | items) ;; *) echo "LOGICAL_TABLES: orders, items" >&2 && exit 2 ;; esac
	case $map in
	slots) tables+=("${l}_0" "${l}_1") ;;
	modulo) tables+=("$l") ;;
	*) echo "MAP must be slots or modulo, not $map" >&2 && exit 2 ;;
	esac
done
tmp=$(mktemp -d "/tmp/reshard-doubling-$ENGINE.XXXXXX")
passed=0 failed=0

ok() { passed=$((passed + 1)) && echo "ok - $1"; }
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $1"
	[ -n "${2:-}" ] && [ -s "$2" ] && sed 's/^/#   /' "$2" | head -20
	return 0
}
check() { # check NAME COMMAND...
	local name=$1
	shift
	if "$@" >"$tmp/why" 2>&1; then ok "$name"; else not_ok "$name" "$tmp/why"; fi
}
equals() { # equals GOT WANT NAME
	if [ "$1" = "$2" ]; then
		ok "$3"
	else
		printf 'got  %s\nwant %s\n' "$1" "$2" >"$tmp/why"
		not_ok "$3" "$tmp/why"
	fi
}
has() { # has FILE TEXT NAME
	if grep -qF -- "$2" "$1"; then
		ok "$3"
	else
		{ echo "no \"$2\" in:"; cat "$1"; } >"$tmp/why"
		not_ok "$3" "$tmp/why"
	fi
}
bail() {
	not_ok "$1"
	echo "$passed passed, $failed failed"
	exit 1
}
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

# url_of primary|replica K: the URL of pair K's server.
url_of() {
	local role=${1^^} engine=${ENGINE^^} var
	var=RESHARD_${engine}_${role}_URL_$2
	[ -n "${!var:-}" ] || { [ "$2" = 1 ] && var=RESHARD_${engine}_${role}_URL; }
	echo "${!var:?no $var in the servers env}"
}

# q URL SQL: run SQL on the server at URL, tab-separated rows out.
q() {
	local url=$1 sql=$2
	if [ "$ENGINE" = pg ]; then
		PGOPTIONS="-c client_min_messages=warning" psql -X -w -q -At -F $'\t' -v ON_ERROR_STOP=1 "$url" -c "$sql"
	else
		[[ $url =~ ^mysql://([^:]+):([^@]+)@([^:/]+):([0-9]+)/(.+)$ ]] ||
			return 2
		mariadb --no-defaults --batch --raw --skip-column-names \
			--default-character-set=utf8mb4 -u "${BASH_REMATCH[1]}" \
			-p"${BASH_REMATCH[2]}" -h "${BASH_REMATCH[3]}" \
			-P "${BASH_REMATCH[4]}" "${BASH_REMATCH[5]}" -e "$sql"
	fi
}

# The shards: p1..pP (primaries), r1..rP (their replicas).
shard_names() {
	local k
	for k in $(seq 1 "$pairs"); do echo "p$k"; done
	for k in $(seq 1 "$pairs"); do echo "r$k"; done
}
shard_url() { # shard_url pK|rK
	case $1 in p*) url_of primary "${1#p}" ;; r*) url_of replica "${1#r}" ;; esac
}

table_sql() { # the orders table, in this engine's types
	if [ "$ENGINE" = pg ]; then
		echo "(region text NOT NULL, id bigint NOT NULL,
		  customer_id text NOT NULL, amount numeric(12,2), note text,
		  PRIMARY KEY (region, id))"
	else
		echo "(region varchar(16) NOT NULL, id bigint NOT NULL,
		  customer_id varchar(64) NOT NULL, amount decimal(12,2),
		  note varchar(200), PRIMARY KEY (region, id))
		  DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
	fi
}

write_plan() { # write_plan FILE [OPTIONS]
	local from_nodes='' to_nodes='' s k
	{
		echo 'version = 1;'
		echo 'name = "orders-2x";'
		echo 'hash = "sha256_64";'
		local l tl=''
		for l in "${logical[@]}"; do tl+="${tl:+, }{ name = \"$l\"; key = \"customer_id\"; }"; done
		echo "tables = ( $tl );"
		echo 'shards = ('
		# The password comes from the environment, not the plan.
		for k in $(seq 1 "$pairs"); do
			echo "  { name = \"p$k\"; url = \"$(plan_url primary "$k")\";"
			echo "    password_env = \"RESHARD_DB_PASSWORD\"; replica = \"r$k\"; },"
		done
		for k in $(seq 1 "$pairs"); do
			echo "  { name = \"r$k\"; url = \"$(plan_url replica "$k")\";"
			echo "    password_env = \"RESHARD_DB_PASSWORD\"; }$([ "$k" = "$pairs" ] || echo ,)"
		done
		echo ');'
		for k in $(seq 1 "$pairs"); do from_nodes+="${from_nodes:+, }\"p$k\""; done
		to_nodes=$from_nodes
		for k in $(seq 1 "$pairs"); do to_nodes+=", \"r$k\""; done
		if [ "$map" = slots ]; then
			echo "from = { map = \"slots\"; databases = $pairs; tables_per_db = 2; nodes = [$from_nodes]; };"
			echo "to   = { map = \"slots\"; databases = $((2 * pairs)); tables_per_db = 2; nodes = [$to_nodes]; };"
		else
			echo "from = { map = \"modulo\"; nodes = [$from_nodes]; };"
			echo "to   = { map = \"modulo\"; nodes = [$to_nodes]; };"
		fi
		echo 'strategy = "doubling";'
		echo "options = { batch_rows = ${BATCH:-2000}; ${2:-} };"
		echo 'publish = { file = "routing.cfg"; };'
	} >"$1"
}

# src_dst_plan FILE NAME HASH KEY DST_URL END OPTIONS: a split of table
# orders (shard key KEY) from the SQLite file src.db beside FILE onto a
# new shard dst: the points above END go to dst.
src_dst_plan() {
	cat >"$1" <<PLAN
version = 1; name = "$2"; hash = "$3";
tables = ( { name = "orders"; key = "$4"; } );
shards = ( { name = "src"; url = "sqlite://src.db"; }, { name = "dst"; url = "$5"; } );
from = { map = "ranges"; ranges = ( { end = "max"; node = "src"; } ); };
to = { map = "ranges"; ranges = ( { end = $6; node = "src"; }, { end = "max"; node = "dst"; } ); };
strategy = "split";
options = { $7 };
publish = { file = "routing.cfg"; };
PLAN
}

# src_rows DB [WHERE]: the orders of the SQLite file DB (WHERE a
# condition on them), tab-separated, by id.
src_rows() {
	sqlite3 -separator $'\t' "$1" "SELECT id, customer, amount, note FROM orders
		WHERE ${2:-1} ORDER BY id"
}

# full_disk_split DIR DST: for the full disk scenarios, DIR/src.db (20,000
# orders, keys 1 … 20,000, about 120 bytes a row), the oracle's rows
# (DIR/rows.before; a key above 10,000 belongs to dst: DIR/rows.dst, the
# rest DIR/rows.src) and DIR/plan.cfg, a split of those keys onto DST
# (identity hash, chunks of 500).
full_disk_split() {
	sqlite3 "$1/src.db" "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL,
		amount DECIMAL(12,2), note TEXT);
		WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 20000)
		INSERT INTO orders SELECT n, 'cliente:' || n, (n % 1000) || '.25',
			'note ' || n || ' ' || printf('%.90c', '*') FROM i" || return 1
	src_rows "$1/src.db" >"$1/rows.before" &&
		src_rows "$1/src.db" "id > 10000" >"$1/rows.dst" &&
		src_rows "$1/src.db" "id <= 10000" >"$1/rows.src" &&
		src_dst_plan "$1/plan.cfg" full-disk identity id "$2" 10000 "batch_rows = 500;"
}

# full_disk_stopped MORE: the checks after the copy stopped on a full
# disk: more than MORE copy chunks done in $dir's journal, and the source
# as it was.
full_disk_stopped() {
	local done_chunks
	done_chunks=$(sqlite3 -readonly "$dir/full-disk.journal" "SELECT count(*) FROM chunks
		WHERE step = 'copy' AND state = 'done'")
	check "full disk: chunks were copied before the disk filled ($done_chunks done)" \
		test "$done_chunks" -gt "$1"
	src_rows "$dir/src.db" >"$dir/rows.after"
	check "full disk: the source holds its rows as before" cmp "$dir/rows.before" "$dir/rows.after"
}

# plan_url primary|replica K: url_of without the password.
plan_url() {
	local url
	url=$(url_of "$1" "$2")
	echo "${url/:$RESHARD_DB_PASSWORD@/@}"
}

# make_rows: $tmp/rows.tsv (region id customer_id amount note; \N for NULL)
# and $tmp/routes.tsv (the oracle's owners of every key).
make_rows() {
	python3 -S - "$rows" "$keys" >"$tmp/rows.tsv" <<'PY' || return 1
import sys
rows, keys = int(sys.argv[1]), int(sys.argv[2])
names = ["cust-%05d", "клиент-%d", "客户-%d", "Zoë O'Brien %d", "🙂 %d"]
for i in range(1, rows + 1):
    k = (i * 7919) % keys
    key = names[k % len(names)] % k
    region = ["eu", "us", "ap"][i % 3]
    amount = "\\N" if i % 17 == 0 else "%.2f" % (((i * 7907) % 1000000) / 100.0)
    note = "\\N" if i % 5 == 0 else ("" if i % 11 == 0 else "note ☕ %d" % i)
    print("%s\t%d\t%s\t%s\t%s" % (region, i, key, amount, note))
PY
	local from='' to='' k
	for k in $(seq 1 "$pairs"); do from+="${from:+,}p$k"; done
	to=$from
	for k in $(seq 1 "$pairs"); do to+=",r$k"; done
	if [ "$map" = slots ]; then
		cut -f3 "$tmp/rows.tsv" | sort -u |
			python3 -S "$oracle" --hash sha256_64 --table orders \
				--from "slots:$pairs:2:$from" --to "slots:$((2 * pairs)):2:$to" \
				>"$tmp/routes.tsv" || return 1
	else
		# The oracle names nodes; the owner is the node's table orders.
		cut -f3 "$tmp/rows.tsv" | sort -u |
			python3 -S "$oracle" --hash sha256_64 \
				--from "modulo:$from" --to "modulo:$to" |
			awk -F'\t' -v OFS='\t' '{ $2 = $2 ".orders"; $3 = $3 ".orders"; print }' \
				>"$tmp/routes.tsv" || return 1
	fi
}

# expected which: "owner<TAB>region<TAB>id<TAB>key<TAB>amount<TAB>note" of
# every row under `from` (which=2) or `to` (which=3), sorted.
expected() {
	awk -F'\t' -v col="$1" -v items="${logical[*]}" 'NR == FNR { owner[$1] = $col; next }
		{ o = owner[$3]; if (items ~ /items/ && $2 % 4 == 0) sub(/\.orders/, ".items", o)
		  print o "\t" $0 }' "$tmp/routes.tsv" "$tmp/rows.tsv" |
		sort
}

# load: every row into its owner's table under `from`, on the primaries.
load() {
	local s t
	for s in $(seq 1 "$pairs"); do
		for t in "${tables[@]}"; do
			q "$(url_of primary "$s")" "DROP TABLE IF EXISTS $t;
				CREATE TABLE $t $(table_sql)" || return 1
			expected 2 | awk -F'\t' -v o="p$s.$t" '$1 == o' |
				cut -f2- >"$tmp/load.tsv"
			if [ "$ENGINE" = pg ]; then
				PGOPTIONS="-c client_min_messages=warning" psql -X -w -q -v ON_ERROR_STOP=1 "$(url_of primary "$s")" \
					-c "\\copy $t FROM '$tmp/load.tsv'" || return 1
			else
				python3 -S - "$tmp/load.tsv" "$t" >"$tmp/load.sql" <<'PY' || return 1
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1], encoding="utf-8")]
def lit(v):
    if v == "\\N":
        return "NULL"
    return "'" + v.replace("\\", "\\\\").replace("'", "''") + "'"
for i in range(0, len(rows), 500):
    print("INSERT INTO %s VALUES %s;" % (sys.argv[2], ",".join(
        "(%s)" % ",".join(lit(v) for v in r) for r in rows[i:i + 500])))
PY
				q "$(url_of primary "$s")" "source $tmp/load.sql" || return 1
			fi
		done
	done
}

# actual [SHARD...]: what the servers hold now (every shard, or those
# named), in expected's form.
actual() {
	local s t amount='cast(amount AS char)' null="'\\\\N'"
	[ "$ENGINE" = pg ] && amount='amount::text' null="'\\N'"
	# shellcheck disable=SC2046 # one shard name a word
	[ $# -gt 0 ] || set -- $(shard_names)
	for s in "$@"; do
		for t in "${tables[@]}"; do
			q "$(shard_url "$s")" "SELECT region, id, customer_id,
				coalesce($amount, $null),
				coalesce(note, $null) FROM $t" 2>&1 |
				sed "s/^/$s.$t\t/"
		done
	done | sort
}

# same_rows NAME which: the servers hold exactly the expected rows; under
# `from` (which=2) the primaries only (the replicas hold a copy).
same_rows() {
	local s shards=()
	if [ "$2" = 2 ]; then
		for s in $(shard_names); do [[ $s == p* ]] && shards+=("$s"); done
	fi
	expected "$2" >"$tmp/rows.expected"
	actual "${shards[@]}" >"$tmp/rows.actual"
	if cmp -s "$tmp/rows.expected" "$tmp/rows.actual"; then
		ok "$1 ($(wc -l <"$tmp/rows.actual") rows exactly)"
	else
		{
			echo "expected $(wc -l <"$tmp/rows.expected"), found $(wc -l <"$tmp/rows.actual"):"
			diff "$tmp/rows.expected" "$tmp/rows.actual" | grep '^[<>]' | head
		} >"$tmp/why"
		not_ok "$1" "$tmp/why"
	fi
}

# wait_replicas: every replica holds what its primary holds (a count).
wait_replicas() {
	local k t n want tries
	for k in $(seq 1 "$pairs"); do
		for t in "${tables[@]}"; do
			want=$(q "$(url_of primary "$k")" "SELECT count(*) FROM $t")
			tries=200
			while n=$(q "$(url_of replica "$k")" "SELECT count(*) FROM $t" 2>/dev/null) &&
				[ "$n" != "$want" ] && [ $tries -gt 0 ]; do
				sleep 0.05
				tries=$((tries - 1))
			done
			[ "$n" = "$want" ] || return 1
		done
	done
}

# fresh NAME [OPTIONS]: a folder $dir of its own with plan.cfg (OPTIONS go
# into the plan's options group), for a run with a journal of its own.
dir=''
fresh() {
	dir=$tmp/$1
	mkdir -p "$dir"
	write_plan "$dir/plan.cfg" "${2:-}"
}

# run_reshard WANT NAME ARGS...: run the binary in $dir, stdout/stderr to $dir/out, err.
run_reshard() {
	local want=$1 name=$2 rc=0
	shift 2
	(cd "$dir" && "$bin" "$@") >"$dir/out" 2>"$dir/err" </dev/null || rc=$?
	if [ "$rc" = "$want" ]; then
		ok "$name"
	else
		{ echo "exit $rc, expected $want; stderr:"; cat "$dir/err"; } >"$tmp/why"
		not_ok "$name" "$tmp/why"
	fi
}

# killed_until_done NAME: in $dir, `run --yes` killed with SIGKILL at
# seeded random instants until a run completes (at most 40 attempts, the
# window growing with each, as final-check starts over when resumed);
# the steps each kill landed in are printed as a comment.
killed_until_done() {
	local attempts=0 rc=1 window delay pid killed=()
	RANDOM=20261203
	while [ "$rc" -ne 0 ] && [ "$attempts" -lt 40 ]; do
		attempts=$((attempts + 1))
		window=$((attempts <= 6 ? 300 : 400 * attempts))
		delay=$((RANDOM % window))
		(cd "$dir" && exec "$bin" run plan.cfg --yes) >"$dir/out" 2>>"$dir/err" </dev/null &
		pid=$!
		sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		rc=$?
		[ "$rc" -ne 0 ] && killed+=("$( (cd "$dir" && "$bin" status plan.cfg \
			--format json 2>/dev/null) | python3 -S -c 'import json, sys
try:
    steps = json.load(sys.stdin)["steps"]
    run = [s["name"] for s in steps if s["state"] != "done"]
    print(run[0] if run else "end")
except Exception:
    print("start")')@${delay}ms")
	done
	echo "# killed in: ${killed[*]}"
	if [ "$rc" -eq 0 ]; then
		ok "$1: a run completed after $((attempts - 1)) kills"
	else
		not_ok "$1: no run completed in 40 attempts (last exit $rc)" "$dir/err"
	fi
}

# reset: the replicas replicate again, the primaries hold no test tables.
reset() {
	local s t
	for s in $(shard_names); do
		for t in orders orders_0 orders_1 items items_0 items_1; do # whatever was left
			q "$(shard_url "$s")" "DROP TABLE IF EXISTS $t,
				reshard_del_$t" >/dev/null 2>&1
		done
		q "$(shard_url "$s")" "DROP TABLE IF EXISTS reshard_marker" >/dev/null 2>&1
	done
	"$lib_dir/servers.sh" reset-replicas "$ENGINE" "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}"
}

begin() {
	trap '[ -z "$writer_pid" ] || kill "$writer_pid"; reset >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
	command -v python3 >/dev/null || bail "python3 is needed"
	[ -x "$bin" ] || bail "no reshard binary at $bin"
	make_rows || bail "generating the rows"
	load || bail "loading the primaries"
	check "the replicas have the primaries' rows" wait_replicas
}

# refused NAME TEXT: the last run exited 2 at preflight naming TEXT, and
# nothing was fenced.
refused() {
	has "$dir/err" "$2" "$1: refused, saying \"$2\""
	(cd "$dir" && "$bin" status plan.cfg --format json) >"$dir/status.json" 2>&1
	has "$dir/status.json" '"fenced": false' "$1: nothing fenced"
}

# fence_triggers: how many of reshard's fence and guard triggers the
# servers carry.
fence_triggers() {
	local s n=0 c sql
	if [ "$ENGINE" = pg ]; then
		sql="SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'reshard_fence%'
			OR tgname LIKE 'reshard_guard%'"
	else
		sql="SELECT count(*) FROM information_schema.TRIGGERS
			WHERE TRIGGER_NAME LIKE 'reshard_fence%'
			OR TRIGGER_NAME LIKE 'reshard_guard%'"
	fi
	for s in $(shard_names); do
		c=$(q "$(shard_url "$s")" "$sql") || return 1
		n=$((n + c))
	done
	echo "$n"
}

# wait_text FILE TEXT: wait (at most 30 s) until FILE holds TEXT.
wait_text() {
	local tries=600
	while ! grep -qF -- "$2" "$1" 2>/dev/null; do
		tries=$((tries - 1))
		[ $tries -gt 0 ] || { echo "no \"$2\" in $1 after 30 s:" && cat "$1" && return 1; }
		sleep 0.05
	done
}

# not_fenced: status of the run in $dir says no write is fenced.
not_fenced() {
	(cd "$dir" && "$bin" status plan.cfg --format json) >"$dir/status.json" 2>&1
	has "$dir/status.json" '"fenced": false' "$1: status says writes are not fenced"
}

# The writer: an application writing throughout a run in $dir.  It inserts
# new rows and updates existing ones, one statement a write, routing each
# by the oracle's owners under `from` until the run's routing file
# ($dir/routing.cfg) exists, then under `to`, as a router reloading the
# published routing would.  In $dir:
#   writer.iter      the iteration under way
#   writer.log       every acknowledged write: verb region id key amount note
#   writer.acked     every acknowledged write: iteration, key, time
#   writer.rejected  every write refused: iteration, owner, key, time, the
#                    error (times as $EPOCHREALTIME: seconds.micro)
#   writer.guarded   every write refused by the ownership guard (sent to
#                    the old owner just as the routing changed), as
#                    writer.rejected
#   writer.failed    any other outcome
# writer_start, then writer_stop; writer_apply folds writer.log into
# $tmp/rows.tsv, so that same_rows expects the initial rows with the
# writer's writes applied in order.
fence_message="writes paused by reshard: run orders-2x, step fence"
writer_pid=''
writer_loop() {
	local i=0 verb region id key amount note owner url sql out
	local -A from_owner=() to_owner=()
	local -a keys=() rows=()
	while IFS=$'\t' read -r key from to _; do
		from_owner[$key]=$from to_owner[$key]=$to
	done <"$tmp/routes.tsv"
	mapfile -t keys < <(cut -f1 "$tmp/routes.tsv" | awk 'NR % 3 == 0')
	# Orders only (an id that is a multiple of 4 may be an item).
	mapfile -t rows < <(awk -F'\t' '$2 % 7 == 0 && $2 % 4 != 0 { print $1 "\t" $2 "\t" $3 }' "$tmp/rows.tsv")
	while [ ! -e "$dir/writer.stop" ]; do
		i=$((i + 1))
		# Renamed into place: a reader never sees it empty.
		echo "$i" >"$dir/writer.iter.new" && mv -f "$dir/writer.iter.new" "$dir/writer.iter"
		note="writer $i: ünïcødé 'q'"
		amount=$((i * 37 % 100000)).$((i % 10))0
		if [ $((i % 2)) -eq 1 ]; then
			verb=insert region=wr id=$((10000000 + i))
			key=${keys[$((i % ${#keys[@]}))]}
		else
			verb=update
			IFS=$'\t' read -r region id key <<<"${rows[$((i * 13 % ${#rows[@]}))]}"
		fi
		if [ -e "$dir/routing.cfg" ]; then owner=${to_owner[$key]}; else owner=${from_owner[$key]}; fi
		url=$(shard_url "${owner%%.*}")
		if [ "$verb" = insert ]; then
			sql="INSERT INTO ${owner#*.} VALUES ('$region', $id,
				'${key//\'/\'\'}', $amount, '${note//\'/\'\'}')"
		else
			sql="UPDATE ${owner#*.} SET amount = $amount,
				note = '${note//\'/\'\'}' WHERE region = '$region' AND id = $id"
		fi
		# Acknowledged: the statement succeeded and changed one row.
		if [ "$ENGINE" = pg ]; then
			out=$(q "$url" "$sql RETURNING 1" 2>&1)
		else
			out=$(q "$url" "$sql; SELECT ROW_COUNT()" 2>&1)
		fi
		if [ "$out" = 1 ]; then
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$verb" "$region" "$id" "$key" \
				"$amount" "$note" >>"$dir/writer.log"
			printf '%s\t%s\t%s\n' "$i" "$key" "$EPOCHREALTIME" >>"$dir/writer.acked"
		elif [[ $out == *"row belongs to "*" since routing epoch "* ]]; then
			printf '%s\t%s\t%s\t%s\t%s\n' "$i" "$owner" "$key" "$EPOCHREALTIME" \
				"${out//$'\n'/ }" >>"$dir/writer.guarded"
		elif [[ $out == *"$fence_message"* ]]; then
			printf '%s\t%s\t%s\t%s\t%s\n' "$i" "$owner" "$key" "$EPOCHREALTIME" \
				"${out//$'\n'/ }" >>"$dir/writer.rejected"
		else
			printf '%s\t%s\t%s\n' "$i" "$owner" "${out//$'\n'/ }" >>"$dir/writer.failed"
		fi
		sleep 0.02
	done
}
writer_start() {
	rm -f "$dir/writer.stop"
	: >"$dir/writer.log"
	: >"$dir/writer.acked"
	: >"$dir/writer.rejected"
	: >"$dir/writer.guarded"
	: >"$dir/writer.failed"
	echo 0 >"$dir/writer.iter"
	writer_loop &
	writer_pid=$!
}
writer_stop() {
	touch "$dir/writer.stop"
	[ -z "$writer_pid" ] || wait "$writer_pid"
	writer_pid=''
}
writer_iter() { cat "$dir/writer.iter"; }
# writer_wait WHAT N: wait (at most 30 s) until WHAT (writes: acknowledged
# writes; iter: iterations) reaches N.
writer_wait() {
	local tries=600 n
	while [ $tries -gt 0 ]; do
		if [ "$1" = writes ]; then n=$(wc -l <"$dir/writer.log"); else n=$(writer_iter); fi
		[ "$n" -ge "$2" ] && return 0
		sleep 0.05
		tries=$((tries - 1))
	done
	echo "$1: $n after 30 s, waiting for $2"
	return 1
}
writer_apply() {
	python3 -S - "$tmp/rows.tsv" "$dir/writer.log" <<'PY'
import sys
rows, log = sys.argv[1], sys.argv[2]
table = {}
for line in open(rows, encoding="utf-8"):
    f = line.rstrip("\n").split("\t")
    table[(f[0], f[1])] = f
for line in open(log, encoding="utf-8"):
    verb, region, id_, key, amount, note = line.rstrip("\n").split("\t")
    if verb == "insert":
        table[(region, id_)] = [region, id_, key, amount, note]
    else:
        row = table[(region, id_)]
        row[3], row[4] = amount, note
with open(rows, "w", encoding="utf-8") as out:
    for f in table.values():
        out.write("\t".join(f) + "\n")
PY
}

# writer_checks NAME FIRST LAST: the writer's writes were refused with the
# fence message, and only in iterations FIRST..LAST (the one under way when
# the fence went up .. the one under way when unfence ended); none failed
# otherwise.
writer_checks() {
	local n n_stay
	n=$(wc -l <"$dir/writer.rejected")
	[[ $2 =~ ^[0-9]+$ && $3 =~ ^[0-9]+$ ]] || not_ok "$1: the fenced iterations are known ('$2'..'$3')"
	check "$1: the writer's writes were refused with the fence message while fenced ($n)" \
		test "$n" -gt 0
	check "$1: no write refused outside the fence (iterations $2..$3)" \
		awk -F'\t' -v a="$2" -v b="$3" '$1 < a || $1 > b { print; bad = 1 }
			END { exit bad }' "$dir/writer.rejected"
	# PostgreSQL and MariaDB compute a key's point in the trigger: the
	# fence holds only the rows that move (the oracle's owners differ).
	check "$1: every refused write was to a row that moves" \
		awk -F'\t' 'NR == FNR { moves[$1] = $2 != $3; next }
			!moves[$3] { print; bad = 1 } END { exit bad }' \
		"$tmp/routes.tsv" "$dir/writer.rejected"
	n_stay=$(awk -F'\t' -v a="$2" -v b="$3" 'NR == FNR { stays[$1] = $2 == $3; next }
		$1 > a && $1 < b && stays[$2]' "$tmp/routes.tsv" "$dir/writer.acked" | wc -l)
	check "$1: writes to rows that stay went through while fenced ($n_stay)" \
		test "$n_stay" -gt 0
	if [ -s "$dir/writer.failed" ] || [ -s "$dir/writer.guarded" ]; then
		cat "$dir/writer.guarded" >>"$dir/writer.failed"
		not_ok "$1: no write failed other than by the fence" "$dir/writer.failed"
	else
		ok "$1: no write failed other than by the fence"
	fi
	echo "# $1: $(wc -l <"$dir/writer.log") writes acknowledged, $n refused by the fence, $n_stay to staying rows while fenced"
}

# reshard_tables SHARD...: the tables of reshard's own (markers, delete
# logs) on the shards named, "shard table" a line.
reshard_tables() {
	local s schema=database
	[ "$ENGINE" = pg ] && schema=current_schema
	for s in "$@"; do
		q "$(shard_url "$s")" "SELECT table_name FROM information_schema.tables
			WHERE table_schema = $schema() AND table_name LIKE 'reshard%'
			ORDER BY table_name" | sed "s/^/$s /"
	done
}

# aborts STEP...: aborted_after each STEP; a run that is to promote
# (promote, verify) gets fresh replicas first, since abort leaves the
# promoted ones independent primaries.  Before promote the fence goes (on
# MariaDB's replicas through replication: a write of their own would
# break their GTID replication) and the replicas still replicate.
aborts() {
	local step
	for step in "$@"; do
		case $step in
		promote | verify)
			if ! { reset && load && wait_replicas; }; then
				not_ok "$ENGINE abort after $step: fresh replicas (servers.sh reset-replicas)"
				continue
			fi
			;;
		esac
		aborted_after "$step"
	done
}

# aborted_after STEP: a run in a fresh folder, stopped after STEP (a step
# before publish), then aborted.  Every primary as it was: exactly its
# rows, no fence trigger, no table of reshard's; no fence on any replica;
# a replica not yet promoted still replicates, one promoted is named for
# what it now is.
aborted_after() {
	local name="$ENGINE abort after $1" k primaries=() marker=aborted
	for k in $(seq 1 "$pairs"); do primaries+=("p$k"); done
	fresh "abort-$1"
	run_reshard 0 "$name: run --until $1" run plan.cfg --until "$1" --yes
	run_reshard 0 "$name: abort" abort plan.cfg
	case $1 in
	promote | verify)
		has "$dir/err" "r1: promoted by this run, it is now an independent primary" \
			"$name: abort says what the replica now is"
		;;
	*)
		# Preflight writes nothing, pre-verify only its capture: no
		# marker either.
		case $1 in preflight | pre-verify) marker='' ;; esac
		# Catch-up's undo speaks of the replicas; before it, they are not touched.
		[ "$1" = catch-up ] &&
			has "$dir/err" "still a replica of p1" "$name: the replica is left to replicate"
		check "$name: the replicas still replicate" wait_replicas
		if [ "$ENGINE" = my ]; then
			for k in $(seq 1 "$pairs"); do
				# Slave_running: ON when both replication threads run.
				equals "$(q "$(url_of replica "$k")" \
					"SHOW GLOBAL STATUS LIKE 'Slave_running'" | cut -f2)" ON \
					"$name: r$k replicates, both threads"
			done
		fi
		;;
	esac
	equals "$(fence_triggers)" 0 "$name: no fence trigger left on any server"
	same_rows "$name: every row where it was" 2
	# The marker stays, saying the run was aborted (docs/decisions.md).
	equals "$(reshard_tables "${primaries[@]}" | grep -v ' reshard_marker$')" "" \
		"$name: no table of reshard's but its marker left on the primaries"
	for k in $(seq 1 "$pairs"); do
		equals "$(q "$(url_of primary "$k")" "SELECT state FROM reshard_marker
			WHERE plan = 'orders-2x'" 2>/dev/null)" "$marker" \
			"$name: p$k's marker says ${marker:-nothing}"
	done
}

# guard_checks: after unfence, before purge, a stale router's write to the
# old owner of a row that moved is refused with the guard's message, which
# names the new owner and the routing epoch; a write to a row the old
# owner keeps goes through (rolled back).
guard_checks() {
	local e=$ENGINE moved stay from to out sql _
	IFS=$'\t' read -r moved from to _ < <(awk -F'\t' '$2 != $3 && $2 ~ /^p1/' "$tmp/routes.tsv" | head -1)
	sql="INSERT INTO ${from#*.} VALUES ('st', 99999991, '${moved//\'/\'\'}', 1.00, 'stale')"
	out=$(q "$(shard_url "${from%%.*}")" "$sql" 2>&1)
	case $out in
	*"row belongs to ${to%%.*} since routing epoch 1 (reshard orders-2x)"*)
		ok "$e guard: a stale write to ${from%%.*} of a row now on ${to%%.*} is refused, naming both" ;;
	*) echo "$out" >"$tmp/why" && not_ok "$e guard: a stale write to ${from%%.*} of a row now on ${to%%.*} is refused, naming both" "$tmp/why" ;;
	esac
	IFS=$'\t' read -r stay from _ < <(awk -F'\t' '$2 == $3 && $2 ~ /^p1/' "$tmp/routes.tsv" | head -1)
	check "$e guard: a write to a row ${from%%.*} keeps goes through" \
		q "$(shard_url "${from%%.*}")" "BEGIN; INSERT INTO ${from#*.} VALUES ('st', 99999992, '${stay//\'/\'\'}', 1.00, 'kept'); ROLLBACK"
	# r1 still holds a copy of that row until purge: a write of it there
	# would be purged unseen, so r1 refuses it, naming p1.
	out=$(q "$(shard_url r1)" "INSERT INTO ${from#*.} VALUES ('st', 99999994, '${stay//\'/\'\'}', 1.00, 'stale')" 2>&1)
	case $out in
	*"row belongs to ${from%%.*} since routing epoch 1 (reshard orders-2x)"*)
		ok "$e guard: a stale write to r1 of a row p1 keeps is refused, naming p1" ;;
	*) echo "$out" >"$tmp/why" && not_ok "$e guard: a stale write to r1 of a row p1 keeps is refused, naming p1" "$tmp/why" ;;
	esac
	IFS=$'\t' read -r moved _ to _ < <(awk -F'\t' '$2 != $3 && $3 ~ /^r1/' "$tmp/routes.tsv" | head -1)
	check "$e guard: a write to a row r1 now owns goes through on r1" \
		q "$(shard_url r1)" "BEGIN; INSERT INTO ${to#*.} VALUES ('st', 99999995, '${moved//\'/\'\'}', 1.00, 'owned'); ROLLBACK"
}

# crash_series: the doubling in a fresh folder, stopped by a crash after
# every step before verify and in the middle of pre-verify (the writer
# writing all along: verify under the fence compares only what it wrote
# since pre-verify began), after every step after it and in the middle of
# purge, each time resumed by the next run,
# while the writer writes; then every row once on its owner under `to`,
# the writer's acknowledged writes applied.
crash_series() {
	local e=$ENGINE step fence_iter=0 unfence_iter=0
	fresh run
	writer_start
	check "$e writer: writes go through before the fence" writer_wait writes 10
	for step in preflight pre-verify fence catch-up promote; do
		[ "$step" = fence ] && fence_iter=$(writer_iter)
		[ "$step" = pre-verify ] && RESHARD_FAULT=after-chunk:pre-verify:2 \
			run_reshard 99 "$e: crash after chunk 2 of pre-verify" run plan.cfg --yes
		RESHARD_FAULT=after-step:$step run_reshard 99 "$e: crash after step $step" \
			run plan.cfg --yes
		[ "$step" = pre-verify ] && has "$dir/err" "step pre-verify     resuming" \
			"$e: pre-verify resumed"
		[ "$step" = promote ] && [ "$e" = pg ] && has "$dir/err" "dropped replication slot" \
			"$e: promote says it dropped the replica's slot"
	done
	for step in verify publish unfence purge; do
		[ "$step" = purge ] && RESHARD_FAULT=after-chunk:purge:3 run_reshard 99 \
			"$e: resumed, crash after chunk 3 of purge" run plan.cfg --yes
		RESHARD_FAULT=after-step:$step run_reshard 99 "$e: resumed, crash after step $step" \
			run plan.cfg --yes
		[ "$step" = verify ] && has "$dir/err" "compares again only the rows changed since pre-verify" \
			"$e: verify compares again only what changed since pre-verify"
		# No write may still be on its way by a routing read before publish.
		[ "$step" = publish ] && check "$e writer: routes by the published routing" \
			writer_wait iter $(($(writer_iter) + 2))
		[ "$step" = unfence ] && unfence_iter=$(writer_iter) && guard_checks
	done
	run_reshard 0 "$e: run again resumes and finishes" run plan.cfg --yes
	check "$e writer: writes go through after unfence" \
		writer_wait writes $(($(wc -l <"$dir/writer.log") + 10))
	writer_stop
	writer_checks "$e writer" "$fence_iter" "$unfence_iter"
	writer_apply
	same_rows "$e: every row once (the writer's writes applied), on its owner under to" 3
}

# promoted_checks: after a doubling in $dir, every replica is a primary of
# its own (PostgreSQL: out of recovery, no slot left on its old primary;
# MariaDB: replicating from nothing, writable), and no fence is left.
promoted_checks() {
	local e=$ENGINE k r
	for k in $(seq 1 "$pairs"); do
		r=$(url_of replica "$k")
		if [ "$e" = pg ]; then
			equals "$(q "$r" "SELECT pg_is_in_recovery()")" f "$e: r$k is a primary of its own"
			# A downstream standby (servers.sh RESHARD_DOWNSTREAM=1)
			# streams on a slot of its own.
			equals "$(q "$(url_of primary "$k")" "SELECT count(*) FROM pg_replication_slots
				WHERE NOT active")" 0 "$e: no replication slot left on p$k but a streaming standby's"
		else
			equals "$(q "$r" "SHOW SLAVE STATUS" | wc -l)" 0 "$e: r$k replicates from nothing"
			equals "$(q "$r" "SELECT @@read_only")" 0 "$e: r$k takes writes"
		fi
	done
	not_fenced "$e"
	equals "$(fence_triggers)" 0 "$e: no fence trigger left on any server"
}

# refusals: the preflight refusals both engines share, each leaving
# everything as it was: a table without a primary key (exit 1), and, with
# two pairs or more, a replica of another primary (exit 2).
refusals() {
	local e=$ENGINE p1 drop u1 u2
	p1=$(url_of primary 1)
	drop="ALTER TABLE ${tables[0]} DROP PRIMARY KEY"
	[ "$e" = pg ] && drop="ALTER TABLE ${tables[0]} DROP CONSTRAINT ${tables[0]}_pkey"
	fresh nokey
	q "$p1" "$drop"
	run_reshard 1 "$e nokey: a table without a primary key is refused (exit 1)" \
		run plan.cfg --until preflight --yes
	refused "$e nokey" "has no primary key"
	q "$p1" "ALTER TABLE ${tables[0]} ADD PRIMARY KEY (region, id)"
	[ "$pairs" -ge 2 ] || return 0
	fresh crossed
	# r1 and r2 swap servers: the plan is valid, but the server named
	# r1 replicates from p2's server.
	u1=$(plan_url replica 1) u2=$(plan_url replica 2)
	sed -i "s|url = \"$u1\"|url = \"@R1@\"|; s|url = \"$u2\"|url = \"$u1\"|; s|@R1@|$u2|" "$dir/plan.cfg"
	run_reshard 2 "$e crossed: a replica of another primary is refused (exit 2)" \
		run plan.cfg --until preflight --yes
	refused "$e crossed" "r1"
}

# verify_checks: `reshard verify` on fresh data (the servers reset, the
# rows loaded again): read-only on real servers, a changed column, a
# deleted copy and an extra row on r1 (past p1's last key) found exactly,
# and recorded for status.  PostgreSQL: compared before the run (nothing
# differs, writes open), then the promoted r1 changed with its triggers
# off for that transaction; MariaDB: r1 changed while it is still a
# replica (sql_log_bin off, so replication goes on), found before the run
# and again after promote.
verify_checks() {
	local e=$ENGINE extra_key movers want before r1 sql
	reset >/dev/null 2>&1
	load || bail "loading the primaries again"
	check "$e verify: the replicas have the primaries' rows" wait_replicas
	fresh verify
	r1=$(url_of replica 1)
	# Two rows of orders that move from p1 to r1, by the oracle.
	local picked cr ci dr di
	mapfile -t picked < <(awk -F'\t' 'NR == FNR { if ($2 == "p1.orders" && $3 == "r1.orders") m[$1] = 1; next }
		($3 in m) && $2 % 4 != 0 { print $1 " " $2 " " $3 }' \
		"$tmp/routes.tsv" "$tmp/rows.tsv" | head -2)
	[ "${#picked[@]}" -eq 2 ] || bail "verify: no rows that move from p1 to r1"
	read -r cr ci extra_key <<<"${picked[0]}"
	read -r dr di _ <<<"${picked[1]}"
	extra_key=${picked[0]#* * }
	sql="UPDATE orders SET note = 'tampered' WHERE region = '$cr' AND id = $ci;
		DELETE FROM orders WHERE region = '$dr' AND id = $di;
		INSERT INTO orders VALUES ('zz', 99999999, '${extra_key//\'/\'\'}', 1.00, 'extra')"
	want=$(printf '%s\n' \
		"differs p1 orders r1.orders [\"$cr\", \"$ci\"] [\"note\"]" \
		"missing p1 orders r1.orders [\"$dr\", \"$di\"] null" \
		"extra p1 orders r1.orders [\"zz\", \"99999999\"] null" | sort)
	movers=$(awk -F'\t' 'NR == FNR { if ($2 != $3) m[$1] = 1; next } $3 in m' \
		"$tmp/routes.tsv" "$tmp/rows.tsv" | wc -l)
	[ "$e" = my ] && q "$r1" "SET SESSION sql_log_bin = 0; $sql"
	before=$(actual | md5sum)
	if [ "$e" = pg ]; then
		run_reshard 0 "$e verify: before the run, nothing differs (exit 0)" \
			verify plan.cfg --format json
		equals "$(verify_field result movers_compared)" "same $movers" \
			"$e verify: every row that moves compared ($movers, by the oracle)"
		has "$dir/err" "writes are not fenced" "$e verify: it says writes are open"
	else
		run_reshard 3 "$e verify: before the run, the changed replica differs (exit 3)" \
			verify plan.cfg --format json
		equals "$(verify_kinds)" "$want" "$e verify: before the run, exactly the three"
	fi
	equals "$(actual | md5sum)" "$before" "$e verify: no row changed on any server"
	equals "$(fence_triggers)" 0 "$e verify: no trigger made"
	run_reshard 0 "$e verify: run --until promote" run plan.cfg --until promote --yes
	# The fence fires ALWAYS: off for one transaction, then ALWAYS again.
	if [ "$e" = pg ]; then
		local names off='' on=''
		names=$(q "$r1" "SELECT tgname FROM pg_trigger
			WHERE tgrelid = 'orders'::regclass AND NOT tgisinternal")
		for n in $names; do
			off+="ALTER TABLE orders DISABLE TRIGGER $n; "
			on+="ALTER TABLE orders ENABLE ALWAYS TRIGGER $n; "
		done
		q "$r1" "BEGIN; $off $sql; $on COMMIT"
	fi
	before=$(actual | md5sum)
	run_reshard 3 "$e verify: after promote, exit 3" verify plan.cfg --format json
	equals "$(verify_kinds)" "$want" \
		"$e verify: exactly the changed, the deleted and the extra row"
	equals "$(actual | md5sum)" "$before" "$e verify: still no row changed"
	(cd "$dir" && "$bin" status plan.cfg --format json) >"$dir/status.json" 2>&1
	equals "$(python3 -S -c 'import json, sys
d = json.load(open(sys.argv[1]))["differences"]
print(sum(x["pass"] == "verify-on-demand" for x in d))' "$dir/status.json")" 3 \
		"$e verify: status lists the three"
	# MariaDB's replica differed before the run: pre-verify found them too.
	[ "$e" = my ] && equals "$(python3 -S -c 'import json, sys
d = json.load(open(sys.argv[1]))["differences"]
print(sum(x["pass"] == "pre-verify" for x in d))' "$dir/status.json")" 3 \
		"$e verify: pre-verify found the three before the fence"
	aborted_clean "$e verify"
}

# recheck_checks: under the fence, a doubling's verify compares again
# what was written since pre-verify: a mover's copy changed on r1 after
# pre-verify compared it — MariaDB: on the replica before the fence,
# sql_log_bin off (r1's copy of the capture logs it); PostgreSQL: on the
# promoted r1 with only its fence triggers off (its capture logs it) — stops
# the run in verify (exit 3) naming exactly that row and column.
recheck_checks() {
	local e=$ENGINE r1 cr ci sql names n off='' on=''
	reset >/dev/null 2>&1
	load || bail "loading the primaries again"
	check "$e recheck: the replicas have the primaries' rows" wait_replicas
	fresh recheck
	r1=$(url_of replica 1)
	read -r cr ci < <(awk -F'\t' 'NR == FNR { if ($2 == "p1.orders" && $3 == "r1.orders") m[$1] = 1; next }
		($3 in m) && $2 % 4 != 0 { print $1 " " $2 }' \
		"$tmp/routes.tsv" "$tmp/rows.tsv" | head -1)
	[ -n "$ci" ] || bail "recheck: no row that moves from p1 to r1"
	sql="UPDATE orders SET note = 'changed after pre-verify' WHERE region = '$cr' AND id = $ci"
	if [ "$e" = my ]; then
		run_reshard 0 "$e recheck: run --until pre-verify" run plan.cfg --until pre-verify --yes
		q "$r1" "SET SESSION sql_log_bin = 0; $sql"
	else
		run_reshard 0 "$e recheck: run --until promote" run plan.cfg --until promote --yes
		names=$(q "$r1" "SELECT tgname FROM pg_trigger WHERE tgrelid = 'orders'::regclass
			AND tgname LIKE 'reshard_fence%'")
		for n in $names; do
			off+="ALTER TABLE orders DISABLE TRIGGER $n; "
			on+="ALTER TABLE orders ENABLE ALWAYS TRIGGER $n; "
		done
		q "$r1" "BEGIN; $off $sql; $on COMMIT"
	fi
	run_reshard 3 "$e recheck: the run stops in verify (exit 3)" run plan.cfg --yes
	has "$dir/err" "compares again only the rows changed since pre-verify" \
		"$e recheck: verify compared only what changed"
	(cd "$dir" && "$bin" status plan.cfg --format json) >"$dir/status.json" 2>&1
	equals "$(python3 -S -c 'import json, sys
for x in json.load(open(sys.argv[1]))["differences"]:
    if x["pass"] == "verify":
        print(x["kind"], x["owner"], json.dumps(x["primary_key"]), json.dumps(x["columns"]))' \
		"$dir/status.json")" "differs r1.orders [\"$cr\", \"$ci\"] [\"note\"]" \
		"$e recheck: exactly that row and column"
	aborted_clean "$e recheck"
}

# aborted_clean NAME: abort the run in $dir (stopped before publish):
# no change capture, fence or guard left on any server, p or r.
aborted_clean() {
	run_reshard 0 "$1: abort" abort plan.cfg
	equals "$(fence_triggers)" 0 "$1: abort leaves no fence or guard trigger"
	# shellcheck disable=SC2046 # one shard name a word
	equals "$(reshard_tables $(shard_names) | grep -v ' reshard_marker$')" "" \
		"$1: abort leaves no change log, on the primaries or the replicas"
}

# verify_field KEY...: those fields of $dir/out (verify --format json).
verify_field() {
	python3 -S -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(str(d[k]) for k in sys.argv[2:]))' "$dir/out" "$@"
}

# verify_kinds: the differences of $dir/out, "kind shard table owner pk
# columns" a line, sorted.
verify_kinds() {
	python3 -S -c 'import json, sys
for x in json.load(open(sys.argv[1]))["differences"]:
    print(x["kind"], x["shard"], x["table"], x["owner"],
          json.dumps(x["primary_key"], ensure_ascii=False),
          json.dumps(x["columns"]))' "$dir/out" | sort
}
