# tests/split/lib.sh: what the split scenarios share.  Sourced, not run.
# shellcheck shell=bash
#
# Each scenario (tests/split/NAME.sh, a ctest of its own, split_NAME) tests
# `reshard run` with the split strategy on SQLite shards, needing no
# server: four sources n0 … n3 and a new, empty shard n4, each with the
# tables orders (id INTEGER PRIMARY KEY, customer, amount DECIMAL(12,2),
# note) and items (PRIMARY KEY (order_id, line), customer, sku BLOB, qty),
# both sharded by customer.  Two plans:
#
#   ring   a consistent-hash ring of n0 … n3 (100 virtual nodes each)
#          grows to five, n4 taking about a fifth of every source's keys
#   range  four equal ranges; n4 takes the upper half of n0's quarter, the
#          other sources give nothing
#   logical  4096 logical shards in the point's top 12 bits, a quarter a
#          source; a range of n0's, of n2's and of n3's goes to n4
#   periodic logical shards in bits 10-22 (a period of 2^23); n4 takes
#          a hundred of n0's
#   isolate  the ring of n0 … n3 stays, and `to` pins two customers to n4
#          with an overrides file (big-customers.csv): tenant isolation
#
# The rows (tests/split/data.py: 3,000 orders, about 1,000 items, 700 keys
# with Cyrillic, Chinese, emoji and quoted ones, NULL and empty notes, NULL
# and negative amounts, NUL bytes in skus) start on their owner under
# `from`, and a scenario ends by comparing row sets exactly: every row once,
# on its owner under `to`, every column unchanged.  Who owns a key comes
# from tests/oracle.py's maps (tests/reshard_oracle.py), which share no
# code with reshard, so a bug in reshard's hash or map code cannot move the
# rows and the expectation together; `reshard route` is never asked.
#
# A scenario script:
#
#     #!/usr/bin/env bash
#     # NAME: what it checks.
#     . "$(dirname "$0")/lib.sh"
#     begin "$@"              # checks the tools, makes $root
#     section NAME            # times what follows
#     fresh NAME [ring|range] # cd to a new folder: n0 … n4, plan.cfg
#     run_reshard 0 "NAME: run" run plan.cfg --yes
#     complete NAME           # every step done, writes open, rows exact,
#                             # no capture left, markers done
#     finish                  # "N passed, M failed"; exit 1 if any failed
#
# Usage of a scenario: tests/split/NAME.sh PATH/TO/reshard (needs the
# sqlite3 shell and python3).  It prints "ok - …" / "not ok - …" per check
# (details indented as "#" comments) and "N passed, M failed" last.  Each
# script works in its own temporary root, so scenarios can run in parallel.
# Deterministic: no clock or random source decides an outcome (the writer's
# choices come from a fixed seed; what it got through depends on timing,
# and the expectation is what it got through).
# shellcheck disable=SC2034 # variables the scenario scripts use
set -uo pipefail
export LC_ALL=C
unset RESHARD_FAULT

lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/harness.sh
. "$lib_dir/../harness.sh"
data=$lib_dir/data.py
scenario=$(basename "$0" .sh)

steps=(preflight capture copy catch-up pre-verify fence final-catch-up verify
	publish unfence purge final-check)
all_done=$(printf '%s=done ' "${steps[@]}")
all_done=${all_done% }
sources=(n0 n1 n2 n3)
nodes=(n0 n1 n2 n3 n4)
tables=(orders items)

passed=0 failed=0
background=() # pids the cleanup kills: add any process started with &
dir='' kind='' plan_name='' fence_message=''

# ---------------------------------------------------------------------
# Checks.  Each prints one "ok - NAME" or "not ok - NAME" line.

# ---------------------------------------------------------------------
# The script's life: begin, sections, finish.

# begin PATH/TO/reshard: check the tools; make $root and the cleanup traps.
begin() {
	harness_begin split "$@"
	# The interpreter itself, not a version manager's shim in front of
	# it: each call would cost a fifth of a second more.
	python=$(python3 -S -c 'import sys; print(sys.executable)') ||
		bail "python3 does not start"
}

# section NAME: say how long the previous section took, as a comment.
section_name='' section_start=0
# ---------------------------------------------------------------------
# Plans, maps and shards.

# maps KIND: set $oracle_from, $oracle_to (tests/oracle.py's maps),
# $plan_from, $plan_to (the plan's), $plan_name and $fence_message.
# shellcheck disable=SC2054 # the commas are the oracle's
maps() {
	kind=$1
	case $kind in
	ring)
		plan_name=ring5
		oracle_from=ring:100:n0,n1,n2,n3
		oracle_to=ring:100:n0,n1,n2,n3,n4
		plan_from='{ map = "ring"; vnodes = 100; nodes = ["n0", "n1", "n2", "n3"]; }'
		plan_to='{ map = "ring"; vnodes = 100; nodes = ["n0", "n1", "n2", "n3", "n4"]; }'
		;;
	range)
		plan_name=range5
		oracle_from=ranges:0x3fffffffffffffff=n0,0x7fffffffffffffff=n1,0xbfffffffffffffff=n2,max=n3
		oracle_to=ranges:0x1fffffffffffffff=n0,0x3fffffffffffffff=n4,0x7fffffffffffffff=n1,0xbfffffffffffffff=n2,max=n3
		plan_from='{ map = "ranges"; ranges = (
    { end = "0x3fffffffffffffff"; node = "n0"; },
    { end = "0x7fffffffffffffff"; node = "n1"; },
    { end = "0xbfffffffffffffff"; node = "n2"; },
    { end = "max"; node = "n3"; } ); }'
		plan_to='{ map = "ranges"; ranges = (
    { end = "0x1fffffffffffffff"; node = "n0"; },
    { end = "0x3fffffffffffffff"; node = "n4"; },
    { end = "0x7fffffffffffffff"; node = "n1"; },
    { end = "0xbfffffffffffffff"; node = "n2"; },
    { end = "max"; node = "n3"; } ); }'
		;;
	logical)
		# Logical shards 0-4095 in the top 12 bits of the point, a
		# quarter a source; ranges of three sources' logical shards
		# go to n4 (a split copies only onto shards new in `to`).
		plan_name=logical5
		oracle_from=logical:bits:52:12:1023=n0,2047=n1,3071=n2,4095=n3
		oracle_to=logical:bits:52:12:767=n0,1023=n4,2047=n1,2303=n2,2559=n4,3071=n2,3583=n3,4095=n4
		plan_from='{ map = "logical"; shift = 52; bits = 12; assign = (
    { last = 1023; node = "n0"; }, { last = 2047; node = "n1"; },
    { last = 3071; node = "n2"; }, { last = 4095; node = "n3"; } ); }'
		plan_to='{ map = "logical"; shift = 52; bits = 12; assign = (
    { last = 767; node = "n0"; }, { last = 1023; node = "n4"; },
    { last = 2047; node = "n1"; }, { last = 2303; node = "n2"; },
    { last = 2559; node = "n4"; }, { last = 3071; node = "n2"; },
    { last = 3583; node = "n3"; }, { last = 4095; node = "n4"; } ); }'
		;;
	periodic)
		# Logical shards in bits 10-22 of the point (the layout of
		# 2^13 logical shards over ids): a map periodic in 2^23, too
		# long a period for the pair map's tables.  n4 takes the first
		# hundred logical shards from n0.
		plan_name=periodic5
		oracle_from=logical:bits:10:13:2047=n0,4095=n1,6143=n2,8191=n3
		oracle_to=logical:bits:10:13:99=n4,2047=n0,4095=n1,6143=n2,8191=n3
		plan_from='{ map = "logical"; shift = 10; bits = 13; assign = (
    { last = 2047; node = "n0"; }, { last = 4095; node = "n1"; },
    { last = 6143; node = "n2"; }, { last = 8191; node = "n3"; } ); }'
		plan_to='{ map = "logical"; shift = 10; bits = 13; assign = (
    { last = 99; node = "n4"; }, { last = 2047; node = "n0"; },
    { last = 4095; node = "n1"; }, { last = 6143; node = "n2"; },
    { last = 8191; node = "n3"; } ); }'
		;;
	isolate)
		# Tenant isolation: the ring stays, two customers are pinned
		# to the new n4 by an overrides file (isolate_file).
		plan_name=isolate5
		oracle_from=ring:100:n0,n1,n2,n3
		oracle_to="ring:100:n0,n1,n2,n3+pin:cust-00042=n4,🙂 19=n4"
		plan_from='{ map = "ring"; vnodes = 100; nodes = ["n0", "n1", "n2", "n3"]; }'
		plan_to='{ map = "ring"; vnodes = 100; nodes = ["n0", "n1", "n2", "n3"];
    overrides = "big-customers.csv"; }'
		;;
	*) bail "unknown map kind $kind" ;;
	esac
	fence_message="writes paused by reshard: run $plan_name, step fence"
}

# write_plan FILE [OPTIONS [PUBLISH]]: the plan of $kind; OPTIONS and
# PUBLISH are settings added to the options and publish groups.  The
# tables are orders and items, or $plan_tables when set.
write_plan() {
	local tables=${plan_tables:-}
	[ -n "$tables" ] || tables='( { name = "orders"; key = "customer"; },
           { name = "items"; key = "customer"; } )'
	cat >"$1" <<PLAN
version = 1;
name = "$plan_name";
hash = "sha256_64";
tables = $tables;
shards = (
  { name = "n0"; url = "sqlite://n0.db"; },
  { name = "n1"; url = "sqlite://n1.db"; },
  { name = "n2"; url = "sqlite://n2.db"; },
  { name = "n3"; url = "sqlite://n3.db"; },
  { name = "n4"; url = "sqlite://n4.db"; }
);
from = $plan_from;
to   = $plan_to;
strategy = "split";
options = { batch_rows = 100; ${2:-} };
publish = { file = "routing.cfg"; ${3:-} };
PLAN
}

# make_template KIND: $root/template-KIND: master.db (rows, routes), n0 … n4.
make_template() {
	local t=$root/template-$1 n
	mkdir -p "$t" || return 1
	"$python" -S "$data" init "$t" "$oracle_from" "$oracle_to" || return 1
	for n in "${nodes[@]}"; do
		sql "$t/$n.db" <<SQL || return 1
ATTACH '$t/master.db' AS m;
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL,
                     amount DECIMAL(12,2), note TEXT);
CREATE TABLE items (order_id INTEGER NOT NULL, line INTEGER NOT NULL,
                    customer TEXT NOT NULL, sku BLOB, qty INTEGER,
                    PRIMARY KEY (order_id, line));
INSERT INTO orders SELECT o.* FROM m.orders o
  JOIN m.routes r ON r.key = o.customer WHERE r.from_owner = '$n';
INSERT INTO items SELECT i.* FROM m.items i
  JOIN m.routes r ON r.key = i.customer WHERE r.from_owner = '$n';
SQL
	done
	local summary
	summary=$(sql "$t/master.db" "SELECT
		(SELECT count(*) FROM orders) || ' orders, ' ||
		(SELECT count(*) FROM items) || ' items; moving to n4: ' ||
		(SELECT count(*) FROM orders JOIN routes ON key = customer
		 WHERE moves) || ' orders, ' ||
		(SELECT count(*) FROM items JOIN routes ON key = customer
		 WHERE moves) || ' items'")
	ok "made the $1 shards: $summary"
}

# fresh NAME [KIND [OPTIONS [PUBLISH]]]: cd to a new $dir: n0 … n4 and
# plan.cfg of KIND (ring by default), OPTIONS and PUBLISH as write_plan's.
fresh() {
	maps "${2:-ring}"
	[ -e "$root/template-$kind/master.db" ] || make_template "$kind" ||
		bail "making the $kind shards"
	[ -n "$dir" ] && [ -z "${RESHARD_TEST_KEEP:-}" ] && rm -rf "$dir"
	dir=$root/$1
	mkdir -p "$dir"
	cp "$root/template-$kind"/n?.db "$dir"/
	write_plan "$dir/plan.cfg" "${3:-}" "${4:-}"
	[ "$kind" = isolate ] &&
		printf 'key,node\n# isolated tenants\ncust-00042,n4\n"\360\237\231\202 19",n4\n' \
			>"$dir/big-customers.csv"
	cd "$dir" || exit 1
}

# own_master: a master.db of $dir's own, to change the expected rows.
own_master() { cp "$root/template-$kind/master.db" "$dir/master.db"; }

# reroute: recompute $dir's own master.db's routes (after its keys changed).
reroute() {
	"$python" -S "$data" routes "$dir/master.db" "$oracle_from" "$oracle_to"
}

# owners KEY...: "FROM_OWNER TO_OWNER" of each key, by the oracle.
owners() { "$python" -S "$data" owners "$oracle_from" "$oracle_to" "$@"; }

# ---------------------------------------------------------------------
# Row sets.  A row is one sorted line owner<TAB>table<TAB>columns…, each
# value quoted (so NULL and '' differ, and a blob shows its bytes).

orders_columns='id, quote(customer), quote(amount), quote(note)'
items_columns="order_id || '/' || line, quote(customer), quote(sku), quote(qty)"

# expected_rows from_owner|to_owner: master.db's rows as they belong under that map.
expected_rows() {
	local master=$root/template-$kind/master.db
	[ -e "$dir/master.db" ] && master=$dir/master.db
	sql -separator $'\t' "$master" \
		"SELECT r.$1, 'orders', $orders_columns
		 FROM orders JOIN routes r ON r.key = customer
		 UNION ALL SELECT r.$1, 'items', $items_columns
		 FROM items JOIN routes r ON r.key = customer" | sort
}

# actual_rows NODE...: the rows the shards hold now (and errors, to show as differences).
actual_rows() {
	local n attach=() query=''
	for n in "$@"; do
		attach+=("ATTACH 'file:$dir/$n.db?mode=ro' AS $n")
		query+="${query:+ UNION ALL }SELECT '$n', 'orders', $orders_columns
			FROM $n.orders UNION ALL SELECT '$n', 'items', $items_columns
			FROM $n.items"
	done
	sql -separator $'\t' :memory: "${attach[@]}" "$query" 2>&1 | sort
}

# same_rows NAME from_owner|to_owner|copied NODE...: the shards hold
# exactly the expected rows (copied: every row on its source under `from`,
# and n4 holding a copy of each of its rows under `to`, as after the copy).
same_rows() {
	local name=$1 which=$2
	shift 2
	if [ "$which" = copied ]; then
		{
			expected_rows from_owner
			expected_rows to_owner | grep -P '^n4\t'
		} | sort >"$dir/rows.expected"
	else
		expected_rows "$which" >"$dir/rows.expected"
	fi
	actual_rows "$@" >"$dir/rows.actual"
	if [ -s "$dir/rows.expected" ] && cmp -s "$dir/rows.expected" "$dir/rows.actual"; then
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

# final_rows NAME: passes when n0 … n4 hold exactly the rows under `to`.
final_rows() { same_rows "$1" to_owner "${nodes[@]}"; }

# source_rows NAME: passes when n0 … n4 hold exactly the rows under `from`
# (n4 then holds none).
source_rows() { same_rows "$1" from_owner "${nodes[@]}"; }

# copied_rows NAME: passes when the sources hold their rows under `from`
# and n4 a copy of each of its rows under `to`.
copied_rows() { same_rows "$1" copied "${nodes[@]}"; }

# count_rows NODE: "ORDERS/ITEMS", the rows NODE of $dir holds.
count_rows() {
	sql -readonly "$dir/$1.db" "SELECT (SELECT count(*) FROM orders) || '/' ||
		(SELECT count(*) FROM items)"
}

# ---------------------------------------------------------------------
# What reshard leaves on the shards; status.

# attach_all: the arguments that attach every shard of $dir, read only.
attach_all() {
	local n
	for n in "${nodes[@]}"; do
		printf '%s\n' "ATTACH 'file:$dir/$n.db?mode=ro' AS $n"
	done
}

# over_shards SELECT: SELECT (with NODE for the schema name and 'NODE' for
# its name) on every shard of $dir, one query.
over_shards() {
	local n query=''
	for n in "${nodes[@]}"; do
		query+="${query:+ UNION ALL }${1//NODE/$n}"
	done
	local attach
	mapfile -t attach < <(attach_all)
	sql -separator $'\t' :memory: "${attach[@]}" "$query"
}

# leftovers: reshard's triggers and tables on every shard but the markers,
# one "NODE: NAME" a line; nothing when there are none.  SQLite keeps
# sqlite_sequence once an AUTOINCREMENT table has existed (docs/split.md,
# limits): only rows of it that name a reshard table count.
leftovers() {
	local n
	over_shards "SELECT 'NODE: ' || type || ' ' || name FROM NODE.sqlite_schema
		WHERE type = 'trigger' OR (type = 'table' AND name LIKE 'reshard%'
		AND name <> 'reshard_marker')"
	for n in "${nodes[@]}"; do
		if [ -n "$(sql -readonly "$dir/$n.db" "SELECT 1 FROM sqlite_schema
			WHERE name = 'sqlite_sequence'")" ]; then
			sql -readonly "$dir/$n.db" "SELECT '$n: sqlite_sequence row '
				|| name FROM sqlite_sequence WHERE name LIKE 'reshard%'"
		fi
	done
}

# no_leftovers NAME: passes when no shard holds a trigger or table of reshard's.
no_leftovers() {
	leftovers >"$dir/leftovers" 2>&1
	if [ ! -s "$dir/leftovers" ]; then
		ok "$1"
	else
		not_ok "$1" "$dir/leftovers"
	fi
}

# nothing_installed NAME: not even a marker on any shard, no trigger, no table.
nothing_installed() {
	over_shards "SELECT 'NODE: ' || type || ' ' || name FROM NODE.sqlite_schema
		WHERE type = 'trigger' OR name LIKE 'reshard%'
		OR name = 'sqlite_sequence'" >"$dir/installed" 2>&1
	if [ ! -s "$dir/installed" ]; then
		ok "$1"
	else
		not_ok "$1" "$dir/installed"
	fi
}

# markers: "NODE=STATE …" of this plan's marker on every shard (none: "-").
markers() {
	local n query=''
	for n in "${nodes[@]}"; do
		if [ -n "$(sql -readonly "$dir/$n.db" "SELECT 1 FROM sqlite_schema
			WHERE name = 'reshard_marker'")" ]; then
			query+="${query:+ || ' ' || }'$n=' || coalesce((SELECT
				group_concat(state) FROM $n.reshard_marker
				WHERE plan = '$plan_name'), '-')"
		else
			query+="${query:+ || ' ' || }'$n=-'"
		fi
	done
	local attach
	mapfile -t attach < <(attach_all)
	sql :memory: "${attach[@]}" "SELECT $query"
}

# all_markers STATE: what markers says when every shard is at STATE.
all_markers() {
	local n out=''
	for n in "${nodes[@]}"; do out+="$n=$1 "; done
	echo "${out% }"
}

# complete NAME: every step done, writes open (json and text status), the
# routing file at epoch 1, rows exact, nothing of reshard's left but the
# markers, each saying done.
complete() {
	status_json
	equals "$(step_states)" "$all_done" "$1: status shows every step done"
	equals "$(jget '$.fenced')" 0 "$1: status shows writes not fenced"
	"$bin" status "$dir/plan.cfg" >"$dir/status.txt" 2>&1
	has "$dir/status.txt" "writes:  open" "$1: status says writes are open"
	has "$dir/routing.cfg" "epoch = 1L;" "$1: routing file published at epoch 1"
	final_rows "$1: every row once, on its owner under to, unchanged"
	no_leftovers "$1: no trigger and no change log left on any shard"
	equals "$(markers)" "$(all_markers "done")" "$1: every marker says done"
}

# stopped NAME TEXT...: verify stopped the run (exit 3 checked by the
# caller): the message has each TEXT, status shows it, nothing published
# or purged, the copies still on n4.
stopped() {
	local name=$1 text
	shift
	for text in "$@"; do
		has err "$text" "$name: the message says \"$text\""
	done
	has err "nothing was purged" "$name: the message says nothing was purged"
	status_json
	equals "$(step_field verify state)/$(step_field publish state)/$(step_field purge state)" \
		failed/pending/pending "$name: status: verify failed, publish and purge pending"
	equals "$(jget '$.fenced')" 1 "$name: status: writes still fenced"
	check "$name: no routing file published" test ! -e routing.cfg
	actual_rows "${sources[@]}" >sources.after
	same_lines "$name: nothing purged: the sources hold all their rows" \
		sources.before sources.after
	[ -z "${n4_rows:-}" ] ||
		equals "$(count_rows n4)" "$n4_rows" "$name: n4 still holds its copies ($n4_rows)"
}

# holds_oracle_rows NAME: each shard holds the oracle's number of orders
# and items under `to`.
holds_oracle_rows() {
	local n expect master=$root/template-$kind/master.db
	for n in "${nodes[@]}"; do
		expect=$(sql "$master" "SELECT
			(SELECT count(*) FROM orders JOIN routes ON key = customer
			 WHERE to_owner = '$n') || '/' ||
			(SELECT count(*) FROM items JOIN routes ON key = customer
			 WHERE to_owner = '$n')")
		equals "$(count_rows "$n")" "$expect" "$1: $n holds the oracle's orders/items"
	done
}

# routing_routes_as_to NAME: the published routing file's map (its `map =`
# setting, over one line or several) loads as a plan's map (routed.cfg,
# left for more checks), and routes every key as `to` does.
routing_routes_as_to() {
	local got
	awk '/^map = /,/};$/' "$dir/routing.cfg" | sed '1s/^map = //; $s/;$//' >"$dir/map.txt"
	[ -s "$dir/map.txt" ] || not_ok "$1: routing.cfg has a map"
	plan_from=$(cat "$dir/map.txt") plan_name=routed write_plan "$dir/routed.cfg"
	sql "$root/template-$kind/master.db" "SELECT DISTINCT key FROM routes" >"$dir/keys.txt"
	run_reshard 0 "$1: the routing file's map loads as a plan's" \
		dry-run "$dir/routed.cfg" --keys "$dir/keys.txt" --summary --format json
	got=$(sql :memory: "SELECT json_extract(readfile('$dir/out'), '\$.moved') || '/' ||
		json_extract(readfile('$dir/out'), '\$.keys')")
	equals "$got" "0/$(wc -l <"$dir/keys.txt")" "$1: the routing file routes every key as to does"
}

# journal_chunks STEP: "count|distinct|done" of STEP's chunks in $dir's journal.
journal_chunks() {
	sql -readonly "$dir/$plan_name.journal" \
		"SELECT count(*), count(DISTINCT shard || '/' || table_name || '/'
		        || number), sum(state = 'done')
		 FROM chunks WHERE step = '$1'"
}

# ---------------------------------------------------------------------
# Waiting.
