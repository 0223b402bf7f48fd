#!/usr/bin/env bash
# abort_journaled: abort records its intent before its first side effect,
# so a crash after any of them leaves a run that `run` refuses and that
# `abort` again finishes — with a write the application made to an
# unfenced source between the two kept exactly.  (Before abort was
# journaled, `run` then published the stale replica and lost the write.)
. "$(dirname "$0")/lib.sh"
begin "$@"
read_owners

# A key SHARD.orders_0 owns under `from` (the application routes by it).
key_of() {
	sql "$template/master.db" "SELECT key FROM routes
		WHERE from_owner = '$1.orders_0' AND moves = 'moves' LIMIT 1"
}

# The fault points after each of abort's side effects, in the order abort
# goes: its intent, the replicas (catch-up's undo), the sources (fence's).
for point in after-abort-begun after-abort:replica:db2 after-abort:replica:db3 \
	after-undo:catch-up after-abort:unfence:db0 after-abort:unfence:db1; do
	name=abort-crash-${point//:/-}
	section "$name"
	fresh "$name"
	own_master
	run_reshard 0 "$name: run --until verify" run plan.cfg --until verify --yes
	RESHARD_FAULT=$point run_reshard 99 "$name: abort crashes at $point" \
		abort plan.cfg
	run_reshard 2 "$name: run refuses while the abort is unfinished" \
		run plan.cfg --yes
	has err "reshard abort plan.cfg\` finishes the abort" \
		"$name: the refusal says abort finishes it"
	check "$name: the refused run published nothing" test ! -e routing.cfg
	status_json
	equals "$(jget '$.abort')" begun "$name: status shows the abort begun"
	# The application writes to a source now, by the old routing: refused
	# by the fence while it stands, kept once abort lifted it.  Abort
	# lifts the sources' fences all at once, so after unfence:db1 only
	# db1 is known to be open: the write goes there.
	case "$point" in
	*unfence:db1) target=db1 ;;
	*) target=db0 ;;
	esac
	key=$(key_of $target)
	out=$(sql $target.db "INSERT INTO orders_0 VALUES (700001, '${key//\'/\'\'}',
		12.5, 'written between the two aborts'); SELECT changes();" 2>&1)
	case "$point" in
	*unfence:db0 | *unfence:db1)
		equals "$out" 1 "$name: a write to the unfenced $target succeeds"
		sql master.db "INSERT INTO orders VALUES (700001,
			'${key//\'/\'\'}', 12.5, 'written between the two aborts')"
		;;
	*)
		case "$out" in
		*"$fence_message"*) ok "$name: db0 is still fenced" ;;
		*) not_ok "$name: db0 is still fenced (got: $out)" ;;
		esac
		;;
	esac
	run_reshard 0 "$name: abort again finishes it" abort plan.cfg
	same_rows "$name: sources as before, with the write" from_owner db0 db1
	equals "$(fence_triggers db0)/$(fence_triggers db1)" 0/0 \
		"$name: no trigger left on db0, db1"
	check "$name: replica files removed" test ! -e db2.db -a ! -e db3.db
	run_reshard 0 "$name: a new run completes" run plan.cfg --yes
	complete "$name"
done

finish
