#!/usr/bin/env bash
# lost_journal: the journal is not the only record of a run.  With the
# journal lost after publish, `run` refuses to start over (it would copy
# stale rows over live ones), naming the shard marker or the routing file
# it found, and never advises moving a live replica aside.  Before
# publish, abort releases the fence from the shard markers even without a
# journal, or with one that cannot be read.  A journal of a release
# before run ids is never deleted by a refusal.  The run lock is on the
# journal itself: no side file to delete.
. "$(dirname "$0")/lib.sh"
begin "$@"

# snapshot: every row of the four shards, to compare after a refusal.
snapshot() { actual_rows db0 db1 db2 db3 >"$1"; }

for until in publish unfence purge; do
	name=lost-after-$until
	section "$name"
	fresh "$name"
	run_reshard 0 "$name: run --until $until" run plan.cfg --until "$until" --yes
	snapshot before.rows
	rm -f orders-2x.journal orders-2x.journal-wal orders-2x.journal-shm
	run_reshard 2 "$name: run with the journal gone refuses" run plan.cfg --yes
	has err "carries the marker of run" "$name: the refusal names the marker"
	has err "state " "$name: the refusal says the run's state"
	has err "can only go forward" "$name: it says the routing is live"
	if grep -q "move it aside" err; then
		not_ok "$name: no advice to move a replica aside"
	else
		ok "$name: no advice to move a replica aside"
	fi
	snapshot after.rows
	check "$name: no shard changed" cmp -s before.rows after.rows
	run_reshard 2 "$name: abort refuses too (published)" abort plan.cfg
	has err "may be live" "$name: abort says the routing may be live"
	snapshot after.rows
	check "$name: abort changed nothing" cmp -s before.rows after.rows
done

# The journal's WAL lost after a crash right after publish: the journal
# says less than the shards, and neither run nor abort trusts it.
section lost-wal
fresh lost-wal
RESHARD_FAULT=after-step:publish run_reshard 99 "lost-wal: crash after publish" \
	run plan.cfg --yes
snapshot before.rows
rm -f orders-2x.journal-wal orders-2x.journal-shm
run_reshard 2 "lost-wal: run refuses" run plan.cfg --yes
has err "published at epoch 1" "lost-wal: the refusal says the shards are published"
run_reshard 2 "lost-wal: abort refuses" abort plan.cfg
has err "may be live" "lost-wal: abort says the routing may be live"
snapshot after.rows
check "lost-wal: no shard changed" cmp -s before.rows after.rows

# An older copy of the journal restored (publish not begun in it): the
# shards say more, and neither run nor abort goes by the journal.
section behind
fresh behind
run_reshard 0 "behind: run --until publish" run plan.cfg --until publish --yes
sql orders-2x.journal "DELETE FROM steps WHERE name = 'publish';
	DELETE FROM facts WHERE name = 'epoch'"
snapshot before.rows
run_reshard 2 "behind: run refuses" run plan.cfg --yes
has err "has not begun publish: the journal lost its latest writes" \
	"behind: it says the journal is behind the shards"
"$bin" status plan.cfg >status.out 2>&1
has status.out "are ahead of this journal, so \`reshard run plan.cfg\` refuses" \
	"behind: status says run refuses, and why"
has status.out "markers: \`reshard run\` refuses: shard db0 says run" \
	"behind: status gives run's refusal"
status_json
case "$(jget '$.markers_refusal')" in
*"has not begun publish"*) ok "behind: status --format json has the refusal" ;;
*) not_ok "behind: status --format json has the refusal" ;;
esac
run_reshard 2 "behind: abort refuses" abort plan.cfg
has err "whatever journal" "behind: abort goes by the shards, not the journal"
snapshot after.rows
check "behind: no shard changed" cmp -s before.rows after.rows
check "behind: the replicas are still there" test -s db2.db -a -s db3.db

# The markers gone as well: the routing file still names its run.
section lost-markers
fresh lost-markers
run_reshard 0 "lost-markers: run --until publish" run plan.cfg --until publish --yes
rm -f orders-2x.journal*
for db in db0 db1 db2 db3; do sql "$db.db" "DROP TABLE reshard_marker"; done
run_reshard 2 "lost-markers: run refuses by the routing file" run plan.cfg --yes
has err "routing file" "lost-markers: the refusal names the routing file"
has err "epoch 1" "lost-markers: and its epoch"
"$bin" status plan.cfg >status.out 2>&1
has status.out "markers: \`reshard run\` refuses: routing file" \
	"lost-markers: status gives run's refusal by the routing file"
# A done marker of another, older run of the plan name on one shard
# proves nothing about the routing file's run.
sql db3.db "CREATE TABLE reshard_marker (plan TEXT PRIMARY KEY, run_id TEXT NOT NULL,
		state TEXT NOT NULL, epoch INTEGER NOT NULL, updated_at TEXT NOT NULL);
	INSERT INTO reshard_marker VALUES ('orders-2x', '0123456789abcdef', 'done', 0,
		'2026-01-01 00:00:00')"
rm -f orders-2x.journal*
run_reshard 2 "lost-markers: an older run's done marker does not let it start" run plan.cfg --yes
has err "routing file" "lost-markers: still refused by the routing file"

# Before publish: abort by the markers, without a journal.
section lost-fenced
fresh lost-fenced
run_reshard 0 "lost-fenced: run --until verify" run plan.cfg --until verify --yes
rm -f orders-2x.journal*
run_reshard 2 "lost-fenced: run refuses (a fenced run without its journal)" \
	run plan.cfg --yes
has err "reshard abort PLAN\` releases its fence" "lost-fenced: it says abort releases the fence"
run_reshard 0 "lost-fenced: abort without a journal" abort plan.cfg
has err "by the shard markers" "lost-fenced: abort says it goes by the markers"
equals "$(fence_triggers db0)/$(fence_triggers db1)" 0/0 "lost-fenced: fences released"
same_rows "lost-fenced: sources as before" from_owner db0 db1
check "lost-fenced: replica files removed" test ! -e db2.db -a ! -e db3.db
run_reshard 0 "lost-fenced: a new run completes" run plan.cfg --yes
complete "lost-fenced"

# A journal that cannot be read: abort by the markers, journal set aside.
section damaged
fresh damaged
run_reshard 0 "damaged: run --until promote" run plan.cfg --until promote --yes
head -c 3000 orders-2x.journal >cut && mv cut orders-2x.journal
rm -f orders-2x.journal-wal orders-2x.journal-shm
run_reshard 0 "damaged: abort with a truncated journal" abort plan.cfg
has err "by the shard markers" "damaged: abort goes by the markers"
equals "$(fence_triggers db0)/$(fence_triggers db1)" 0/0 "damaged: fences released"
same_rows "damaged: sources as before" from_owner db0 db1
check "damaged: the damaged journal is set aside" \
	test ! -e orders-2x.journal -a -n "$(compgen -G 'orders-2x.journal.damaged-*')"
run_reshard 0 "damaged: a new run completes" run plan.cfg --yes
complete "damaged"

# A journal of a release before run ids (no run_id fact), with steps
# done, resumed while a shard cannot be read: the run fails, and the
# journal stays, to resume once the shard is back.
section no-run-id
fresh no-run-id
run_reshard 0 "no-run-id: run --until preflight" run plan.cfg --until preflight --yes
sql orders-2x.journal "DELETE FROM facts WHERE name = 'run_id'"
mv db1.db db1.kept && echo "not a database" >db1.db
run_reshard 1 "no-run-id: the run fails with db1 unreadable" run plan.cfg --yes
check "no-run-id: the journal is still there" test -s orders-2x.journal
equals "$(sql orders-2x.journal "SELECT state FROM steps WHERE name = 'preflight'")" done \
	"no-run-id: its steps are still done"
mv db1.kept db1.db
run_reshard 0 "no-run-id: with db1 back the run resumes and completes" run plan.cfg --yes
status_json
equals "$(step_field preflight attempts)" 1 "no-run-id: preflight was not run again"
complete no-run-id

# The lock is the journal's own: no side file, and a journal deleted
# under a running run does not let a second one in (the markers refuse).
section lock
fresh lock 10 200
"$bin" run plan.cfg --yes >first.out 2>first.err </dev/null &
first=$!
background+=("$first")
purge_running() {
	"$bin" status plan.cfg --format json >status.json 2>/dev/null &&
		[ "$(step_field purge state 2>/dev/null)" = running ]
}
check "lock: first run reaches purge (throttled)" wait_for purge 20 purge_running
check "lock: no lock file beside the journal" test ! -e orders-2x.journal.lock
run_reshard 1 "lock: a second run is refused" run plan.cfg --yes
has err "pid $first" "lock: the refusal names the holder"
rm -f orders-2x.journal orders-2x.journal-wal orders-2x.journal-shm
run_reshard 2 "lock: with the journal deleted, the markers refuse" run plan.cfg --yes
has err "carries the marker of run" "lock: the refusal names the marker"
{
	kill -9 "$first"
	wait "$first"
} 2>/dev/null

finish
