#!/usr/bin/env bash
# abort: before publish it undoes (sources exactly as before, no trigger,
# replica files gone, journal set aside) and a new run starts from the
# beginning; after publish it is refused with exit 2 and changes nothing.
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

finish
