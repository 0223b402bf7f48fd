#!/usr/bin/env bash
# ring: a clean split of a ring of four sources growing to five (n4 new),
# and of a range of n0 handed to n4.  dry-run's movers are the oracle's;
# after `run` every row is once on its owner under `to` per the oracle, all
# columns unchanged, n4 holds exactly the oracle's movers, no change log or
# trigger is left on any shard, every marker says done, status says done
# and writes open, and the journal waited for the disk once while writes
# were fenced; a second run changes nothing.
. "$(dirname "$0")/lib.sh"
begin "$@"

# movers_expected: the oracle's count of rows that move ("orders+items").
movers_expected() {
	sql "$root/template-$kind/master.db" "SELECT
		(SELECT count(*) FROM orders JOIN routes ON key = customer WHERE moves)
		+ (SELECT count(*) FROM items JOIN routes ON key = customer WHERE moves)"
}

# dry_run_movers NAME: dry-run's summary counts the oracle's movers.
dry_run_movers() {
	local want got
	want=$(movers_expected)
	run_reshard 0 "$1: dry-run" dry-run plan.cfg --summary --format json
	got=$(sql :memory: "SELECT json_extract(readfile('$dir/out'), '\$.moved')")
	equals "$got" "$want" "$1: dry-run moves the oracle's $want rows"
	[ "$want" -gt 0 ] || not_ok "$1: the oracle moves no row at all"
}

# to_n4 NAME: n4 holds exactly the rows the oracle gives it.
to_n4() {
	grep -P '^n4\t' "$dir/rows.expected" >"$dir/n4.expected"
	actual_rows n4 >"$dir/n4.actual"
	if [ -s "$dir/n4.expected" ] && cmp -s "$dir/n4.expected" "$dir/n4.actual"; then
		ok "$1: n4 holds exactly the oracle's $(wc -l <"$dir/n4.actual") movers"
	else
		diff "$dir/n4.expected" "$dir/n4.actual" | head -n 10 >"$dir/why"
		not_ok "$1: n4 holds exactly the oracle's movers" "$dir/why"
	fi
}

section ring
fresh ring ring
dry_run_movers ring
run_reshard 0 "ring: run --yes" run plan.cfg --yes
complete ring
to_n4 ring
# Between the fence's commit and unfence's the journal waits for the disk
# once: publish's begin and facts, before the shards learn the epoch (the
# steps there begin lazily).  Six before.
equals "$(sql -readonly "$plan_name.journal" "SELECT message FROM events
	WHERE message LIKE 'durable journal writes%'")" \
	"durable journal writes while writes were fenced: 1" \
	"ring: one durable journal write while writes were fenced"
# Every source gave rows to n4 (a ring's new node takes from each).
for n in "${sources[@]}"; do
	gave=$(sql "$root/template-$kind/master.db" "SELECT count(*) FROM orders
		JOIN routes ON key = customer WHERE from_owner = '$n' AND moves")
	check "ring: $n gave n4 some of its orders ($gave)" test "$gave" -gt 0
done
cp n0.db n0.before
run_reshard 0 "ring: a second run succeeds" run plan.cfg --yes
final_rows "ring: the second run changed no row"
check "ring: the second run did not write n0" cmp -s n0.db n0.before

section range
fresh range range
dry_run_movers range
run_reshard 0 "range: run --yes" run plan.cfg --yes
complete range
to_n4 range
equals "$(sql "$root/template-$kind/master.db" "SELECT count(*) FROM routes
	WHERE moves AND NOT (from_owner = 'n0' AND to_owner = 'n4')")" 0 \
	"range: the oracle moves keys only from n0 to n4"
finish
