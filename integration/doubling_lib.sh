# shellcheck shell=bash
# integration/doubling_lib.sh: a doubling on real servers, for
# scenario_doubling_pg.sh and scenario_doubling_my.sh.  Sourced, not run.
#
# The servers of integration/servers.sh (RESHARD_SERVERS_DIR/env): P
# primary/replica pairs of one engine (RESHARD_PAIRS, 1 when the env names
# one pair only).  The plan doubles P primaries p1..pP into 2P shards by
# promoting their replicas r1..rP: slots P x 2 -> 2P x 2, so the replica of
# database i is database i + P.  Rows (a composite primary key, NULLs,
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
		psql -X -w -q -At -F $'\t' -v ON_ERROR_STOP=1 "$url" -c "$sql"
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
		echo 'tables = ( { name = "orders"; key = "customer_id"; } );'
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
		echo "from = { map = \"slots\"; databases = $pairs; tables_per_db = 2; nodes = [$from_nodes]; };"
		echo "to   = { map = \"slots\"; databases = $((2 * pairs)); tables_per_db = 2; nodes = [$to_nodes]; };"
		echo 'strategy = "doubling";'
		echo "options = { batch_rows = ${BATCH:-2000}; ${2:-} };"
		echo 'publish = { file = "routing.cfg"; };'
	} >"$1"
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
	cut -f3 "$tmp/rows.tsv" | sort -u |
		python3 -S "$oracle" --hash sha256_64 --table orders \
			--from "slots:$pairs:2:$from" --to "slots:$((2 * pairs)):2:$to" \
			>"$tmp/routes.tsv" || return 1
}

# expected which: "owner<TAB>region<TAB>id<TAB>key<TAB>amount<TAB>note" of
# every row under `from` (which=2) or `to` (which=3), sorted.
expected() {
	awk -F'\t' -v col="$1" 'NR == FNR { owner[$1] = $col; next }
		{ print owner[$3] "\t" $0 }' "$tmp/routes.tsv" "$tmp/rows.tsv" |
		sort
}

# load: every row into its owner's table under `from`, on the primaries.
load() {
	local s t
	for s in $(seq 1 "$pairs"); do
		for t in 0 1; do
			q "$(url_of primary "$s")" "DROP TABLE IF EXISTS orders_$t;
				CREATE TABLE orders_$t $(table_sql)" || return 1
			expected 2 | awk -F'\t' -v o="p$s.orders_$t" '$1 == o' |
				cut -f2- >"$tmp/load.tsv"
			if [ "$ENGINE" = pg ]; then
				psql -X -w -q -v ON_ERROR_STOP=1 "$(url_of primary "$s")" \
					-c "\\copy orders_$t FROM '$tmp/load.tsv'" || return 1
			else
				python3 -S - "$tmp/load.tsv" "orders_$t" >"$tmp/load.sql" <<'PY' || return 1
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
		for t in 0 1; do
			q "$(shard_url "$s")" "SELECT region, id, customer_id,
				coalesce($amount, $null),
				coalesce(note, $null) FROM orders_$t" 2>&1 |
				sed "s/^/$s.orders_$t\t/"
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
		for t in 0 1; do
			want=$(q "$(url_of primary "$k")" "SELECT count(*) FROM orders_$t")
			tries=200
			while n=$(q "$(url_of replica "$k")" "SELECT count(*) FROM orders_$t" 2>/dev/null) &&
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
		for t in 0 1; do
			q "$(shard_url "$s")" "DROP TABLE IF EXISTS orders_$t,
				reshard_del_orders_$t" >/dev/null 2>&1
		done
		q "$(shard_url "$s")" "DROP TABLE IF EXISTS reshard_marker" >/dev/null 2>&1
	done
	"$lib_dir/servers.sh" reset-replicas "$ENGINE" "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}"
}

begin() {
	trap 'reset >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
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

# fence_triggers: how many of reshard's fence triggers the servers carry.
fence_triggers() {
	local s n=0 c sql
	if [ "$ENGINE" = pg ]; then
		sql="SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'reshard_fence%'"
	else
		sql="SELECT count(*) FROM information_schema.TRIGGERS
			WHERE TRIGGER_NAME LIKE 'reshard_fence%'"
	fi
	for s in $(shard_names); do
		c=$(q "$(shard_url "$s")" "$sql") || return 1
		n=$((n + c))
	done
	echo "$n"
}

# not_fenced: status of the run in $dir says no write is fenced.
not_fenced() {
	(cd "$dir" && "$bin" status plan.cfg --format json) >"$dir/status.json" 2>&1
	has "$dir/status.json" '"fenced": false' "$1: status says writes are not fenced"
}
