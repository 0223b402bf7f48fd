#!/usr/bin/env bash
# signals: a stop request never carries the run into the next step.
# SIGTERM during a slow publish hook lets the hook end, then stops before
# unfence (writes stay fenced), and so does a Ctrl-C (SIGINT to the whole
# process group, which the hook, in a session of its own, does not get); SIGTERM in a throttled purge stops at a
# checkpoint.  Both exit 4, a code of their own, and status shows the step
# stopped, not failed.  A "no" at the promote prompt says which shards
# stay fenced and how to go on or lift the fence.  The hook's environment
# holds no password.
. "$(dirname "$0")/lib.sh"
begin "$@"

# with_hook COMMAND: the plan's publish block runs COMMAND.
with_hook() {
	sed -i "s|^publish = .*|publish = { file = \"routing.cfg\"; command = \"$1\"; };|" plan.cfg
}

section hook-stop
fresh hook-stop
with_hook 'touch hook.started; env >hook.env; sleep 1; touch hook.done'
PGPASSWORD=pg-secret MYSQL_PWD=my-secret DB2_PASSWORD=db2-secret \
	"$bin" run plan.cfg --yes >run.out 2>run.err </dev/null &
pid=$!
background+=("$pid")
check "hook-stop: the hook starts" wait_for "the hook" 20 test -e hook.started
kill -TERM "$pid"
wait "$pid"
equals "$?" 4 "hook-stop: SIGTERM during the hook exits 4"
check "hook-stop: the hook was let finish" test -e hook.done
has run.err "stopped before step unfence on request" "hook-stop: it stopped before unfence"
has run.err "writes stay fenced on db0, db1" "hook-stop: it says writes stay fenced"
status_json
equals "$(step_field publish state)/$(step_field unfence state)/$(jget '$.fenced')" done/pending/1 \
	"hook-stop: publish done, unfence not begun, writes fenced"
has hook.env "RESHARD_EPOCH=1" "hook-stop: the hook has RESHARD_EPOCH"
for secret in PGPASSWORD MYSQL_PWD; do
	if grep -q "^$secret=" hook.env; then
		not_ok "hook-stop: the hook's environment has no $secret"
	else
		ok "hook-stop: the hook's environment has no $secret"
	fi
done
run_reshard 0 "hook-stop: resume" run plan.cfg --yes
complete "hook-stop"

# Ctrl-C at a terminal: SIGINT to reshard's whole process group.  The
# hook runs in a session of its own, so it too is let finish.
section hook-ctrl-c
fresh hook-ctrl-c
with_hook 'touch hook.started; sleep 1; touch hook.done'
setsid "$bin" run plan.cfg --yes >run.out 2>run.err </dev/null &
pid=$!
background+=("$pid")
check "hook-ctrl-c: the hook starts" wait_for "the hook" 20 test -e hook.started
kill -INT -- "-$pid"
wait "$pid"
equals "$?" 4 "hook-ctrl-c: SIGINT to the process group exits 4"
check "hook-ctrl-c: the hook was let finish" test -e hook.done
status_json
equals "$(step_field publish state)/$(step_field unfence state)" done/pending \
	"hook-ctrl-c: publish done, unfence not begun"
run_reshard 0 "hook-ctrl-c: resume" run plan.cfg --yes
complete "hook-ctrl-c"

# password_env: the variable a shard's password comes from is dropped too.
section hook-env
fresh hook-env
with_hook 'env >hook.env'
sed -i 's|{ name = "db3"; url = "sqlite://db3.db"; }|{ name = "db3"; url = "sqlite://db3.db"; password_env = "DB3_SECRET"; }|' plan.cfg
DB3_SECRET=hunter2 OTHER_VAR=kept run_reshard 0 "hook-env: run" run plan.cfg --yes
has hook.env "OTHER_VAR=kept" "hook-env: other variables reach the hook"
check "hook-env: no password_env variable in the hook's environment" \
	test -z "$(grep -e DB3_SECRET -e hunter2 hook.env)"

section purge-stop
fresh purge-stop 10 200
"$bin" run plan.cfg --yes >run.out 2>run.err </dev/null &
pid=$!
background+=("$pid")
purge_running() {
	"$bin" status plan.cfg --format json >status.json 2>/dev/null &&
		[ "$(step_field purge state 2>/dev/null)" = running ]
}
check "purge-stop: the run reaches purge" wait_for purge 20 purge_running
kill -TERM "$pid"
wait "$pid"
equals "$?" 4 "purge-stop: SIGTERM in purge exits 4"
has run.err "stopped at a checkpoint of step purge" "purge-stop: it says where"
status_json
equals "$(step_field purge state)" stopped "purge-stop: status shows purge stopped"
write_plan "$dir" 50 0
run_reshard 0 "purge-stop: resume" run plan.cfg --yes
complete "purge-stop"

# A "no" at the promote prompt, on a terminal (script(1) gives one).
section prompt-no
fresh prompt-no
if command -v script >/dev/null; then
	echo n | script -qec "'$bin' run plan.cfg" /dev/null >prompt.out 2>&1
	equals "$?" 4 "prompt-no: answering no exits 4"
	has prompt.out "stopped before step promote as answered" "prompt-no: it says it stopped before promote"
	has prompt.out "writes stay fenced on db0, db1" "prompt-no: it names the fenced shards"
	has prompt.out "reshard abort plan.cfg" "prompt-no: it says abort lifts the fence"
	status_json
	equals "$(step_field promote state)/$(jget '$.fenced')" pending/1 "prompt-no: promote not begun, writes fenced"
else
	not_ok "prompt-no: script(1) is needed for a terminal"
fi

finish
