#!/usr/bin/env bash
# concurrent: one run at a time.  A second `run` (and `abort`) on a running
# plan is refused at once with exit 1, naming the holder's pid; SIGTERM
# stops the first run at a checkpoint; resuming finishes.
. "$(dirname "$0")/lib.sh"
begin "$@"

section concurrent
fresh concurrent 10 100
"$bin" run plan.cfg --yes >first.out 2>first.err </dev/null &
first=$!
background+=("$first")
purge_running() { # quiet: the journal may not exist yet
	"$bin" status plan.cfg --format json >status.json 2>/dev/null &&
		[ "$(step_field purge state 2>/dev/null)" = running ]
}
check "concurrent: first run reaches purge (slow, throttled)" \
	wait_for "purge" 20 purge_running
equals "$(jget '$.running.pid')/$(jget '$.state')" "$first/running" \
	"concurrent: status says running and names the running pid"
started=$(date +%s%N)
run_reshard 1 "concurrent: a second run is refused (exit 1)" run plan.cfg --yes
elapsed=$((($(date +%s%N) - started) / 1000000))
has err "pid $first" "concurrent: the refusal names the holder's pid"
if [ "$elapsed" -lt 2000 ]; then
	ok "concurrent: refused at once (${elapsed} ms)"
else
	not_ok "concurrent: refused at once (took ${elapsed} ms)"
fi
run_reshard 1 "concurrent: abort is refused too while it runs" abort plan.cfg
has err "pid $first" "concurrent: abort names the holder's pid"
kill -TERM "$first"
wait "$first"
equals "$?" 4 "concurrent: SIGTERM stops the first run at a checkpoint (exit 4)"
has first.err "stopped at a checkpoint of step purge" \
	"concurrent: it says where it stopped"
write_plan "$dir" 50 0 # options are not part of the plan's identity
run_reshard 0 "concurrent: resume, unthrottled" run plan.cfg --yes
complete "concurrent"


# A long transaction on a source holds the write lock past the engine's
# lock timeout (2 s): the trigger DDL waits, says so, tries again, and
# goes through once the transaction ends; the run then finishes.  First
# change capture (pre-verify's, at the start of the run), then the fence.
section capture-lock
fresh capture-lock
check "capture-lock: a transaction holds db0's write lock" hold_lock db0.db 3.5
run_reshard 0 "capture-lock: the run finishes once the lock is free" run plan.cfg --yes
has err "db0: change capture waits for a lock (attempt 1 of 5)" \
	"capture-lock: change capture says it waits for a lock and tries again"
complete "capture-lock"

section fence-lock
fresh fence-lock
run_reshard 0 "fence-lock: run --until pre-verify" run plan.cfg --until pre-verify --yes
check "fence-lock: a transaction holds db0's write lock" hold_lock db0.db 3.5
run_reshard 0 "fence-lock: the run finishes once the lock is free" run plan.cfg --yes
has err "db0: the fence waits for a lock (attempt 1 of 5)" \
	"fence-lock: the fence says it waits for a lock and tries again"
complete "fence-lock"
finish
