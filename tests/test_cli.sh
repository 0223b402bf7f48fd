#!/usr/bin/env bash
# End-to-end tests of the reshard binary that need no server: help,
# version, exit codes, plan errors as FILE:LINE, dry-run from standard input
# and `route`.  Usage: tests/test_cli.sh PATH/TO/reshard
set -uo pipefail

bin=${1:?usage: test_cli.sh PATH/TO/reshard}
data=$(cd "$(dirname "$0")/data" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

check() { # check NAME COMMAND... : the command must succeed
	local name=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL: $name" >&2
	fi
}

# expect_exit CODE NAME COMMAND...: run COMMAND, keep its output in
# $tmp/out and $tmp/err, and check its exit status.
expect_exit() {
	local want=$1 name=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	if [ "$got" -eq "$want" ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL: $name: exit $got, expected $want; stderr:" >&2
		sed 's/^/  /' "$tmp/err" >&2
	fi
}

expect_exit 0 "--version" "$bin" --version
check "version text" grep -q '^reshard [0-9]' "$tmp/out"
expect_exit 0 "--help" "$bin" --help
check "help lists dry-run" grep -q 'dry-run' "$tmp/out"
expect_exit 0 "dry-run --help" "$bin" dry-run --help
check "dry-run help lists --keys" grep -q -- '--keys' "$tmp/out"
expect_exit 2 "no command" "$bin"
expect_exit 2 "unknown command" "$bin" dryrun
check "suggests dry-run" grep -q "did you mean 'dry-run'" "$tmp/err"
expect_exit 2 "unknown option" "$bin" dry-run "$data/slots-2x.cfg" --kyes x
check "names the option" grep -q -- "--kyes" "$tmp/err"

# An unknown option gets the closest of that command's own options, or
# the list of them; each command through the same helper.
expect_exit 2 "dry-run --kyes" "$bin" dry-run "$data/slots-2x.cfg" --kyes x
check "dry-run suggests --keys" grep -qxF "reshard: dry-run: unknown option '--kyes' (did you mean '--keys'?); see \`reshard dry-run --help\`" "$tmp/err"
expect_exit 2 "route --tabel" "$bin" route "$data/slots-2x.cfg" --tabel orders 1
check "route suggests --table" grep -qF "route: unknown option '--tabel' (did you mean '--table'?)" "$tmp/err"
expect_exit 2 "run --yse" "$bin" run "$data/slots-2x.cfg" --yse
check "run suggests --yes" grep -qF "run: unknown option '--yse' (did you mean '--yes'?)" "$tmp/err"
expect_exit 2 "status --fromat" "$bin" status "$data/slots-2x.cfg" --fromat json
check "status suggests --format" grep -qF "status: unknown option '--fromat' (did you mean '--format'?)" "$tmp/err"
expect_exit 2 "abort --hlep" "$bin" abort --hlep
check "abort suggests --help" grep -qF "abort: unknown option '--hlep' (did you mean '--help'?)" "$tmp/err"
expect_exit 2 "demo --rosw" "$bin" demo "$tmp/no-demo" --rosw 5
check "demo suggests --rows" grep -qF "demo: unknown option '--rosw' (did you mean '--rows'?)" "$tmp/err"
check "demo made nothing" test ! -e "$tmp/no-demo"
expect_exit 2 "--verison" "$bin" --verison
check "suggests --version" grep -qxF "reshard: unknown option '--verison' (did you mean '--version'?); see \`reshard --help\`" "$tmp/err"
expect_exit 2 "dry-run -x" "$bin" dry-run "$data/slots-2x.cfg" -x
check "lists dry-run's options" grep -qxF "reshard: dry-run: unknown option '-x'; the options are --keys, --table, --summary, --format, --top, --help" "$tmp/err"
expect_exit 2 "dry-run --t" "$bin" dry-run "$data/slots-2x.cfg" --t 3
check "--t is the start of two" grep -qxF "reshard: dry-run: option '--t' is the start of --table, --top; write more of it" "$tmp/err"
expect_exit 2 "route --table without a value" "$bin" route "$data/slots-2x.cfg" 1 --table
check "--table needs a value" grep -qF "route: option '--table' needs a value" "$tmp/err"
expect_exit 2 "dry-run --summary=yes" "$bin" dry-run "$data/slots-2x.cfg" --summary=yes
check "--summary takes no value" grep -qF "dry-run: option '--summary' takes no value" "$tmp/err"

# A key that looks like an option: route says so and how to pass it.
expect_exit 2 "route PLAN -7" "$bin" route "$data/ranges-ids.cfg" -7
check "-7 looks like an option" grep -qxF "reshard: route: key '-7' looks like an option; put -- before the keys: reshard route PLAN -- -7" "$tmp/err"
check "route -7 prints nothing" test ! -s "$tmp/out"
expect_exit 2 "route PLAN 5 -abc" "$bin" route "$data/ranges-ids.cfg" 5 -abc
check "-abc named, with the hint" grep -qxF "reshard: route: unknown option '-abc'; the options are --table, --help; if it is a key, put -- before the keys: reshard route PLAN -- -abc" "$tmp/err"
expect_exit 0 "route PLAN -- 7" "$bin" route "$data/ranges-ids.cfg" -- 7
expect_exit 2 "bad --format" "$bin" dry-run "$data/slots-2x.cfg" --keys x --format xml

# An invalid plan: every mistake, each as FILE:LINE, exit 2.
cat >"$tmp/bad.cfg" <<'PLAN'
version = 1;
name = "bad";
hash = "sha265_64";
tables = ( { name = "orders"; key = "id"; } );
shards = ( { name = "a"; url = "sqlite:///tmp/a.db"; } );
from = { map = "modulo"; nodes = ["a"]; };
to = { map = "modulo"; nodes = ["a", "b"]; };
strategy = "split";
options = { paralel = 4; };
PLAN
expect_exit 2 "invalid plan" "$bin" dry-run "$tmp/bad.cfg" --keys "$data/keys.txt"
check "hash mistake at line 3" grep -q "bad.cfg:3: unknown hash 'sha265_64'" "$tmp/err"
check "node mistake at line 7" grep -q "bad.cfg:7: node 'b' is not a shard" "$tmp/err"
check "option mistake at line 9" grep -q "bad.cfg:9: unknown setting 'paralel' in options; did you mean 'parallel'" "$tmp/err"
check "nothing on stdout" test ! -s "$tmp/out"

# A plan without `to`, with a misspelt option and a shard no map has:
# every mistake in one run.
cat >"$tmp/no-to.cfg" <<'PLAN'
version = 1;
name = "no-to";
tables = ( { name = "orders"; key = "id"; } );
shards = ( { name = "a"; url = "sqlite:///tmp/a.db"; },
           { name = "b"; url = "sqlite:///tmp/b.db"; } );
from = { map = "modulo"; nodes = ["a"]; };
strategy = "split";
options = { batch_row = 10; };
PLAN
expect_exit 2 "plan without to" "$bin" route "$tmp/no-to.cfg" 1
check "says there is no to" grep -qxF "$tmp/no-to.cfg:1: the plan has no 'to', the map that places rows once resharded; add to = { map = \"modulo\"; nodes = [\"a\", \"b\"]; };" "$tmp/err"
check "and the misspelt option" grep -qF "no-to.cfg:8: unknown setting 'batch_row'" "$tmp/err"
check "and says how many" grep -qxF "reshard: plan $tmp/no-to.cfg has 2 mistakes" "$tmp/err"

# Dry-run from standard input gives exactly the independently computed movers.
expect_exit 0 "dry-run stdin" "$bin" dry-run "$data/ring-4to5.cfg" --keys - <"$data/keys.txt"
check "movers from stdin" cmp -s "$tmp/out" "$data/ring-4to5.movers"
check "text summary" grep -q '^movers: ' "$tmp/err"
check "flows" grep -q '^  s0 -> s4: ' "$tmp/err"

# Every SHA-256 implementation this CPU can run gives the same movers; one it
# cannot run, or an unknown name, is refused with exit 2 before any work.
for impl in avx512 sha-ni openssl; do
	RESHARD_SHA256=$impl "$bin" dry-run "$data/ring-4to5.cfg" --keys "$data/keys.txt" \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -eq 2 ] && [ "$impl" != openssl ]; then
		check "RESHARD_SHA256=$impl refused on this CPU" grep -q "this CPU cannot run it" "$tmp/err"
		continue
	fi
	check "RESHARD_SHA256=$impl runs" test "$rc" -eq 0
	check "RESHARD_SHA256=$impl movers" cmp -s "$tmp/out" "$data/ring-4to5.movers"
	# The setting is taken, not only tolerated: --version names it.
	RESHARD_SHA256=$impl "$bin" --version >"$tmp/out" 2>&1
	check "RESHARD_SHA256=$impl in --version" grep -qx "sha256_64 batches: $impl (set by RESHARD_SHA256)" "$tmp/out"
done
"$bin" --version >"$tmp/out" 2>&1
check "--version names the implementation" grep -q "^sha256_64 batches: .* (the fastest this CPU has)$" "$tmp/out"
RESHARD_SHA256=sha512 expect_exit 2 "unknown RESHARD_SHA256" "$bin" dry-run "$data/ring-4to5.cfg" --keys "$data/keys.txt"
check "names the setting" grep -q "RESHARD_SHA256=sha512: not an implementation" "$tmp/err"
expect_exit 0 "summary only" "$bin" dry-run "$data/ring-4to5.cfg" --keys "$data/keys.txt" --summary --top 1
check "summary on stdout" grep -q 'top 1 keys by rows' "$tmp/out"
check "no movers in summary" bash -c "! grep -q $'\t' '$tmp/out'"
# The summary says what the run's fence will hold on each shard that gives
# rows away: PostgreSQL and MariaDB only the rows that move (under
# sha256_64, and under fnv1a_64, which both compute in SQL too), SQLite
# whole tables; s4 gives none.
sed -e 's|sqlite:///tmp/s0.db|postgresql://app@127.0.0.1:5432/app|' \
	-e 's|sqlite:///tmp/s1.db|mysql://app@127.0.0.1:3306/app|' \
	"$data/ring-4to5.cfg" >"$tmp/fence.cfg"
expect_exit 0 "summary with the fence" "$bin" dry-run "$tmp/fence.cfg" --keys "$data/keys.txt" --summary
check "a PostgreSQL shard's fence holds the rows that move" \
	grep -qx '  s0 (postgresql): only writes to the rows that move (text or integer shard keys; others: whole tables)' "$tmp/out"
check "a MariaDB shard's fence holds the rows that move" grep -q '^  s1 (mysql): only writes to the rows that move' "$tmp/out"
check "a SQLite shard's fence holds whole tables" grep -qx '  s2 (sqlite): whole tables' "$tmp/out"
check "a shard that gives nothing away is not fenced" bash -c "! grep -q '^  s4 (' '$tmp/out'"
sed -i 's/hash = "sha256_64";/hash = "fnv1a_64";/' "$tmp/fence.cfg"
expect_exit 0 "summary with the fence, fnv1a_64" "$bin" dry-run "$tmp/fence.cfg" --keys "$data/keys.txt" --summary
check "fnv1a_64: MariaDB fences the rows that move" grep -q '^  s1 (mysql): only writes to the rows that move' "$tmp/out"
check "fnv1a_64: SQLite fences whole tables" grep -qx '  s3 (sqlite): whole tables' "$tmp/out"
# --format json alone prints the JSON summary on standard output, as with
# --summary, and no mover (before: movers on stdout, JSON on stderr).
expect_exit 0 "--format json alone" "$bin" dry-run "$data/ring-4to5.cfg" --keys "$data/keys.txt" --format json
cp "$tmp/out" "$tmp/json-alone"
check "--format json alone: nothing on stderr" test ! -s "$tmp/err"
expect_exit 0 "--format json --summary" "$bin" dry-run "$data/ring-4to5.cfg" --keys "$data/keys.txt" --summary --format json
check "--format json alone: the summary's JSON" cmp -s "$tmp/out" "$tmp/json-alone"
check "--format json alone: one JSON line" grep -qx '{"keys": .*}' "$tmp/json-alone"
# A key whose bytes are not UTF-8 is written in the JSON summary's top
# and hot lists as {"hex": "…"}, as status and the journal write keys; a
# UTF-8 key stays a string.
printf '\xff\xfe\n\xff\xfe\nplain\n' >"$tmp/bytes.txt"
expect_exit 0 "--format json --top, a key not UTF-8" "$bin" dry-run "$data/ring-4to5.cfg" --keys "$tmp/bytes.txt" --format json --top 2
check "--top: a key not UTF-8 as hex" grep -qF '"top": [{"key": {"hex": "fffe"}, "rows": 2, ' "$tmp/out"
check "--top: a UTF-8 key as a string" grep -qF '{"key": "plain", "rows": 1, ' "$tmp/out"
check "--top: hot keys as hex" grep -qF '"hot": [{"key": {"hex": "fffe"}, "rows": 2, ' "$tmp/out"
expect_exit 0 "--table" "$bin" dry-run "$data/slots-2x.cfg" --keys "$data/keys.txt" --table orders
expect_exit 2 "unknown --table" "$bin" dry-run "$data/slots-2x.cfg" --keys "$data/keys.txt" --table nope

# A key the hash cannot take is bad input: exit 2, the key and its line
# named, control bytes in it escaped.
printf '1\n2\nabc\n' >"$tmp/ids.txt"
expect_exit 2 "bad identity key" "$bin" dry-run "$data/ranges-ids.cfg" --keys "$tmp/ids.txt"
check "names key and line" grep -q "ids.txt:3: key 'abc'" "$tmp/err"
printf '1\n12\t7\n' >"$tmp/ids.txt"
expect_exit 2 "identity key with a TAB" "$bin" dry-run "$data/ranges-ids.cfg" --keys "$tmp/ids.txt"
check "TAB in the key escaped" grep -qF "ids.txt:2: key '12\t7' cannot be hashed with identity" "$tmp/err"
printf '1\n2\033[2J\n' >"$tmp/ids.txt"
expect_exit 2 "identity key with ESC" "$bin" dry-run "$data/ranges-ids.cfg" --keys "$tmp/ids.txt"
check "ESC in the key escaped" grep -qF "ids.txt:2: key '2\x1b[2J' cannot" "$tmp/err"
check "no ESC on stderr" bash -c "! grep -q $'\033' '$tmp/err'"
expect_exit 2 "route: identity key with a newline" "$bin" route "$data/ranges-ids.cfg" -- 7 $'8\n9'
check "newline in the key escaped" grep -qxF "reshard: key '8\n9' cannot be hashed with identity, which takes only non-negative integers below 2^64" "$tmp/err"
check "keys before it routed" grep -q $'^7\t' "$tmp/out"

# Keys with bytes that would break a mover line are escaped as in
# PostgreSQL's COPY text format (\t \n \r \\ \b \f \v, \xHH for other
# control bytes and DEL), by route and by dry-run alike; other keys are
# written as they are.  Each kind of key, once escaped, must read as
# documented, and the dry-run's movers must be route's.
check "route --help documents the escaping" grep -qF 'as \xHH' <("$bin" route --help)
check "dry-run --help documents the escaping" grep -qF 'as \xHH' <("$bin" dry-run --help)
: >"$tmp/odd-keys.txt"
: >"$tmp/odd-want.txt"
for i in $(seq 1 150); do
	# key (printf format) and its escaped form (printf format)
	printf "tab\t$i\nback\\\\slash$i\nctl\001$i\ndel\177$i\ncr\rin$i\nesc\033[1m$i\nbs\bff\fvt\v$i\nplain-$i\n" >>"$tmp/odd-keys.txt"
	printf '%s\n' "tab\\t$i" "back\\\\slash$i" "ctl\\x01$i" "del\\x7f$i" "cr\\rin$i" "esc\\x1b[1m$i" "bs\\bff\\fvt\\v$i" "plain-$i" >>"$tmp/odd-want.txt"
done
mapfile -t odd_keys <"$tmp/odd-keys.txt"
expect_exit 0 "route odd keys" "$bin" route "$data/ring-4to5.cfg" -- "${odd_keys[@]}" $'new\nline'
printf 'new\\nline\n' >>"$tmp/odd-want.txt"
cut -f1 "$tmp/out" >"$tmp/odd-got.txt"
check "route escapes keys as documented" cmp -s "$tmp/odd-got.txt" "$tmp/odd-want.txt"
check "route: one line a key" test "$(wc -l <"$tmp/out")" -eq 1201
awk -F'\t' '$4 == "moves" { print $1 "\t" $2 "\t" $3 }' "$tmp/out" | grep -v '^new' >"$tmp/odd-route.tsv"
expect_exit 0 "dry-run odd keys" "$bin" dry-run "$data/ring-4to5.cfg" --keys "$tmp/odd-keys.txt"
check "dry-run movers of odd keys are route's" cmp -s "$tmp/out" "$tmp/odd-route.tsv"
for kind in 'tab\\t' 'back\\\\slash' 'ctl\\x01' 'del\\x7f' 'cr\\rin' 'esc\\x1b' 'bs\\b' 'plain-'; do
	check "some $kind keys move" grep -q "^$kind" "$tmp/out"
done
check "three fields a mover line" awk -F'\t' 'NF != 3 { exit 1 }' "$tmp/out"

# Mover lines for keys and owner names of every length around the
# dry-run's fixed-size copies (32 bytes: keys of 31, 32, 33 bytes; labels
# whose line piece is just under, at and over 32: names of 30, 31 and 32
# bytes with the ring), checked against `route`,
# which looks up each map on its own: a ring with long shard names, and
# slot maps whose physical table names make long labels.
long=shard-with-a-name-that-is-lon
cat >"$tmp/long-ring.cfg" <<PLAN
version = 1;
name = "long-ring";
tables = ( { name = "t"; key = "k"; } );
shards = ( { name = "s0"; url = "sqlite:///tmp/s0.db"; },
           { name = "${long}1"; url = "sqlite:///tmp/s1.db"; },
           { name = "${long}-2"; url = "sqlite:///tmp/s2.db"; },
           { name = "${long}--3"; url = "sqlite:///tmp/s3.db"; } );
from = { map = "ring"; vnodes = 20; nodes = ["s0", "${long}1"]; };
to   = { map = "ring"; vnodes = 20; nodes = ["s0", "${long}1", "${long}-2", "${long}--3"]; };
strategy = "split";
PLAN
cat >"$tmp/long-slots.cfg" <<'PLAN'
version = 1;
name = "long-slots";
tables = ( { name = "order_lines_2026"; key = "k"; },
           { name = "order_lines_archive_26"; key = "k"; } );
shards = ( { name = "db0"; url = "sqlite:///tmp/d0.db"; replica = "db2"; },
           { name = "db1"; url = "sqlite:///tmp/d1.db"; replica = "db3"; },
           { name = "db2"; url = "sqlite:///tmp/d2.db"; },
           { name = "db3"; url = "sqlite:///tmp/d3.db"; } );
from = { map = "slots"; databases = 2; tables_per_db = 12; nodes = ["db0", "db1"]; };
to   = { map = "slots"; databases = 4; tables_per_db = 12; nodes = ["db0", "db1", "db2", "db3"]; };
strategy = "doubling";
PLAN
awk 'BEGIN {
	n = split("1 3 4 7 8 15 16 17 31 32 33 55 56 100", lens, " ");
	for (i = 0; i < 3000; i++) {
		key = sprintf("k%d-", i);
		while (length(key) < lens[i % n + 1])
			key = key sprintf("%x", (i * 7919 + length(key)) % 16);
		print substr(key, 1, lens[i % n + 1]);
	}
}' >"$tmp/long-keys.txt"
for spec in "long-ring.cfg:t" "long-slots.cfg:order_lines_2026" "long-slots.cfg:order_lines_archive_26"; do
	plan=$tmp/${spec%%:*} table=${spec#*:}
	xargs "$bin" route "$plan" -- <"$tmp/long-keys.txt" >"$tmp/route.tsv" 2>"$tmp/err" ||
		echo "route failed: $(cat "$tmp/err")" >&2
	if [ "$table" = t ]; then
		awk -F'\t' '$4 == "moves" { print $1 "\t" $2 "\t" $3 }' "$tmp/route.tsv" >"$tmp/want.tsv"
	else
		# route names the first table's slots; the second table's
		# physical names follow its own name.
		awk -F'\t' -v t="$table" '$4 == "moves" {
			sub(/order_lines_2026/, t, $2); sub(/order_lines_2026/, t, $3)
			print $1 "\t" $2 "\t" $3 }' "$tmp/route.tsv" >"$tmp/want.tsv"
	fi
	expect_exit 0 "dry-run $spec" "$bin" dry-run "$plan" --keys "$tmp/long-keys.txt" --table "$table"
	check "movers of $spec match route" cmp -s "$tmp/out" "$tmp/want.tsv"
	check "some movers of $spec" test "$(wc -l <"$tmp/want.tsv")" -gt 500
done

# route: from, to, moves|stays, the point (sha256("2") starts d4735e3a…)
# and the rule that decided each owner.
expect_exit 0 "route" "$bin" route "$data/slots-2x.cfg" 1 2
check "route key 2" grep -qx $'2\tdb1.orders_2\tdb3.orders_2\tmoves\t0xd4735e3a265e16ee\tmap:slots\tmap:slots' "$tmp/out"
check "route key 1" grep -qx $'1\tdb0.orders_1\tdb0.orders_1\tstays\t0x6b86b273ff34fce1\tmap:slots\tmap:slots' "$tmp/out"
expect_exit 0 "route negative key" "$bin" route "$data/ranges-ids.cfg" -- 7000 2000
check "route by value" grep -qx $'7000\tb\tb\tstays\t0x0000000000001b58\tmap:ranges\tmap:ranges' "$tmp/out"
expect_exit 2 "route bad key" "$bin" route "$data/ranges-ids.cfg" -- -5

# A slot table name past PostgreSQL's 63 bytes is refused when the plan is
# loaded, naming the line and the limit: before, dry-run said "out of
# memory" and route printed a line without the table.
sed 's/tables_per_db = 12; nodes = \["db0", "db1", "db2"/tables_per_db = 12; table_format = "%s_partition_kept_for_the_tax_auditor_all_%d"; nodes = ["db0", "db1", "db2"/' \
	"$tmp/long-slots.cfg" >"$tmp/long-format.cfg"
check "long-format plan made" grep -q tax_auditor "$tmp/long-format.cfg"
expect_exit 2 "route with a long table_format" "$bin" route "$tmp/long-format.cfg" 1
check "route names line and limit" grep -q "long-format.cfg:10: slots map 'to' names a table 'order_lines_archive_26_partition_kept_for_the_tax_auditor_all_11' (64 bytes) .* at most 63 bytes" "$tmp/err"
check "route prints nothing" test ! -s "$tmp/out"
expect_exit 2 "dry-run with a long table_format" "$bin" dry-run "$tmp/long-format.cfg" --keys "$tmp/long-keys.txt"
check "dry-run names line and limit" grep -q "long-format.cfg:10: .*(64 bytes).*at most 63 bytes" "$tmp/err"
check "dry-run prints nothing" test ! -s "$tmp/out"

# The live dry-run reads keys from the shards, where a key may hold any
# byte, a newline too: its mover lines are escaped like route's.
if command -v sqlite3 >/dev/null; then
	cat >"$tmp/live.cfg" <<PLAN
version = 1;
name = "live";
tables = ( { name = "t"; key = "k"; } );
shards = ( { name = "a"; url = "sqlite://$tmp/live-a.db"; },
           { name = "b"; url = "sqlite://$tmp/live-b.db"; } );
from = { map = "modulo"; nodes = ["a"]; };
to   = { map = "modulo"; nodes = ["a", "b"]; };
strategy = "split";
PLAN
	sqlite3 "$tmp/live-a.db" "CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
		INSERT INTO t SELECT 'nl' || char(10) || i, i FROM n
		UNION ALL SELECT 'tab' || char(9) || i, i FROM n
		UNION ALL SELECT 'bs\' || i, i FROM n
		UNION ALL SELECT 'cr' || char(13) || i, i FROM n
		UNION ALL SELECT 'plain' || i, i FROM n;"
	keys=()
	for i in $(seq 1 200); do
		keys+=($'nl\n'"$i" $'tab\t'"$i" "bs\\$i" $'cr\r'"$i" "plain$i")
	done
	"$bin" route "$tmp/live.cfg" -- "${keys[@]}" 2>"$tmp/err" |
		awk -F'\t' '$4 == "moves" { print $1 "\t" $2 "\t" $3 }' | sort >"$tmp/live-want.tsv"
	expect_exit 0 "live dry-run of odd keys" "$bin" dry-run "$tmp/live.cfg"
	sort "$tmp/out" >"$tmp/live-got.tsv"
	check "live movers are route's" cmp -s "$tmp/live-got.tsv" "$tmp/live-want.tsv"
	check "live: newline keys escaped" grep -qx $'nl\\\\n7\ta\tb' "$tmp/live-got.tsv"
	check "live: one line a mover" test "$(wc -l <"$tmp/live-got.tsv")" -gt 300

	# A live dry-run of a plan of two tables: each mover line names its
	# table in a 4th column (short keys, keys past the 32-byte fast path,
	# escaped keys), the summary counts each table, and --table keeps the
	# three columns and the summary of one table.
	cat >"$tmp/two.cfg" <<PLAN
version = 1;
name = "two";
tables = ( { name = "orders"; key = "k"; }, { name = "items"; key = "k"; } );
shards = ( { name = "a"; url = "sqlite://$tmp/two-a.db"; },
           { name = "b"; url = "sqlite://$tmp/two-b.db"; } );
from = { map = "modulo"; nodes = ["a"]; };
to   = { map = "modulo"; nodes = ["a", "b"]; };
strategy = "split";
PLAN
	sqlite3 "$tmp/two-a.db" "CREATE TABLE orders (k TEXT PRIMARY KEY);
		CREATE TABLE items (k TEXT PRIMARY KEY);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
		INSERT INTO orders SELECT 'o' || i FROM n
		UNION ALL SELECT 'a-key-longer-than-the-thirty-two-bytes-' || i FROM n WHERE i <= 50
		UNION ALL SELECT 'tab' || char(9) || i FROM n WHERE i <= 20;
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
		INSERT INTO items SELECT 'i' || i FROM n;"
	okeys=() ikeys=()
	for i in $(seq 1 300); do okeys+=("o$i"); done
	for i in $(seq 1 50); do okeys+=("a-key-longer-than-the-thirty-two-bytes-$i"); done
	for i in $(seq 1 20); do okeys+=($'tab\t'"$i"); done
	for i in $(seq 1 100); do ikeys+=("i$i"); done
	"$bin" route "$tmp/two.cfg" --table orders -- "${okeys[@]}" 2>/dev/null |
		awk -F'\t' '$4 == "moves" { print $1 "\t" $2 "\t" $3 "\torders" }' >"$tmp/two-want.tsv"
	"$bin" route "$tmp/two.cfg" --table items -- "${ikeys[@]}" 2>/dev/null |
		awk -F'\t' '$4 == "moves" { print $1 "\t" $2 "\t" $3 "\titems" }' >>"$tmp/two-want.tsv"
	sort -o "$tmp/two-want.tsv" "$tmp/two-want.tsv"
	omoved=$(grep -c $'\torders$' "$tmp/two-want.tsv")
	imoved=$(grep -c $'\titems$' "$tmp/two-want.tsv")
	expect_exit 0 "live dry-run of two tables" "$bin" dry-run "$tmp/two.cfg"
	sort "$tmp/out" >"$tmp/two-got.tsv"
	check "two tables: movers name their table" cmp -s "$tmp/two-got.tsv" "$tmp/two-want.tsv"
	check "two tables: some of each table move" test "$omoved" -gt 100 -a "$imoved" -gt 10
	check "two tables: a long key's line" grep -qx $'a-key-longer-than-the-thirty-two-bytes-[0-9]*\ta\tb\torders' "$tmp/two-got.tsv"
	check "two tables: an escaped key's line" grep -qx $'tab\\\\t[0-9]*\ta\tb\torders' "$tmp/two-got.tsv"
	check "two tables: summary counts orders" grep -Eqx "orders +370 +$omoved \([0-9.]+%\)" "$tmp/err"
	check "two tables: summary counts items" grep -Eqx "items +100 +$imoved \([0-9.]+%\)" "$tmp/err"
	expect_exit 0 "two tables: --format json" "$bin" dry-run "$tmp/two.cfg" --format json
	check "two tables: JSON on stdout, counted per table" grep -qF \
		"\"tables\": {\"orders\": {\"keys\": 370, \"moved\": $omoved}, \"items\": {\"keys\": 100, \"moved\": $imoved}}" "$tmp/out"
	check "two tables: --format json prints one line" test "$(wc -l <"$tmp/out")" -eq 1
	expect_exit 0 "two tables: --table items" "$bin" dry-run "$tmp/two.cfg" --table items
	check "--table: three columns" cmp -s <(sort "$tmp/out") <(grep $'\titems$' "$tmp/two-want.tsv" | cut -f1-3)
	check "--table: no table block" bash -c "! grep -q '^table ' '$tmp/err'"
	check "--table: the summary names it" grep -q ', table items$' "$tmp/err"
	expect_exit 0 "two tables: --table items, JSON" "$bin" dry-run "$tmp/two.cfg" --table items --format json
	check "--table: no tables in JSON" bash -c "! grep -q '\"tables\"' '$tmp/out'"
else
	echo "skipped: the live dry-run of odd keys (no sqlite3)" >&2
fi

# The demo: a whole doubling on SQLite shards, then status.
expect_exit 0 "demo" "$bin" demo "$tmp/demo" --rows 3000
check "demo: every row on its owner" grep -q 'every row on its owner; 3,000 rows now, 3,000 counted in pre-verify' "$tmp/err"
check "demo: status shows steps done" grep -Eq '^  final-check +done' "$tmp/out"
check "demo: writes open at the end" grep -q '^writes:  open' "$tmp/out"
check "demo: routing published" grep -q '^epoch = 1L;' "$tmp/demo/routing.cfg"
expect_exit 2 "demo twice in one folder" "$bin" demo "$tmp/demo"
# A folder holding one file the demo would write: refused, file untouched.
mkdir -p "$tmp/mine"
echo "operator's own data" >"$tmp/mine/db0.db"
expect_exit 2 "demo refuses a folder with the operator's db0.db" "$bin" demo "$tmp/mine" --rows 100
check "demo: the refusal names the file" grep -q 'already holds db0.db' "$tmp/err"
check "demo: db0.db untouched" test "$(cat "$tmp/mine/db0.db")" = "operator's own data"
check "demo: nothing else written" test "$(ls "$tmp/mine")" = db0.db

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
