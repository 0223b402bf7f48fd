#!/usr/bin/env bash
# abort: before publish it undoes (sources exactly as before, no trigger,
# replica files gone, journal set aside) and a new run starts from the
# beginning; after publish it is refused with exit 2 and changes nothing.
# The `done` markers of an earlier run of the same plan name do not make
# abort take a later run for a published one, and abort gives them back.
. "$(dirname "$0")/lib.sh"
begin "$@"

section abort
fresh abort
run_reshard 0 "abort: run --until promote" run plan.cfg --until promote --yes
check "abort: replicas made" test -s db2.db -a -s db3.db
run_reshard 0 "abort: abort before publish" abort plan.cfg
same_rows "abort: sources as before" from_owner db0 db1
equals "$(fence_triggers db0)/$(fence_triggers db1)" 0/0 "abort: no trigger left on db0, db1"
check "abort: replica files removed" test ! -e db2.db -a ! -e db3.db
check "abort: journal set aside" \
	test ! -e orders-2x.journal -a -n "$(compgen -G 'orders-2x.journal.aborted-*')"
run_reshard 0 "abort: a new run completes" run plan.cfg --yes
status_json
equals "$(step_field preflight attempts)" 1 "abort: the new run started from the beginning"
complete "abort"
run_reshard 2 "abort: abort after the end refuses (exit 2)" abort plan.cfg
has err "publish" "abort: the refusal says publish was passed"
final_rows "abort: refused abort changed nothing"

section abort-fenced
fresh abort-fenced
run_reshard 0 "abort-fenced: run --until fence" run plan.cfg --until fence --yes
run_reshard 0 "abort-fenced: abort" abort plan.cfg
equals "$(fence_triggers db0)/$(fence_triggers db1)" 0/0 "abort-fenced: fences released"
same_rows "abort-fenced: sources as before" from_owner db0 db1
check "abort-fenced: no replica made" test ! -e db2.db -a ! -e db3.db

section abort-given-back
# The cutover is given back (fence_timeout_seconds passed): the fence comes
# off and the fence step is pending again, but the sources' markers still
# say fenced, the run going on.  Killed there, then aborted: abort must
# mark them aborted, or the next run is refused as one whose journal was
# lost.
fresh abort-given-back
sed -i 's/^options = { /options = { fence_timeout_seconds = 1; /' plan.cfg
run_reshard 0 "abort-given-back: run --until fence" run plan.cfg --until fence --yes
sleep 1.2
RESHARD_FAULT=after-give-back run_reshard 99 \
	"abort-given-back: the cutover is given back, and the run killed" run plan.cfg --yes
has err "fault point after-give-back" "abort-given-back: the fence was given back"
run_reshard 0 "abort-given-back: abort" abort plan.cfg
equals "$(sql db0.db "SELECT state FROM reshard_marker")/$(sql db1.db "SELECT state FROM reshard_marker")" \
	aborted/aborted "abort-given-back: db0's and db1's markers say aborted"
same_rows "abort-given-back: sources as before" from_owner db0 db1
run_reshard 0 "abort-given-back: a new run completes" run plan.cfg --yes
complete "abort-given-back"

section abort-published
fresh abort-published
run_reshard 0 "abort-published: run --until publish" run plan.cfg --until publish --yes
run_reshard 2 "abort-published: abort refuses (exit 2)" abort plan.cfg
has err "passed publish" "abort-published: it says publish was passed"
has err "run plan.cfg" "abort-published: it says how to go on"
status_json
equals "$(jget '$.fenced')" 1 "abort-published: fences untouched"
run_reshard 0 "abort-published: the run goes on" run plan.cfg --yes
complete "abort-published"

section abort-second-run
# The doubling ends; a second one of the same name (4 -> 8, its own
# journal) is stopped before its fence, while db0 … db3 still carry the
# first run's `done` markers, then aborted.
fresh abort-second-run
run_reshard 0 "abort-second-run: the first doubling ends" run plan.cfg --yes
complete "abort-second-run: first"
sed -e 's/^name = .*/&\njournal = "eight.journal";/' \
	-e 's/"db0"; url = "sqlite:\/\/db0.db"; replica = "db2"/"db0"; url = "sqlite:\/\/db0.db"; replica = "db4"/' \
	-e 's/"db1"; url = "sqlite:\/\/db1.db"; replica = "db3"/"db1"; url = "sqlite:\/\/db1.db"; replica = "db5"/' \
	-e 's/{ name = "db2"; url = "sqlite:\/\/db2.db"; }/{ name = "db2"; url = "sqlite:\/\/db2.db"; replica = "db6"; }/' \
	-e 's/{ name = "db3"; url = "sqlite:\/\/db3.db"; }/{ name = "db3"; url = "sqlite:\/\/db3.db"; replica = "db7"; },\n  { name = "db4"; url = "sqlite:\/\/db4.db"; }, { name = "db5"; url = "sqlite:\/\/db5.db"; },\n  { name = "db6"; url = "sqlite:\/\/db6.db"; }, { name = "db7"; url = "sqlite:\/\/db7.db"; }/' \
	-e 's/^from = .*/from = { map = "slots"; databases = 4; tables_per_db = 2; nodes = ["db0", "db1", "db2", "db3"]; };/' \
	-e 's/^to   = .*/to   = { map = "slots"; databases = 8; tables_per_db = 2; nodes = ["db0", "db1", "db2", "db3", "db4", "db5", "db6", "db7"]; };/' \
	plan.cfg >eight.cfg
actual_rows db0 db1 db2 db3 >rows.before
run_reshard 0 "abort-second-run: the second runs until pre-verify" \
	run eight.cfg --until pre-verify --yes
run_reshard 0 "abort-second-run: abort (the done markers are the first run's)" abort eight.cfg
actual_rows db0 db1 db2 db3 >rows.after
check "abort-second-run: db0 … db3 as before" cmp rows.before rows.after
check "abort-second-run: the second run's replica files removed" \
	test ! -e db4.db -a ! -e db5.db -a ! -e db6.db -a ! -e db7.db
# A third run, fenced: its markers replace the first run's `done` ones on
# db0 … db3.  Its abort, by the markers (its journal lost), gives them back,
# so a fourth run of the name is not taken for one whose journal was lost.
# (The abort with a journal: tests/split/second_run.sh's third-run.)
run_reshard 0 "abort-second-run: a third run fences" \
	run eight.cfg --until fence --yes
rm eight.journal
run_reshard 0 "abort-second-run: the third run, its journal lost, is aborted by its markers" \
	abort eight.cfg
actual_rows db0 db1 db2 db3 >rows.after
check "abort-second-run: db0 … db3 as before again" cmp rows.before rows.after
run_reshard 0 "abort-second-run: a fourth run of the name ends" run eight.cfg --yes
has routing.cfg "epoch = 2L;" "abort-second-run: the fourth run published epoch 2"
cut -f2- rows.before | sort >rows.expected
actual_rows db0 db1 db2 db3 db4 db5 db6 db7 | cut -f2- | sort >rows.third
check "abort-second-run: every row once on db0 … db7, unchanged" \
	cmp rows.expected rows.third

finish
