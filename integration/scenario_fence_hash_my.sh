#!/usr/bin/env bash
# MariaDB fences only the rows that move, and guards the rows that moved,
# for the hashes it computes in a trigger's loop: `java`
# (String.hashCode() over UTF-16 code units) and `fnv1a_64` (over UTF-8
# bytes).  For each, a split of one MariaDB database onto another on pair
# 1's primary — modulo [src] -> [src, dst] by java, a ring of 100 virtual
# nodes [src] -> [src, dst] by fnv1a_64 — over 2,000 keys `cliente:N`
# (some with an accent or an emoji, so that UTF-16 surrogates and UTF-8
# multi-byte sequences are hashed); tests/oracle.py, which shares no code
# with reshard, says which keys move.  With the fence up a write to a key
# that stays goes through and one to a key that moves is refused with the
# fence's message; after unfence a write to a moved key on src is refused
# by the guard, naming dst and the epoch; at the end dst holds exactly the
# oracle's movers, src exactly the others, the write to the staying key
# is there and no trigger of reshard's is left.
# Usage: integration/scenario_fence_hash_my.sh (after servers.sh start).
set -uo pipefail
export LC_ALL=C.UTF-8
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck disable=SC1091
source "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}/env"
bin=${RESHARD_BIN:-$root/build/reshard}
case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac
tmp=$(mktemp -d /tmp/reshard-fence-hash.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
passed=0 failed=0 dir=$tmp
# shellcheck source=tests/harness.sh
source "$root/tests/harness.sh" # ok, not_ok, equals, has, run_reshard
my_app=${RESHARD_MY_PRIMARY_URL:?no MariaDB primary in the servers env}
src=${my_app%/*}/fh_src
dst=${my_app%/*}/fh_dst
cd "$tmp" || exit 1

my() { # my URL SQL
	[[ $1 =~ ^mysql://([^:]+):([^@]+)@([^:/]+):([0-9]+)/(.+)$ ]] || return 2
	mariadb --no-defaults --batch --skip-column-names \
		--default-character-set=utf8mb4 -u "${BASH_REMATCH[1]}" \
		-p"${BASH_REMATCH[2]}" -h "${BASH_REMATCH[3]}" \
		-P "${BASH_REMATCH[4]}" "${BASH_REMATCH[5]}" -e "$2"
}

# The keys: cliente:1 … cliente:2000, every 7th with "é" and every 11th
# with "😀" (a code point past U+FFFF) in it.
for i in $(seq 1 2000); do
	k="cliente:$i"
	[ $((i % 7)) -ne 0 ] || k="clienté:$i"
	[ $((i % 11)) -ne 0 ] || k="cliente😀:$i"
	printf '%s\t%s\t%s\n' "$i" "$k" "$i.00"
done >"$tmp/rows.tsv"
cut -f2 "$tmp/rows.tsv" >"$tmp/keys"
table="CREATE TABLE orders (id bigint PRIMARY KEY, customer varchar(40) NOT NULL, amount decimal(12,2)) DEFAULT CHARSET=utf8mb4"

# split HASH FROM TO (maps as tests/oracle.py spells them, and as plan
# lines).
split() {
	local hash=$1 oracle_from=$2 oracle_to=$3 plan_from=$4 plan_to=$5
	local stay move
	for db in fh_src fh_dst; do
		my "$my_app" "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db" || exit 1
	done
	my "$src" "$table; LOAD DATA LOCAL INFILE '$tmp/rows.tsv' INTO TABLE orders" &&
		my "$dst" "$table" || exit 1
	python3 "$root/tests/oracle.py" --hash "$hash" --from "$oracle_from" \
		--to "$oracle_to" <"$tmp/keys" >"$tmp/owners"
	stay=$(awk -F'\t' '$4 == "stays" { print $1; exit }' "$tmp/owners")
	move=$(awk -F'\t' '$4 == "moves" { print $1; exit }' "$tmp/owners")
	rm -f "$tmp"/*.journal* "$tmp/routing.cfg"
	cat >"$tmp/plan.cfg" <<EOF
version = 1; name = "fh_$hash"; hash = "$hash";
tables = ( { name = "orders"; key = "customer"; } );
shards = ( { name = "src"; url = "$src"; }, { name = "dst"; url = "$dst"; } );
from = $plan_from;
to = $plan_to;
strategy = "split";
options = { batch_rows = 500; fence_timeout_seconds = 60; };
publish = { file = "routing.cfg"; };
EOF
	run_reshard 0 "$hash: run --until fence" run plan.cfg --until fence --yes
	has "$tmp/err" "src: writes fenced to the rows that move" "$hash: src fences only the rows that move"
	equals "$(my "$src" "UPDATE orders SET amount = amount + 1 WHERE customer = '$stay'" 2>&1)" "" \
		"$hash: a write to $stay, which stays, goes through"
	my "$src" "UPDATE orders SET amount = amount + 1 WHERE customer = '$move'" >"$tmp/refused" 2>&1
	has "$tmp/refused" "writes paused by reshard" "$hash: a write to $move, which moves, is refused"
	run_reshard 0 "$hash: run --until unfence" run plan.cfg --until unfence --yes
	my "$src" "UPDATE orders SET amount = amount + 1 WHERE customer = '$move'" >"$tmp/stale" 2>&1
	has "$tmp/stale" "row belongs to dst since routing epoch" \
		"$hash: after unfence the guard refuses a stale write of $move on src"
	run_reshard 0 "$hash: the run ends" run plan.cfg --yes
	awk -F'\t' '$4 == "moves" { print $1 }' "$tmp/owners" | sort >"$tmp/moved"
	awk -F'\t' '$4 == "stays" { print $1 }' "$tmp/owners" | sort >"$tmp/stayed"
	if ! grep -q . "$tmp/moved" || ! grep -q . "$tmp/stayed"; then
		not_ok "$hash: the oracle has keys that move and keys that stay"
	fi
	my "$dst" "SELECT customer FROM orders" | sort >"$tmp/on-dst"
	my "$src" "SELECT customer FROM orders" | sort >"$tmp/on-src"
	if cmp -s "$tmp/moved" "$tmp/on-dst" && cmp -s "$tmp/stayed" "$tmp/on-src"; then
		ok "$hash: dst holds exactly the oracle's movers ($(wc -l <"$tmp/moved")), src the others"
	else
		{ diff "$tmp/moved" "$tmp/on-dst"; diff "$tmp/stayed" "$tmp/on-src"; } | head >"$tmp/why"
		not_ok "$hash: dst holds exactly the oracle's movers, src the others" "$tmp/why"
	fi
	equals "$(my "$src" "SELECT amount FROM orders WHERE customer = '$stay'")" \
		"$(awk -F'\t' -v k="$stay" '$2 == k { printf "%.2f", $3 + 1 }' "$tmp/rows.tsv")" \
		"$hash: the write to $stay is there"
	equals "$(my "$src" "SELECT trigger_name FROM information_schema.triggers
		WHERE trigger_schema IN ('fh_src', 'fh_dst')")" "" "$hash: no trigger of reshard's left"
}

split java modulo:src modulo:src,dst \
	'{ map = "modulo"; nodes = ["src"]; }' '{ map = "modulo"; nodes = ["src", "dst"]; }'
split fnv1a_64 ring:100:src ring:100:src,dst \
	'{ map = "ring"; vnodes = 100; nodes = ["src"]; }' \
	'{ map = "ring"; vnodes = 100; nodes = ["src", "dst"]; }'
for db in fh_src fh_dst; do
	my "$my_app" "DROP DATABASE IF EXISTS $db"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
