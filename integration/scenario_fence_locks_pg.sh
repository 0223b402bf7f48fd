#!/usr/bin/env bash
# The fenced window sends no DDL to a split's target, on a real PostgreSQL
# server.  Trigger DDL waits for every lock on its table, and the likeliest
# lock on a freshly copied target is an autovacuum's (SHARE UPDATE
# EXCLUSIVE; PostgreSQL cancels it only after deadlock_timeout, or never
# when it runs against wraparound).  So the delete logs start in
# pre-verify and publish only empties them, and the targets' change
# capture comes off in purge, not in unfence.
#
# A split of one PostgreSQL database onto another on pair 1's primary
# (every row moves), run to pre-verify; then a session takes the lock an
# autovacuum takes on the target table and keeps it.  `run --until
# unfence` (fence, final-catch-up, verify, publish, unfence) must end
# while that lock is still held: with the DDL of an earlier release in
# unfence or publish it waits, retries and fails.  Released, the run ends
# with every row once on the target, none left on the source, and nothing
# of reshard's left but its marker.
# Then a fence of the rows that move by the `java` hash, which PostgreSQL
# computes in SQL: a write to a key that stays goes through, one to a key
# that moves is refused; final-catch-up ends while the keys that stay are
# written in a tight loop; and the run moves exactly the oracle's keys.
# Usage: integration/scenario_fence_locks_pg.sh (after servers.sh start).
set -uo pipefail
export LC_ALL=C.UTF-8
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck disable=SC1091
source "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}/env"
bin=${RESHARD_BIN:-$root/build/reshard}
case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac
rows=${ROWS:-20000}
tmp=$(mktemp -d /tmp/reshard-locks.XXXXXX)
locker=''
trap '[ -z "$locker" ] || kill "$locker" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
passed=0 failed=0
pg_app=${RESHARD_PG_PRIMARY_URL:?no PostgreSQL primary in the servers env}
src=${pg_app%/*}/locks_src
dst=${pg_app%/*}/locks_dst

ok() { passed=$((passed + 1)) && echo "ok - $1"; }
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $1"
	[ -z "${2:-}" ] || sed 's/^/#   /' "$2"
}
equals() { # equals GOT WANT NAME
	if [ "$1" = "$2" ]; then ok "$3"; else
		printf 'got:  %s\nwant: %s\n' "$1" "$2" >"$tmp/why"
		not_ok "$3" "$tmp/why"
	fi
}
pg() { PGOPTIONS="-c client_min_messages=warning" psql -X -w -q -At -v ON_ERROR_STOP=1 "$1" -c "$2"; }
run_reshard() { # run_reshard WANT NAME ARGS...
	local want=$1 name=$2 rc=0
	shift 2
	(cd "$tmp" && "$bin" "$@") >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
	if [ "$rc" = "$want" ]; then ok "$name"; else
		{ echo "exit $rc, expected $want; stderr:"; tail -30 "$tmp/err"; } >"$tmp/why"
		not_ok "$name" "$tmp/why"
	fi
}
# The lock autovacuum holds on the target's table, held by a session of
# its own while it lives.
locked() {
	pg "$dst" "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		WHERE c.relname = 'orders' AND l.mode = 'ShareUpdateExclusiveLock' AND l.granted"
}

for db in locks_src locks_dst; do
	pg "$pg_app" "DROP DATABASE IF EXISTS $db WITH (FORCE)" &&
		pg "$pg_app" "CREATE DATABASE $db" || exit 1
done
table="CREATE TABLE orders (id bigint PRIMARY KEY, customer varchar(40) NOT NULL, amount numeric(12,2))"
pg "$src" "$table; INSERT INTO orders SELECT i, 'cliente:' || i, i / 100.0
	FROM generate_series(1, $rows) i" && pg "$dst" "$table" || exit 1
sum_of() { pg "$1" "SELECT count(*) || '/' || coalesce(sum(hashtext(id || '|' || customer || '|' || amount)), 0) FROM orders"; }
before=$(sum_of "$src")
cat >"$tmp/plan.cfg" <<EOF
version = 1; name = "locks"; hash = "sha256_64";
tables = ( { name = "orders"; key = "customer"; } );
shards = ( { name = "src"; url = "$src"; }, { name = "dst"; url = "$dst"; } );
from = { map = "ranges"; ranges = ( { end = "max"; node = "src"; } ); };
to = { map = "ranges"; ranges = ( { end = 0; node = "src"; }, { end = "max"; node = "dst"; } ); };
strategy = "split";
options = { batch_rows = 2000; fence_timeout_seconds = 60; };
publish = { file = "routing.cfg"; };
EOF

run_reshard 0 "locks: run --until pre-verify" run plan.cfg --until pre-verify --yes
pg "$dst" "BEGIN; LOCK TABLE orders IN SHARE UPDATE EXCLUSIVE MODE; SELECT pg_sleep(120); COMMIT" \
	>/dev/null 2>&1 &
locker=$!
for _ in $(seq 100); do [ "$(locked)" = 1 ] && break; sleep 0.1; done
equals "$(locked)" 1 "locks: a session holds autovacuum's lock on the target's table"
run_reshard 0 "locks: fence to unfence ends with the lock still held" run plan.cfg --until unfence --yes
equals "$(locked)" 1 "locks: the lock was held throughout"
kill "$locker" 2>/dev/null
wait "$locker" 2>/dev/null
locker=''
pg "$pg_app" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	WHERE datname = 'locks_dst' AND query LIKE '%pg_sleep(120)%'" >/dev/null
run_reshard 0 "locks: the run ends once it is released" run plan.cfg --yes
equals "$(sum_of "$dst")" "$before" "locks: every row once on the target, unchanged"
equals "$(pg "$src" "SELECT count(*) FROM orders")" 0 "locks: none left on the source"
equals "$(for db in "$src" "$dst"; do
	pg "$db" "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal
		UNION ALL SELECT tablename FROM pg_tables
		WHERE tablename LIKE 'reshard%' AND tablename <> 'reshard_marker'"
done)" "" "locks: no trigger or log table of reshard's left"

# A fence of the rows that move, by java: PostgreSQL computes
# String.hashCode() in SQL.  A split from modulo [src] to modulo [src,
# dst] moves the keys with an odd hash; tests/oracle.py, which shares no
# code with reshard, says which.  With the fence up, a write to a key
# that stays goes through and one to a key that moves is refused.
for db in locks_src locks_dst; do
	pg "$pg_app" "DROP DATABASE IF EXISTS $db WITH (FORCE)" &&
		pg "$pg_app" "CREATE DATABASE $db" || exit 1
done
pg "$src" "$table; INSERT INTO orders SELECT i, 'cliente:' || i, i / 100.0
	FROM generate_series(1, 2000) i" && pg "$dst" "$table" || exit 1
seq 1 2000 | sed 's/^/cliente:/' |
	python3 "$root/tests/oracle.py" --hash java --from modulo:src --to modulo:src,dst >"$tmp/owners"
stay=$(awk -F'\t' '$4 == "stays" { print $1; exit }' "$tmp/owners")
move=$(awk -F'\t' '$4 == "moves" { print $1; exit }' "$tmp/owners")
rm -f "$tmp"/*.journal* "$tmp/routing.cfg"
sed -i 's/name = "locks"; hash = "sha256_64"/name = "java"; hash = "java"/;
	s/^from = .*/from = { map = "modulo"; nodes = ["src"]; };/;
	s/^to = .*/to = { map = "modulo"; nodes = ["src", "dst"]; };/' "$tmp/plan.cfg"
run_reshard 0 "java: run --until fence" run plan.cfg --until fence --yes
if grep -q "src: writes fenced to the rows that move" "$tmp/err"; then
	ok "java: src fences only the rows that move"
else
	cp "$tmp/err" "$tmp/why" && not_ok "java: src fences only the rows that move" "$tmp/why"
fi
equals "$(pg "$src" "UPDATE orders SET amount = amount + 1 WHERE customer = '$stay'" 2>&1)" "" \
	"java: a write to $stay, which stays, goes through"
equals "$(pg "$src" "UPDATE orders SET amount = amount + 1 WHERE customer = '$move'" 2>&1 |
	grep -c 'writes paused by reshard')" 1 "java: a write to $move, which moves, is refused"
# Writes to the keys that stay go on under the fence, each logged: a
# thousand a transaction, far faster than final-catch-up replays batches
# of 10.  It must end once it has replayed what the log held when it
# began, not wait for a short batch (which would hold the fence until
# fence_timeout_seconds gave it back).
stays=$(awk -F'\t' -v q="'" '$4 == "stays" { print q $1 q }' "$tmp/owners" | paste -sd,)
pg "$src" "CREATE PROCEDURE busy() LANGUAGE plpgsql AS \$\$ BEGIN
	FOR i IN 1..1000000 LOOP
		UPDATE orders SET amount = amount WHERE customer IN ($stays); COMMIT;
	END LOOP; END \$\$"
PGOPTIONS="-c synchronous_commit=off" psql -X -w -q -At "$src" -c "CALL busy()" \
	>"$tmp/busy.log" 2>&1 &
writer=$!
for _ in $(seq 50); do
	[ "$(pg "$src" "SELECT count(*) > 2000 FROM reshard_chg_orders")" = t ] && break
	sleep 0.1
done
equals "$(pg "$src" "SELECT count(*) > 2000 FROM reshard_chg_orders")" t \
	"java: the keys that stay are written in a loop, each write logged"
sed -i 's/^options = .*/options = { batch_rows = 10; fence_timeout_seconds = 30; };/' "$tmp/plan.cfg"
run_reshard 0 "java: final-catch-up ends while the keys that stay are written" \
	run plan.cfg --until final-catch-up --yes
equals "$(grep -c 'given back' "$tmp/err")" 0 "java: the cutover was not given back"
kill "$writer" 2>/dev/null
wait "$writer" 2>/dev/null
pg "$pg_app" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	WHERE datname = 'locks_src' AND query LIKE '%CALL busy()%'" >/dev/null
run_reshard 0 "java: the run ends" run plan.cfg --yes
awk -F'\t' '$4 == "moves" { print $1 }' "$tmp/owners" | sort >"$tmp/moved"
pg "$dst" "SELECT customer FROM orders" | sort >"$tmp/on-dst"
if cmp -s "$tmp/moved" "$tmp/on-dst"; then
	ok "java: dst holds exactly the keys the oracle moves ($(wc -l <"$tmp/moved"))"
else
	diff "$tmp/moved" "$tmp/on-dst" | head >"$tmp/why"
	not_ok "java: dst holds exactly the keys the oracle moves" "$tmp/why"
fi
equals "$(pg "$src" "SELECT amount FROM orders WHERE customer = '$stay'")" \
	"$(pg "$src" "SELECT (${stay#cliente:} / 100.0 + 1)::numeric(12,2)")" "java: the write to $stay is there"
for db in locks_src locks_dst; do
	pg "$pg_app" "DROP DATABASE IF EXISTS $db WITH (FORCE)"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
