#!/usr/bin/env bash
# A split across engines on real servers: a ring of 4 nodes growing to 5
# (sha256_64, 100 virtual nodes, keys cliente:0 … cliente:N-1).  n0 and n1
# are databases on pair 1's PostgreSQL primary, n2 and n3 databases on pair
# 1's MariaDB primary, and the new node n4 is a SQLite file.  Who owns a row
# comes from tests/reshard_oracle.py (integration/split_data.py), never
# from reshard.  Sections:
#   ring     a writer inserting, updating (the shard key too) and deleting
#            throughout, rows routed by the routing file; kill -9 at seeded
#            instants until a run completes; every row exact at the end,
#            n4 holding exactly the oracle's movers, every acknowledged
#            write present, no capture left
#   conn     the server kills reshard's connections in the middle of the
#            copy: the run fails (exit 1), a second one finishes exactly
#   aborts   abort after every step before publish: every source exactly
#            as before (dumps equal), n4 empty, no trigger or change log
#            left, markers aborted
#   tamper   one copied row changed on n4: verify exits 3 naming it,
#            nothing purged
#   refused  a source named by its replica's URL (PostgreSQL, MariaDB); a
#            target that holds a row; a target column of another kind;
#            a MariaDB source with a cascading foreign key (then allowed)
#   values   NULL and empty strings, emoji, 30-digit decimals, floats,
#            timestamps with and without zone, booleans, bytes and a
#            composite key, split PostgreSQL -> MariaDB -> SQLite and
#            compared with what was written; the first read under
#            session defaults of 15 float digits and day-first dates
#   load     MariaDB -> PostgreSQL by COPY: tabs, newlines, backslashes and
#            "\N" in values; a crash between a chunk's rows and its journal
#            record, then the target's connections killed mid-copy, each
#            resumed (the chunk's load meets its own rows)
#   create   the target table made from the source's definition
#            (options.create_tables), PostgreSQL and MariaDB, generated
#            columns among them (the copy writes every other column)
#   unique   a unique email on a MariaDB and a PostgreSQL target: catch-up
#            meets a stale copy holding a value a newer row now has
# Usage: integration/scenario_split.sh (after integration/servers.sh start).
set -uo pipefail
export LC_ALL=C.UTF-8
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck disable=SC1091
source "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}/env"
bin=${RESHARD_BIN:-$root/build/reshard}
case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac
data="python3 $here/split_data.py"
rows=${ROWS:-100000}
tmp=$(mktemp -d /tmp/reshard-split.XXXXXX)
trap '[ -z "${writer_pid:-}" ] || kill "$writer_pid" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
passed=0 failed=0 writer_pid=''
pg_app=${RESHARD_PG_PRIMARY_URL:?no PostgreSQL primary in the servers env}
my_app=${RESHARD_MY_PRIMARY_URL:?no MariaDB primary in the servers env}

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

# The URL of database DB on the server of APP-URL.
url_db() { echo "${1%/*}/$2"; }
pg() { PGOPTIONS="-c client_min_messages=warning" psql -X -w -q -At -F $'\t' -v ON_ERROR_STOP=1 "$1" -c "$2"; }
my() { # my URL SQL
	[[ $1 =~ ^mysql://([^:]+):([^@]+)@([^:/]+):([0-9]+)/(.+)$ ]] || return 2
	mariadb --no-defaults --batch --raw --skip-column-names --local-infile=1 \
		--default-character-set=utf8mb4 -u "${BASH_REMATCH[1]}" \
		-p"${BASH_REMATCH[2]}" -h "${BASH_REMATCH[3]}" \
		-P "${BASH_REMATCH[4]}" "${BASH_REMATCH[5]}" -e "$2"
}
engine_of() { case $1 in n0 | n1) echo pg ;; n2 | n3) echo my ;; n4) echo sqlite ;; esac; }
url_of() { # the URL of node NAME in the current $dir
	case $1 in
	n0 | n1) url_db "$pg_app" "split_$1" ;;
	n2 | n3) url_db "$my_app" "split_$1" ;;
	n4) echo "$dir/n4.db" ;;
	esac
}
sql_on() { # sql_on NODE SQL
	case $(engine_of "$1") in
	pg) pg "$(url_of "$1")" "$2" ;;
	my) my "$(url_of "$1")" "$2" ;;
	sqlite) sqlite3 -batch "$(url_of "$1")" "$2" ;;
	esac
}

orders_sql() { # the orders table in ENGINE's types
	case $1 in
	pg) echo "CREATE TABLE orders (id bigint PRIMARY KEY, customer varchar(40) NOT NULL, amount numeric(12,2), note text)" ;;
	my) echo "CREATE TABLE orders (id bigint PRIMARY KEY, customer varchar(40) NOT NULL, amount decimal(12,2), note text) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4" ;;
	sqlite) echo "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, amount DECIMAL(12,2), note TEXT)" ;;
	esac
}

# fresh NAME N: a folder with the five nodes made again, N rows loaded on
# their owners under `from`, and the plan.
fresh() {
	local s
	dir=$tmp/$1
	rm -rf "$dir" && mkdir -p "$dir"
	for s in n0 n1; do
		pg "$pg_app" "DROP DATABASE IF EXISTS split_$s WITH (FORCE)" &&
			pg "$pg_app" "CREATE DATABASE split_$s" || return 1
	done
	for s in n2 n3; do
		my "$my_app" "DROP DATABASE IF EXISTS split_$s; CREATE DATABASE split_$s" || return 1
	done
	: >"$dir/nodes.tsv"
	for s in n0 n1 n2 n3 n4; do
		printf '%s\t%s\t%s\n' "$s" "$(engine_of "$s")" "$(url_of "$s")" >>"$dir/nodes.tsv"
		sql_on "$s" "$(orders_sql "$(engine_of "$s")")" || return 1
	done
	$data init "$dir" "$2" || return 1
	for s in n0 n1; do
		pg "$(url_of $s)" "\\copy orders FROM '$dir/load/$s.tsv'" || return 1
	done
	for s in n2 n3; do
		my "$(url_of $s)" "LOAD DATA LOCAL INFILE '$dir/load/$s.tsv' INTO TABLE orders
			CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\'" || return 1
	done
	write_plan "$dir/plan.cfg" ""
}

# write_plan FILE OPTIONS: the ring 4 -> 5 plan over the nodes.
write_plan() {
	local s
	{
		echo 'version = 1; name = "ring5"; hash = "sha256_64";'
		echo 'tables = ( { name = "orders"; key = "customer"; } );'
		echo 'shards = ('
		for s in n0 n1 n2 n3 n4; do
			printf '  { name = "%s"; url = "%s"; }%s\n' "$s" \
				"$(case $s in n4) echo "sqlite://$dir/n4.db" ;; *) url_of "$s" ;; esac)" \
				"$([ $s = n4 ] || echo ,)"
		done
		echo ');'
		echo 'from = { map = "ring"; vnodes = 100; nodes = ["n0", "n1", "n2", "n3"]; };'
		echo 'to   = { map = "ring"; vnodes = 100; nodes = ["n0", "n1", "n2", "n3", "n4"]; };'
		echo 'strategy = "split";'
		echo "options = { batch_rows = 500; parallel = 4; $2 };"
		# The hook stands for the routers: a running writer must have
		# switched to the new routing before unfence, or a write it
		# routed by the old one just before publish could land on the
		# old owner just after unfence (a stale router: final-check
		# would rightly stop the run).
		echo 'publish = { file = "routing.cfg"; command = "i=0; while [ -e writer.running ] && [ ! -e writer.ack ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done"; };'
	} >"$1"
}

run_reshard() { # run_reshard WANT NAME ARGS...
	local want=$1 name=$2 rc=0
	shift 2
	(cd "$dir" && "$bin" "$@") >"$dir/out" 2>"$dir/err" </dev/null || rc=$?
	if [ "$rc" = "$want" ]; then
		ok "$name"
	else
		{ echo "exit $rc, expected $want; stderr:"; tail -30 "$dir/err"; } >"$tmp/why"
		not_ok "$name" "$tmp/why"
	fi
}

# rows_exact NAME: every row once, on its owner under `to`, as expected
# (the initial rows with the writer's acknowledged writes).
rows_exact() {
	if ! $data expect "$dir" || ! $data actual "$dir"; then
		not_ok "$1: rows read"
		return
	fi
	if cmp -s "$dir/expected.tsv" "$dir/actual.tsv"; then
		ok "$1: every row exactly once, on its owner under to, unchanged ($(wc -l <"$dir/actual.tsv") rows)"
	else
		diff "$dir/expected.tsv" "$dir/actual.tsv" | head -20 >"$tmp/why"
		not_ok "$1: every row exactly once, on its owner under to, unchanged" "$tmp/why"
	fi
}

# leftovers: reshard's triggers and tables on every node, but its marker.
leftovers() {
	local s
	for s in n0 n1; do
		pg "$(url_of $s)" "SELECT '$s', tgname FROM pg_trigger WHERE NOT tgisinternal
			UNION ALL SELECT '$s', tablename FROM pg_tables
			WHERE tablename LIKE 'reshard%' AND tablename <> 'reshard_marker'"
	done
	for s in n2 n3; do
		my "$(url_of $s)" "SELECT '$s', trigger_name FROM information_schema.triggers
			WHERE trigger_schema = database() UNION ALL SELECT '$s', table_name
			FROM information_schema.tables WHERE table_schema = database()
			AND table_name LIKE 'reshard%' AND table_name <> 'reshard_marker'"
	done
	sqlite3 "$dir/n4.db" "SELECT 'n4', name FROM sqlite_master WHERE type = 'trigger'
		OR (name LIKE 'reshard%' AND name NOT LIKE '%marker%')"
}

dumps() { # the sources' orders, sorted, one file
	local s
	for s in n0 n1; do pg "$(url_of $s)" "SELECT '$s', * FROM orders ORDER BY id"; done
	for s in n2 n3; do my "$(url_of $s)" "SELECT '$s', orders.* FROM orders ORDER BY id"; done
}

writer_start() {
	rm -f "$dir/writer.stop" "$dir/writer.ack"
	: >"$dir/writer.running"
	: >"$dir/writer.log"
	: >"$dir/writer.rejected"
	: >"$dir/writer.failed"
	$data writer "$dir" "$1" &
	writer_pid=$!
}
writer_stop() {
	touch "$dir/writer.stop"
	[ -z "$writer_pid" ] || wait "$writer_pid"
	rm -f "$dir/writer.running"
	writer_pid=''
}

# killed_until_done NAME: `run --yes` killed with SIGKILL until a run
# completes: the first two attempts a seeded instant after copy starts,
# the next two after catch-up starts, then at seeded instants after the
# start; where each kill landed is printed.
killed_until_done() {
	local attempts=0 rc=1 delay pid killed=() wait_for step tries
	RANDOM=20261204
	while [ "$rc" -ne 0 ] && [ "$attempts" -lt 30 ]; do
		attempts=$((attempts + 1))
		case $attempts in
		1 | 2) wait_for=copy delay=$((RANDOM % 300)) ;;
		3 | 4) wait_for=catch-up delay=$((RANDOM % 30)) ;;
		*) wait_for='' delay=$((150 + RANDOM % (attempts <= 8 ? 900 : 600 * attempts))) ;;
		esac
		: >"$dir/attempt.err"
		(cd "$dir" && exec "$bin" run plan.cfg --yes) >"$dir/out" 2>"$dir/attempt.err" </dev/null &
		pid=$!
		tries=400
		while [ -n "$wait_for" ] && [ $tries -gt 0 ] && kill -0 "$pid" 2>/dev/null &&
			! grep -qE "^step $wait_for +(starting|resuming)" "$dir/attempt.err"; do
			sleep 0.01
			tries=$((tries - 1))
		done
		sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		rc=$?
		cat "$dir/attempt.err" >>"$dir/err"
		step=${wait_for:+$wait_for+}
		[ "$rc" -ne 0 ] && killed+=("$( (cd "$dir" && "$bin" status plan.cfg \
			--format json 2>/dev/null) | python3 -S -c 'import json, sys
try:
    steps = json.load(sys.stdin)["steps"]
    run = [s["name"] for s in steps if s["state"] != "done"]
    print(run[0] if run else "end")
except Exception:
    print("start")')@$step${delay}ms")
	done
	echo "# killed in: ${killed[*]}"
	if [ "$rc" -eq 0 ]; then
		ok "$1: a run completed after $((attempts - 1)) kills"
	else
		not_ok "$1: no run completed in 30 attempts (last exit $rc)" "$dir/err"
	fi
}

# same_content NAME WANT GOT: passes when the two files are equal (NAME
# then says how many rows), else shows their first differences.
same_content() {
	if cmp -s "$2" "$3"; then
		ok "$1 ($(wc -l <"$3") rows)"
	else
		diff "$2" "$3" | head -10 >"$tmp/why"
		not_ok "$1" "$tmp/why"
	fi
}

section_ring() {
	fresh ring "$rows" || { not_ok "ring: setup"; return; }
	local movers
	movers=$($data movers "$dir" | wc -l)
	run_reshard 0 "ring: dry-run" dry-run plan.cfg --summary --format json
	equals "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["moved"])' "$dir/out")" \
		"$movers" "ring: the dry-run's movers are the oracle's ($movers)"
	writer_start 11
	killed_until_done "ring"
	writer_stop
	rows_exact "ring"
	equals "$(sql_on n4 "SELECT count(*) FROM orders")" \
		"$(awk -F'\t' '$1 == "n4"' "$dir/expected.tsv" | wc -l)" "ring: n4 holds its rows and no other"
	equals "$(leftovers)" "" "ring: no trigger and no change log left on any node"
	check "ring: the writer's writes were refused only by the fence" test ! -s "$dir/writer.failed"
	echo "# ring: $(wc -l <"$dir/writer.log") writes acknowledged, $(wc -l <"$dir/writer.rejected") refused by the fence"
}

section_conn() {
	fresh conn "$rows" || { not_ok "conn: setup"; return; }
	write_plan "$dir/plan.cfg" "max_rows_per_second = 20000;"
	(cd "$dir" && exec "$bin" run plan.cfg --yes) >"$dir/out" 2>"$dir/err" </dev/null &
	local pid=$! tries=200
	until grep -q "step copy .*starting" "$dir/err" || [ $tries -eq 0 ]; do
		sleep 0.05
		tries=$((tries - 1))
	done
	sleep 0.3
	pg "$pg_app" "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'reshard'" >/dev/null
	wait "$pid"
	equals "$?" 1 "conn: connections killed by the server mid-copy: the run fails (exit 1)"
	has "$dir/err" "\`reshard run plan.cfg\` resumes at step copy" \
		"conn: the error says that run resumes at the copy"
	run_reshard 0 "conn: run again finishes" run plan.cfg --yes
	rows_exact "conn"
}

section_aborts() {
	local step
	for step in preflight capture copy catch-up pre-verify fence final-catch-up verify; do
		fresh "abort-$step" 3000 || { not_ok "abort $step: setup"; continue; }
		dumps >"$dir/before"
		run_reshard 0 "abort $step: run --until $step" run plan.cfg --until "$step" --yes
		run_reshard 0 "abort $step: abort" abort plan.cfg
		dumps >"$dir/after"
		check "abort $step: every source exactly as before" cmp "$dir/before" "$dir/after"
		equals "$(sql_on n4 "SELECT count(*) FROM orders")" 0 "abort $step: n4 empty"
		equals "$(leftovers)" "" "abort $step: no trigger and no change log left"
		if [ "$step" != preflight ]; then
			equals "$(sql_on n0 "SELECT state FROM reshard_marker")/$(sql_on n2 "SELECT state FROM reshard_marker")/$(sql_on n4 "SELECT state FROM reshard_marker")" \
				aborted/aborted/aborted "abort $step: the markers say aborted"
		fi
	done
	run_reshard 0 "aborts: a new run after the last abort completes" run plan.cfg --yes
	rows_exact "aborts"
	run_reshard 2 "aborts: abort after publish refuses" abort plan.cfg
}

section_tamper() {
	fresh tamper 3000 || { not_ok "tamper: setup"; return; }
	run_reshard 0 "tamper: run --until final-catch-up" run plan.cfg --until final-catch-up --yes
	local id
	id=$(sql_on n4 "SELECT id FROM orders ORDER BY id LIMIT 1 OFFSET 10")
	sql_on n4 "UPDATE orders SET amount = amount + 1 WHERE id = $id"
	dumps >"$dir/before"
	run_reshard 3 "tamper: verify finds the changed row (exit 3)" run plan.cfg --yes
	has "$dir/err" "(id = '$id')" "tamper: the message names the row"
	dumps >"$dir/after"
	check "tamper: nothing was purged" cmp "$dir/before" "$dir/after"
}

section_refused() {
	fresh refused 2000 || { not_ok "refused: setup"; return; }
	# A source named by its replica's URL: the rows the replica applies
	# fire no trigger there, so fence and capture would miss them.
	local s r url
	for s in n0 n2; do
		if [ $s = n0 ]; then r=${RESHARD_PG_REPLICA_URL:?}; else r=${RESHARD_MY_REPLICA_URL:?}; fi
		url=$(url_of $s)
		sed "s|\"$url\"|\"$(url_db "$r" "split_$s")\"|" "$dir/plan.cfg" >"$dir/replica.cfg"
		run_reshard 2 "refused: source $s named by its replica's URL (exit 2)" \
			run replica.cfg --yes
		has "$dir/err" "source $s applies another server's writes" \
			"refused: the message says $s is a replica"
		rm -f "$dir"/*.journal*
	done
	equals "$(leftovers)" "" "refused: nothing installed for a replica named as a source"
	sql_on n4 "INSERT INTO orders VALUES (99999999, 'x', 1, 'there before')"
	run_reshard 2 "refused: a target that holds a row (exit 2)" run plan.cfg --yes
	has "$dir/err" "already holds 1 rows" "refused: the message says the target is not empty"
	equals "$(leftovers)" "" "refused: nothing installed"
	sql_on n4 "DROP TABLE orders; CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, amount BLOB, note TEXT)"
	rm -f "$dir"/*.journal*
	run_reshard 1 "refused: a target column of another kind" run plan.cfg --yes
	has "$dir/err" "orders.amount is BLOB" "refused: the message names the column and both types"
	sql_on n4 "DROP TABLE orders; $(orders_sql sqlite)"
	# InnoDB runs a foreign key's actions without firing triggers: the
	# capture would miss a cascaded delete on a source.
	sql_on n2 "CREATE TABLE customers (customer varchar(40) PRIMARY KEY) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
		INSERT INTO customers SELECT DISTINCT customer FROM orders;
		ALTER TABLE orders ADD CONSTRAINT orders_customer FOREIGN KEY (customer)
			REFERENCES customers (customer) ON DELETE CASCADE"
	rm -f "$dir"/*.journal*
	run_reshard 0 "refused: explain of the plan" explain plan.cfg
	has "$dir/out" "table orders: foreign keys orders_customer (references customers: ON DELETE CASCADE, ON UPDATE RESTRICT) change its rows without triggers: preflight will refuse" \
		"refused: explain says preflight will refuse the cascading key"
	run_reshard 1 "refused: a MariaDB source with a cascading foreign key" run plan.cfg --yes
	has "$dir/err" "orders_customer (references customers: ON DELETE CASCADE, ON UPDATE RESTRICT)" \
		"refused: the message names the foreign key and its actions"
	has "$dir/err" "options.allow_cascades = true" "refused: the message says how to go ahead"
	equals "$(leftovers)" "" "refused: nothing installed for the cascading key"
	write_plan "$dir/plan.cfg" "allow_cascades = true;"
	rm -f "$dir"/*.journal*
	run_reshard 0 "refused: with options.allow_cascades the run goes ahead" run plan.cfg --yes
	has "$dir/err" "n2: table orders: foreign keys orders_customer" "refused: ... with a warning naming the key"
	rows_exact refused
}

# values: every kind of value through PostgreSQL -> MariaDB -> SQLite.
values_sql() {
	case $1 in
	pg) echo "CREATE TABLE vals (region text NOT NULL, id bigint NOT NULL, t text, d numeric(30,10), f double precision, ts timestamp(6), tz timestamptz(6), b boolean, by bytea, PRIMARY KEY (region, id))" ;;
	my) echo "CREATE TABLE vals (region varchar(40) NOT NULL, id bigint NOT NULL, t text, d decimal(30,10), f double, ts datetime(6), tz timestamp(6) NULL, b boolean, \`by\` blob, PRIMARY KEY (region, id)) DEFAULT CHARSET=utf8mb4" ;;
	sqlite) echo "CREATE TABLE vals (region TEXT NOT NULL, id INTEGER NOT NULL, t TEXT, d DECIMAL TEXT, f DOUBLE, ts TIMESTAMP, tz TIMESTAMPTZ, b BOOLEAN, by BLOB, PRIMARY KEY (region, id))" ;;
	esac
}
# The SQLite table declares its decimal DECIMAL TEXT: with NUMERIC affinity
# SQLite would keep 15 digits (verify would then stop the run, exit 3).
section_values() {
	dir=$tmp/values
	mkdir -p "$dir"
	pg "$pg_app" "DROP DATABASE IF EXISTS split_v1 WITH (FORCE)" && pg "$pg_app" "CREATE DATABASE split_v1"
	my "$my_app" "DROP DATABASE IF EXISTS split_v2; CREATE DATABASE split_v2"
	local v1 v2 v3=$dir/v3.db
	v1=$(url_db "$pg_app" split_v1)
	v2=$(url_db "$my_app" split_v2)
	pg "$v1" "$(values_sql pg)"
	my "$v2" "$(values_sql my)"
	sqlite3 "$v3" "$(values_sql sqlite)"
	pg "$v1" "INSERT INTO vals VALUES
		('r1', 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
		('r1', 2, '', 0, 0, '2026-01-01 00:00:00', '2026-01-01 00:00:00+00', false, ''),
		('emoji 🚀', 3, 'été ✓ 🎉', 12345678901234567890.1234567891, 3.141592653589793, '1999-12-31 23:59:59.123456', '2026-06-30 12:00:00.5+02', true, '\\x00ff10'),
		('l''r', 4, 'quote '' and \\ back', -0.0000000001, -1.5e-300, '2000-02-29 00:00:00.000001', '1970-01-01 00:00:01+00', true, '\\xdeadbeef'),
		('r2', 5, 'big', 99999999999999999999.9999999999, 1e300, '2038-01-19 03:14:08', '2038-01-19 03:14:07+00', false, '\\x'),
		('r3', 6, 'float', 1.5, 0.30000000000000004, '2001-02-03 04:05:06', '2001-02-03 04:05:06+00', true, '\\x01')"
	PGOPTIONS="-c client_min_messages=warning" psql -X -w -q -At -F $'\t' -P 'null=\N' "$v1" -c "SELECT region, id, t, d, f, to_char(ts, 'YYYY-MM-DD HH24:MI:SS.US'), to_char(tz AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), b, encode(by, 'hex') FROM vals ORDER BY region, id" >"$dir/want"
	# Plan A: every row from v1 to v2; plan B: every row from v2 to v3.
	cat >"$dir/a.cfg" <<-EOF
		version = 1; name = "vals-a"; hash = "sha256_64";
		tables = ( { name = "vals"; key = "region"; } );
		shards = ( { name = "v1"; url = "$v1"; }, { name = "v2"; url = "$v2"; } );
		from = { map = "ranges"; ranges = ( { end = "max"; node = "v1"; } ); };
		to = { map = "ranges"; ranges = ( { end = 0; node = "v1"; }, { end = "max"; node = "v2"; } ); };
		strategy = "split";
		publish = { file = "a.routing.cfg"; };
	EOF
	cat >"$dir/b.cfg" <<-EOF
		version = 1; name = "vals-b"; hash = "sha256_64";
		tables = ( { name = "vals"; key = "region"; } );
		shards = ( { name = "v1"; url = "$v1"; }, { name = "v2"; url = "$v2"; }, { name = "v3"; url = "sqlite://$v3"; } );
		from = { map = "ranges"; ranges = ( { end = 0; node = "v1"; }, { end = "max"; node = "v2"; } ); };
		to = { map = "ranges"; ranges = ( { end = 0; node = "v1"; }, { end = 1; node = "v2"; }, { end = "max"; node = "v3"; } ); };
		strategy = "split";
		publish = { file = "b.routing.cfg"; };
	EOF
	# Session defaults reshard must not read values by: 15 float digits
	# (0.30000000000000004 would be read, copied and compared as 0.3),
	# day-first dates.
	PGOPTIONS="-c extra_float_digits=0 -c DateStyle=SQL,DMY" \
		run_reshard 0 "values: PostgreSQL -> MariaDB (verify compares them in canonical form)" run a.cfg --yes
	run_reshard 0 "values: MariaDB -> SQLite" run b.cfg --yes
	equals "$(pg "$v1" "SELECT count(*) FROM vals")/$(my "$v2" "SELECT count(*) FROM vals")/$(sqlite3 "$v3" "SELECT count(*) FROM vals")" \
		0/0/6 "values: every row ends on SQLite"
	if python3 - "$v3" "$dir/want" >"$tmp/why" 2>&1 <<-'PY'
		import sqlite3, sys
		from decimal import Decimal
		got = sqlite3.connect(sys.argv[1]).execute(
		    "SELECT region, id, t, d, f, ts, tz, b, CASE WHEN by IS NULL THEN NULL ELSE hex(by) END FROM vals ORDER BY region, id").fetchall()
		want = [l.rstrip("\n").split("\t") for l in open(sys.argv[2], encoding="utf-8")]
		def norm_ts(v):
		    v = v.replace("T", " ").rstrip("Z")
		    if "." not in v:
		        v += ".000000"
		    head, frac = v.split(".")
		    return head + "." + (frac + "000000")[:6]
		bad = 0
		for g, w in zip(got, want):
		    w = [None if x == "\\N" else x for x in w]
		    checks = [
		        g[0] == w[0], str(g[1]) == w[1],
		        g[2] == w[2],
		        (g[3] is None and w[3] is None) or Decimal(str(g[3])) == Decimal(w[3]),
		        (g[4] is None and w[4] is None) or float(g[4]) == float(w[4]),
		        (g[5] is None and w[5] is None) or norm_ts(g[5]) == w[5],
		        (g[6] is None and w[6] is None) or norm_ts(g[6]) == w[6],
		        (g[7] is None and w[7] is None) or str(g[7]) == {"t": "1", "f": "0"}[w[7]],
		        (g[8] is None and w[8] is None) or (g[8] or "").lower() == (w[8] or ""),
		    ]
		    if not all(checks):
		        bad += 1
		        print("differs:", g, w, checks)
		sys.exit(1 if bad or len(got) != len(want) else 0)
	PY
	then
		ok "values: every value on SQLite is the one written on PostgreSQL"
	else
		not_ok "values: every value on SQLite is the one written on PostgreSQL" "$tmp/why"
	fi
}

# load: MariaDB -> PostgreSQL, where the copy goes by COPY FROM STDIN:
# notes with tabs, newlines, carriage returns, backslashes and "\N" (COPY's
# text format escapes them), and a crash after the side effect of chunk 3
# but before the journal has it done, so that the resumed copy loads rows
# already there: the load fails on their keys and the chunk is upserted
# instead (without that, the resume fails with a duplicate key).
section_load() {
	dir=$tmp/load
	mkdir -p "$dir"
	my "$my_app" "DROP DATABASE IF EXISTS split_l1; CREATE DATABASE split_l1"
	pg "$pg_app" "DROP DATABASE IF EXISTS split_l2 WITH (FORCE)" && pg "$pg_app" "CREATE DATABASE split_l2"
	local l1 l2
	l1=$(url_db "$my_app" split_l1)
	l2=$(url_db "$pg_app" split_l2)
	my "$l1" "$(orders_sql my)"
	pg "$l2" "$(orders_sql pg)"
	# The target database's sessions commit without waiting for the disk
	# (synchronous_commit off): reshard's must not (a chunk the journal
	# has done would be lost with the server).  A statement trigger
	# records the setting each COPY into orders ran under.
	pg "$pg_app" "ALTER DATABASE split_l2 SET synchronous_commit = off"
	pg "$l2" "CREATE TABLE commits_seen (setting text);
		CREATE FUNCTION commits_seen() RETURNS trigger LANGUAGE plpgsql AS
		\$\$ BEGIN INSERT INTO commits_seen
		VALUES (current_setting('synchronous_commit')); RETURN NULL; END \$\$;
		CREATE TRIGGER commits_seen AFTER INSERT ON orders
		FOR EACH STATEMENT EXECUTE FUNCTION commits_seen()"
	my "$l1" "INSERT INTO orders
		WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 600)
		SELECT i, CONCAT('c', i), i / 4, CASE i % 6
			WHEN 0 THEN CONCAT('tab\there ', i) WHEN 1 THEN CONCAT('line\nbreak\r', i)
			WHEN 2 THEN CONCAT('back\\\\slash \\\\N ', i) WHEN 3 THEN '\\\\N'
			WHEN 4 THEN NULL ELSE CONCAT('été 🚀 ', i) END FROM n"
	cat >"$dir/plan.cfg" <<-EOF
		version = 1; name = "load"; hash = "sha256_64";
		tables = ( { name = "orders"; key = "customer"; } );
		shards = ( { name = "l1"; url = "$l1"; }, { name = "l2"; url = "$l2"; } );
		from = { map = "ranges"; ranges = ( { end = "max"; node = "l1"; } ); };
		to = { map = "ranges"; ranges = ( { end = 0; node = "l1"; }, { end = "max"; node = "l2"; } ); };
		strategy = "split";
		options = { batch_rows = 100; parallel = 2; };
		publish = { file = "routing.cfg"; };
	EOF
	my "$l1" "SELECT id, customer, amount, HEX(note) FROM orders ORDER BY id" >"$dir/want"
	RESHARD_FAULT=after-effect:copy:3 run_reshard 99 "load: a crash after chunk 3's rows are on PostgreSQL, before its journal record" \
		run plan.cfg --until copy --yes
	# The target goes away mid-copy: its connections are killed by the
	# server while the throttled copy runs.
	sed -i 's/parallel = 2;/parallel = 2; max_rows_per_second = 60;/' "$dir/plan.cfg"
	(cd "$dir" && exec "$bin" run plan.cfg --until copy --yes) >"$dir/out" 2>"$dir/err" </dev/null &
	local pid=$!
	sleep 1.5
	pg "$l2" "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = 'split_l2' AND application_name = 'reshard'" >/dev/null
	wait "$pid"
	equals "$?" 1 "load: the target's connections killed mid-copy: the run fails (exit 1)"
	sed -i 's/ max_rows_per_second = 60;//' "$dir/plan.cfg"
	run_reshard 0 "load: run again resumes, chunk 3 upserted over its own load" run plan.cfg --yes
	pg "$l2" "SELECT id, customer, amount, upper(encode(convert_to(note, 'UTF8'), 'hex')) FROM orders ORDER BY id" |
		sed 's/\t$/\tNULL/' >"$dir/got"
	sed -i 's/\t$/\tNULL/' "$dir/want"
	same_content "load: every row on PostgreSQL, byte for byte" "$dir/want" "$dir/got"
	equals "$(pg "$l2" "SELECT string_agg(DISTINCT setting, ',') FROM commits_seen")" local \
		"load: reshard's loads commit to disk, though the database's default is off"
	equals "$(my "$l1" "SELECT count(*) FROM orders")" 0 "load: the source gave every row away"
}

# load_my: PostgreSQL -> MariaDB, where the copy goes by LOAD DATA LOCAL
# INFILE served from memory: the same notes (LOAD DATA's text format
# escapes tabs, newlines, backslashes; "\N" text is not NULL), and the
# same crash after the side effect of chunk 3, before its journal record:
# the resumed copy loads rows already there, which LOAD DATA LOCAL skips
# with a warning; the load is rolled back and the chunk upserted, so the
# rows end byte for byte as on the source.
section_load_my() {
	dir=$tmp/load_my
	mkdir -p "$dir"
	pg "$pg_app" "DROP DATABASE IF EXISTS split_m1 WITH (FORCE)" && pg "$pg_app" "CREATE DATABASE split_m1"
	my "$my_app" "DROP DATABASE IF EXISTS split_m2; CREATE DATABASE split_m2"
	local m1 m2
	m1=$(url_db "$pg_app" split_m1)
	m2=$(url_db "$my_app" split_m2)
	pg "$m1" "$(orders_sql pg)"
	my "$m2" "$(orders_sql my)"
	pg "$m1" "INSERT INTO orders SELECT i, 'c' || i, i / 4.0, CASE i % 6
			WHEN 0 THEN E'tab\\there ' || i WHEN 1 THEN E'line\\nbreak\\r' || i
			WHEN 2 THEN E'back\\\\slash \\\\N ' || i WHEN 3 THEN E'\\\\N'
			WHEN 4 THEN NULL ELSE 'été 🚀 ' || i END FROM generate_series(1, 600) i"
	cat >"$dir/plan.cfg" <<-EOF
		version = 1; name = "load-my"; hash = "sha256_64";
		tables = ( { name = "orders"; key = "customer"; } );
		shards = ( { name = "m1"; url = "$m1"; }, { name = "m2"; url = "$m2"; } );
		from = { map = "ranges"; ranges = ( { end = "max"; node = "m1"; } ); };
		to = { map = "ranges"; ranges = ( { end = 0; node = "m1"; }, { end = "max"; node = "m2"; } ); };
		strategy = "split";
		options = { batch_rows = 100; parallel = 2; };
		publish = { file = "routing.cfg"; };
	EOF
	RESHARD_FAULT=after-effect:copy:3 run_reshard 99 "load_my: a crash after chunk 3's rows are on MariaDB, before its journal record" \
		run plan.cfg --until copy --yes
	# The rows of the chunk cut short change on the source: a load that
	# skipped the keys already there would leave their old notes.
	local range after upto
	range=$(sqlite3 "$dir/load-my.journal" "SELECT json_extract(after_key, '\$[0]') || ' ' ||
		json_extract(upto_key, '\$[0]') FROM chunks WHERE step = 'copy' AND state = 'started'")
	read -r after upto <<<"$range"
	pg "$m1" "UPDATE orders SET note = 'changed ' || id WHERE id > ${after:-0} AND id <= ${upto:-0}"
	pg "$m1" "SELECT id, customer, amount, upper(encode(convert_to(note, 'UTF8'), 'hex')) FROM orders ORDER BY id" |
		sed 's/\t$/\tNULL/' >"$dir/want"
	run_reshard 0 "load_my: resume the copy (chunk $after..$upto again)" run plan.cfg --until copy --yes
	equals "$(my "$m2" "SELECT count(*) FROM orders WHERE id > ${after:-0} AND id <= ${upto:-0}
		AND note = CONCAT('changed ', id)")" 100 \
		"load_my: the chunk cut short is upserted over its own load (its 100 rows as the source has them now)"
	run_reshard 0 "load_my: the run goes to its end" run plan.cfg --yes
	my "$m2" "SELECT id, customer, amount, HEX(note) FROM orders ORDER BY id" >"$dir/got"
	same_content "load_my: every row on MariaDB, byte for byte" "$dir/want" "$dir/got"
	equals "$(pg "$m1" "SELECT count(*) FROM orders")" 0 "load_my: the source gave every row away"
}

# create: options.create_tables on PostgreSQL -> PostgreSQL and MariaDB
# -> MariaDB, the target database empty: the table is made from the
# source's definition (identity or AUTO_INCREMENT, collations, defaults,
# checks, unique and partial or full-text indexes), the foreign key left
# out and said so; at the end its definition is the source's but for that
# key, and every row is there.  A serial column (a default from a
# sequence) is refused in preflight, naming the column.
pg_shape() { # the columns, constraints and indexes of orders, one a line (a
	# unique constraint is made again as a unique index: the same index)
	pg "$1" "SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
		|| ' ' || a.attnotnull || ' ' || a.attidentity::text || ' '
		|| coalesce(pg_get_expr(d.adbin, d.adrelid), '-') || ' '
		|| coalesce(co.collname, '-')
		FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid
		AND d.adnum = a.attnum LEFT JOIN pg_collation co
		ON co.oid = a.attcollation AND a.attcollation <> 100
		WHERE a.attrelid = 'orders'::regclass AND a.attnum > 0
		AND NOT a.attisdropped ORDER BY a.attnum"
	pg "$1" "SELECT contype::text || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = 'orders'::regclass AND contype NOT IN ('f', 'u') ORDER BY 1"
	pg "$1" "SELECT pg_get_indexdef(indexrelid) FROM pg_index
		WHERE indrelid = 'orders'::regclass ORDER BY 1"
}
my_shape() { # SHOW CREATE TABLE orders, its lines sorted, without the
	# foreign key and the AUTO_INCREMENT counter
	my "$1" "SHOW CREATE TABLE orders" | cut -f2- | sed 's/\\n/\n/g' |
		grep -v 'FOREIGN KEY' | sed -E 's/,$//; s/ AUTO_INCREMENT=[0-9]+//' | sort
}
same_shape() { # same_shape NAME GOT WANT: WANT read, and GOT equal to it
	if [ -z "$3" ]; then
		not_ok "$1 (the source's definition could not be read)"
	else
		equals "$2" "$3" "$1"
	fi
}
create_plan() { # create_plan FILE URL1 URL2
	cat >"$1" <<-EOF
		version = 1; name = "create"; hash = "sha256_64";
		tables = ( { name = "orders"; key = "customer"; } );
		shards = ( { name = "c1"; url = "$2"; }, { name = "c2"; url = "$3"; } );
		from = { map = "ranges"; ranges = ( { end = "max"; node = "c1"; } ); };
		to = { map = "ranges"; ranges = ( { end = "0x7fffffffffffffff"; node = "c1"; }, { end = "max"; node = "c2"; } ); };
		strategy = "split";
		options = { batch_rows = 100; parallel = 2; create_tables = true; };
		publish = { file = "routing.cfg"; };
	EOF
}
section_create() {
	local c1 c2
	dir=$tmp/create-pg
	mkdir -p "$dir"
	for d in c1 c2; do
		pg "$pg_app" "DROP DATABASE IF EXISTS split_$d WITH (FORCE)" && pg "$pg_app" "CREATE DATABASE split_$d"
	done
	c1=$(url_db "$pg_app" split_c1)
	c2=$(url_db "$pg_app" split_c2)
	pg "$c1" "CREATE TABLE parent (id int PRIMARY KEY);
		INSERT INTO parent VALUES (1);
		CREATE TABLE orders (id bigint GENERATED BY DEFAULT AS IDENTITY,
			customer text COLLATE \"C\" NOT NULL,
			amount numeric(30,2) DEFAULT 0 CHECK (amount >= 0),
			note text DEFAULT 'it''s', parent int REFERENCES parent (id),
			created timestamptz NOT NULL DEFAULT now(),
			doubled numeric(30,2) GENERATED ALWAYS AS (amount * 2) STORED,
			PRIMARY KEY (customer, id), UNIQUE (note));
		CREATE INDEX orders_created ON orders (created DESC) WHERE amount > 0;
		INSERT INTO orders (customer, amount, note, parent)
		SELECT 'c' || i, i, 'n' || i, 1 FROM generate_series(1, 400) i"
	create_plan "$dir/plan.cfg" "$c1" "$c2"
	run_reshard 0 "create: PostgreSQL, the run makes the table and completes" run plan.cfg --yes
	has "$dir/err" "left out of orders: constraint orders_parent_fkey FOREIGN KEY (parent) REFERENCES parent(id)" \
		"create: PostgreSQL, preflight says the foreign key is left out"
	has "$dir/err" "c2: table orders made, with 1 unique index" "create: PostgreSQL, the unique index with the table"
	has "$dir/err" "c2: table orders: 1 secondary index made" "create: PostgreSQL, the other index after the copy"
	same_shape "create: PostgreSQL, the table is defined as on the source" \
		"$(pg_shape "$c2")" "$(pg_shape "$c1")"
	equals "$(($(pg "$c1" "SELECT count(*) FROM orders") + $(pg "$c2" "SELECT count(*) FROM orders")))" 400 \
		"create: PostgreSQL, every row once"
	# A serial column is refused.
	pg "$pg_app" "DROP DATABASE split_c2 WITH (FORCE)" && pg "$pg_app" "CREATE DATABASE split_c2"
	pg "$c1" "DROP TABLE orders; CREATE TABLE orders (id serial, customer text,
		PRIMARY KEY (customer, id))"
	rm -f "$dir"/create.journal*
	run_reshard 1 "create: PostgreSQL, a serial column is refused" run plan.cfg --yes
	has "$dir/err" "column id defaults to nextval('orders_id_seq'::regclass), from a sequence of this server only" \
		"create: PostgreSQL, the refusal names the column and its sequence"
	equals "$(pg "$c2" "SELECT count(*) FROM pg_class WHERE relname = 'orders'")" 0 \
		"create: PostgreSQL, nothing made on the target"

	dir=$tmp/create-my
	mkdir -p "$dir"
	for d in c1 c2; do
		my "$my_app" "DROP DATABASE IF EXISTS split_$d; CREATE DATABASE split_$d"
	done
	c1=$(url_db "$my_app" split_c1)
	c2=$(url_db "$my_app" split_c2)
	my "$c1" "CREATE TABLE parent (id int PRIMARY KEY) ENGINE=InnoDB;
		INSERT INTO parent VALUES (1);
		CREATE TABLE orders (id bigint NOT NULL AUTO_INCREMENT,
			customer varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
			amount decimal(30,2) DEFAULT 0 CHECK (amount >= 0),
			note varchar(100) DEFAULT 'it''s', parent int,
			created timestamp(6) NOT NULL DEFAULT current_timestamp(6),
			doubled decimal(30,2) AS (amount * 2) STORED,
			tripled decimal(30,2) AS (amount * 3) VIRTUAL,
			PRIMARY KEY (customer, id), KEY (id), UNIQUE KEY note (note),
			FULLTEXT KEY words (note), KEY parent (parent),
			CONSTRAINT to_parent FOREIGN KEY (parent) REFERENCES parent (id))
			ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='two\nlines';
		INSERT INTO orders (customer, amount, note, parent)
		WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400)
		SELECT CONCAT('c', i), i, CONCAT('n', i), 1 FROM n"
	create_plan "$dir/plan.cfg" "$c1" "$c2"
	run_reshard 0 "create: MariaDB, the run makes the table and completes" run plan.cfg --yes
	has "$dir/err" 'left out of orders: CONSTRAINT `to_parent` FOREIGN KEY (`parent`) REFERENCES `parent` (`id`)' \
		"create: MariaDB, preflight says the foreign key is left out"
	has "$dir/err" "c2: table orders made, with 1 unique index" "create: MariaDB, the unique index with the table"
	has "$dir/err" "c2: table orders: 2 secondary indexes made" \
		"create: MariaDB, the other indexes after the copy (the AUTO_INCREMENT one with the table)"
	same_shape "create: MariaDB, the table is defined as on the source" \
		"$(my_shape "$c2")" "$(my_shape "$c1")"
	equals "$(($(my "$c1" "SELECT count(*) FROM orders") + $(my "$c2" "SELECT count(*) FROM orders")))" 400 \
		"create: MariaDB, every row once"
}

# acct_db pg|my NAME: database NAME made afresh on pair 1's server of that
# engine, holding an empty acct (id, customer, a unique email); prints its
# URL.
acct_db() {
	local url
	if [ "$1" = pg ]; then
		pg "$pg_app" "DROP DATABASE IF EXISTS $2 WITH (FORCE)" >&2 &&
			pg "$pg_app" "CREATE DATABASE $2" >&2
		url=$(url_db "$pg_app" "$2")
	else
		my "$my_app" "DROP DATABASE IF EXISTS $2; CREATE DATABASE $2" >&2
		url=$(url_db "$my_app" "$2")
	fi
	"$1" "$url" "CREATE TABLE acct (id integer PRIMARY KEY,
		customer varchar(40) NOT NULL, email varchar(40) NOT NULL UNIQUE)" >&2
	echo "$url"
}

# unique: a unique email on the targets (MariaDB u2, PostgreSQL u3; the
# source u1 on PostgreSQL).  After the copy, on each target's movers, B is
# touched, A gives its email up and B takes it: catch-up's batch writes B
# while the target still holds A's stale copy.  The targets take rows
# from u1 alone, which has the same unique index: the copy must make room
# (without it, both engines' upserts fail on the index at every resume).
# At the end the targets hold every row of the source once, as it has it.
section_unique() {
	dir=$tmp/unique
	mkdir -p "$dir"
	local u1 u2 u3 a b t
	u1=$(acct_db pg split_u1)
	u2=$(acct_db my split_u2)
	u3=$(acct_db pg split_u3)
	pg "$u1" "INSERT INTO acct SELECT i, 'k' || i, 'e' || i FROM generate_series(1, 400) i"
	cat >"$dir/plan.cfg" <<-EOF
		version = 1; name = "unique"; hash = "sha256_64";
		tables = ( { name = "acct"; key = "customer"; } );
		shards = ( { name = "u1"; url = "$u1"; }, { name = "u2"; url = "$u2"; },
		           { name = "u3"; url = "$u3"; } );
		from = { map = "ranges"; ranges = ( { end = "max"; node = "u1"; } ); };
		to = { map = "ranges"; ranges = ( { end = 0; node = "u1"; },
		       { end = "0x7fffffffffffffff"; node = "u2"; }, { end = "max"; node = "u3"; } ); };
		strategy = "split";
		options = { batch_rows = 50; };
		publish = { file = "routing.cfg"; };
	EOF
	run_reshard 0 "unique: run --until copy" run plan.cfg --until copy --yes
	for t in u2 u3; do
		if [ $t = u2 ]; then
			read -r a b < <(my "$u2" "SELECT MIN(id), MAX(id) FROM acct")
		else
			read -r a b < <(pg "$u3" "SELECT min(id), max(id) FROM acct")
		fi
		pg "$u1" "UPDATE acct SET customer = customer WHERE id = $b;
			UPDATE acct SET email = 'gone' || id WHERE id = $a;
			UPDATE acct SET email = 'e$a' WHERE id = $b"
	done
	pg "$u1" "SELECT id, customer, email FROM acct ORDER BY id" >"$dir/want"
	run_reshard 0 "unique: the run goes to its end" run plan.cfg --yes
	{
		my "$u2" "SELECT id, customer, email FROM acct"
		pg "$u3" "SELECT id, customer, email FROM acct"
	} | sort -n >"$dir/got"
	same_content "unique: every row once on u2 or u3, as the source has it" "$dir/want" "$dir/got"
	equals "$(pg "$u1" "SELECT count(*) FROM acct")" 0 "unique: the source gave every row away"
}

# unique_my: two PostgreSQL sources send every row to one MariaDB target
# whose email is unique, and a row of each holds one email: both are right,
# so the copy must fail naming the clash (MariaDB's upsert would update the
# other source's row in its place), leave the row copied first as it is,
# and end exact once the row not copied yet has another email.
section_unique_my() {
	dir=$tmp/unique-my
	mkdir -p "$dir"
	local v1 v2 v3
	v1=$(acct_db pg split_v1)
	v2=$(acct_db pg split_v2)
	v3=$(acct_db my split_v3)
	pg "$v1" "INSERT INTO acct SELECT i, 'k' || i, 'e' || i FROM generate_series(1, 400) i"
	pg "$v2" "INSERT INTO acct SELECT i, 'k' || i, 'e' || i FROM generate_series(1001, 1400) i"
	pg "$v2" "UPDATE acct SET email = 'e5' WHERE id = 1005"
	cat >"$dir/plan.cfg" <<-EOF
		version = 1; name = "unique-my"; hash = "identity";
		tables = ( { name = "acct"; key = "id"; } );
		shards = ( { name = "v1"; url = "$v1"; }, { name = "v2"; url = "$v2"; },
		           { name = "v3"; url = "$v3"; } );
		from = { map = "ranges"; ranges = ( { end = 1000; node = "v1"; }, { end = "max"; node = "v2"; } ); };
		to = { map = "ranges"; ranges = ( { end = 0; node = "v1"; },
		       { end = 1000000; node = "v3"; }, { end = "max"; node = "v2"; } ); };
		strategy = "split";
		options = { batch_rows = 50; };
		publish = { file = "routing.cfg"; };
	EOF
	run_reshard 1 "unique_my: the copy fails on the clash (exit 1)" run plan.cfg --yes
	has "$dir/err" "holds the same value of one of the table's unique indexes" \
		"unique_my: the error says a row of another key holds the value"
	equals "$(my "$v3" "SELECT COUNT(*) FROM acct WHERE email = 'e5' AND customer <> CONCAT('k', id)")" 0 \
		"unique_my: the row copied first is as its source has it"
	# The row not copied yet gets another email, as the operator would
	# (the streams run at once: either may have gone first).
	if [ "$(my "$v3" "SELECT COUNT(*) FROM acct WHERE id = 1005")" = 1 ]; then
		pg "$v1" "UPDATE acct SET email = 'e5x' WHERE id = 5"
	else
		pg "$v2" "UPDATE acct SET email = 'e1005' WHERE id = 1005"
	fi
	{
		pg "$v1" "SELECT id, customer, email FROM acct"
		pg "$v2" "SELECT id, customer, email FROM acct"
	} | sort -n >"$dir/want"
	run_reshard 0 "unique_my: with another email the run goes to its end" run plan.cfg --yes
	my "$v3" "SELECT id, customer, email FROM acct" | sort -n >"$dir/got"
	same_content "unique_my: every row once on v3, as the sources have them" "$dir/want" "$dir/got"
}

only=${1:-ring conn aborts tamper refused values load load_my create unique unique_my}
for s in $only; do
	"section_$s"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
