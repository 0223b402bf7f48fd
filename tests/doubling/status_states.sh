#!/usr/bin/env bash
# status_states: `reshard status` tells the truth in every state of a run:
# never run, running, stopped (SIGINT), interrupted (kill -9 mid-step, and
# a crash between two steps), failed (a missing table; then an interrupted
# retry shows the failure as the earlier attempt's), done, aborted (the
# journal set aside under a readable UTC time, and under an older
# release's epoch name) and aborting.  In each, the text's state line and
# the JSON's state word are checked, and the JSON is validated against
# tests/status.schema.json (by a validator of the schema keywords it uses,
# standard library only).  A resumed step's rows count what it did before.
# When `run` would refuse, status says so in run's words and never says
# `run` goes on: a plan changed since the journal began (a table renamed),
# a journal lost under fenced shards (their markers name the run), another
# plan's run on a shard.  A fence question that fails is "unknown", not
# "not fenced".
. "$(dirname "$0")/lib.sh"
begin "$@"
schema=$lib_dir/../status.schema.json

# valid NAME: $dir/status.json is valid under tests/status.schema.json.
valid() {
	if python3 -S - "$schema" "$dir/status.json" >"$dir/why" 2>&1 <<'PY'; then
import json, re, sys

schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
KNOWN = {"$schema", "$defs", "$ref", "title", "description", "type",
         "required", "properties", "additionalProperties", "items", "enum",
         "pattern"}
errors = []

def check(value, s, where):
    unknown = set(s) - KNOWN
    if unknown:  # a keyword this validator would silently skip
        errors.append(f"{where}: schema keyword(s) {sorted(unknown)} not known")
    if "$ref" in s:
        target = schema
        for part in s["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        check(value, target, where)
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(TYPES[t](value) for t in types):
            errors.append(f"{where}: {value!r} is not of type {types}")
            return
    if "enum" in s and value not in s["enum"]:
        errors.append(f"{where}: {value!r} is not one of {s['enum']}")
    if isinstance(value, str) and "pattern" in s and not re.search(s["pattern"], value):
        errors.append(f"{where}: {value!r} does not match {s['pattern']}")
    if isinstance(value, dict):
        props = s.get("properties", {})
        for key in s.get("required", []):
            if key not in value:
                errors.append(f"{where}: {key} is missing")
        for key, v in value.items():
            if key in props:
                check(v, props[key], f"{where}.{key}")
            elif s.get("additionalProperties", True) is False:
                errors.append(f"{where}: {key} is not in the schema")
    if isinstance(value, list) and "items" in s:
        for i, v in enumerate(value):
            check(v, s["items"], f"{where}[{i}]")

check(doc, schema, "$")
print("\n".join(errors[:15]))
sys.exit(1 if errors else 0)
PY
		ok "$1"
	else
		not_ok "$1" "$dir/why"
	fi
}

# status_both NAME WORD: status as text (status.txt) and JSON (valid,
# state WORD); the text's state line starts with the same word.
status_both() {
	local name=$1 word=$2 text_word=${2/_/ }
	[ "$word" = interrupted ] && text_word="interrupted (no process)"
	"$bin" status plan.cfg >status.txt 2>&1
	equals "$?" 0 "$name: status exits 0"
	status_json
	valid "$name: status JSON is valid under the schema"
	equals "$(jget '$.state')" "$word" "$name: JSON state is $word"
	has status.txt "state:   $text_word" "$name: text says $text_word"
}

# purge_at STATE: status.json shows purge in STATE (quiet).
purge_at() {
	"$bin" status plan.cfg --format json >status.json 2>/dev/null &&
		[ "$(step_field purge state 2>/dev/null)" = "$1" ]
}

# Every step's line once, and nothing said to be an error.
no_error_line() {
	if grep -q "error:" status.txt; then
		grep "error:" status.txt >why
		not_ok "$1" why
	else
		ok "$1"
	fi
}

section never-run
fresh never-run
status_both never-run never_run
has status.txt '`reshard run plan.cfg` starts it' "never-run: text says how to start it"
equals "$(step_states)" "$(printf '%s=pending ' "${steps[@]}" | sed 's/ $//')" \
	"never-run: every step pending"
equals "$(jget '$.running')/$(jget '$.last_abort')/$(jget '$.steps[0].started_at')" // \
	"never-run: no process, no abort, no time"
check "never-run: status made no journal" test ! -e orders-2x.journal

section running
# Purge throttled to 100 rows a second in chunks of 10: long enough to
# look at it running, stop it, resume it and kill it.
fresh running 10 100
"$bin" run plan.cfg --yes >run1.out 2>run1.err </dev/null &
pid=$!
background+=("$pid")
check "running: the run reaches purge" wait_for purge 20 purge_at running
status_both running running
equals "$(jget '$.running.pid')/$(jget '$.step')" "$pid/purge" \
	"running: JSON names the pid and the step"
has status.txt "run:     pid $pid on host" "running: text names the pid"
has status.txt "state:   running, step purge" "running: text names the step"
check "running: since is an ISO-8601 UTC time" \
	grep -Eq '"since": "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z"' status.json

section stopped
kill -INT "$pid"
wait "$pid"
equals "$?" 4 "stopped: SIGINT in purge exits 4"
status_both stopped stopped
equals "$(jget '$.step')/$(step_field purge state)" purge/stopped "stopped: purge stopped"
has status.txt "state:   stopped on request in step purge" "stopped: text says where"
no_error_line "stopped: no error line for a stop"
equals "$(step_field purge error)" "" "stopped: JSON error is null"
has status.json '"stop_message": "stopped at a checkpoint of step purge' \
	"stopped: the stop's message is the stop message"
stopped_rows=$(step_field purge rows)
stopped_chunks=$(step_field purge chunks)
check "stopped: purge did some rows ($stopped_rows)" test "${stopped_rows:-0}" -gt 0

section interrupted
"$bin" run plan.cfg --yes >run2.out 2>run2.err </dev/null &
pid=$!
background+=("$pid")
has_more() { # purge resumed and did chunks beyond the stopped ones
	purge_at running && [ "$(step_field purge attempts)" = 2 ] &&
		[ "$(step_field purge chunks)" -gt "$((stopped_chunks + 2))" ]
}
check "interrupted: the resumed run goes on in purge" wait_for purge 20 has_more
kill -9 "$pid"
wait "$pid" 2>/dev/null
status_both interrupted interrupted
equals "$(jget '$.step')/$(step_field purge state)/$(jget '$.running')" purge/interrupted/ \
	"interrupted: purge interrupted, no process"
has status.txt "purge          interrupted (no process)" "interrupted: the step's line says so"
has status.txt "run:     no process is running it now" "interrupted: text says no process"
equals "$(step_field purge earlier_error)" "" \
	"interrupted: the earlier stop is no earlier error"
no_error_line "interrupted: no error line"
rows=$(step_field purge rows)
check "interrupted: purge's rows count the rows before the resume ($rows > $stopped_rows)" \
	test "${rows:-0}" -gt "$stopped_rows"

section done
write_plan "$dir" 50 0 # options are not part of the plan's identity
run_reshard 0 "done: resume, unthrottled" run plan.cfg --yes
has err "of them before it was resumed" "done: purge's progress counts the rows done before"
complete done
status_both done done
equals "$(jget '$.step')" "" "done: no step"
no_error_line "done: no error line"

section failed
fresh failed
sql db1.db "ALTER TABLE orders_1 RENAME TO gone"
run_reshard 1 "failed: run with a table missing (exit 1)" run plan.cfg --yes
status_both failed failed
equals "$(jget '$.step')/$(step_field preflight state)" preflight/failed "failed: preflight failed"
has status.json '"error": "shard db1 (sqlite://db1.db): table orders_1 does not exist"' \
	"failed: JSON has the error"
has status.txt "error: shard db1 (sqlite://db1.db): table orders_1 does not exist" \
	"failed: text has the error"
sql db1.db "ALTER TABLE gone RENAME TO orders_1"
RESHARD_FAULT=after-chunk:preflight:2 run_reshard 99 "failed: a retry crashes mid-preflight" \
	run plan.cfg --yes
status_both retried interrupted
equals "$(step_field preflight state)/$(step_field preflight error)/$(step_field preflight chunks)" \
	interrupted//2 "retried: preflight interrupted, no current error, its own chunks"
has status.json '"earlier_error": "shard db1 (sqlite://db1.db): table orders_1 does not exist"' \
	"retried: JSON keeps the failure as the earlier attempt's"
has status.txt "earlier attempt failed: shard db1" "retried: text says the earlier attempt failed"
no_error_line "retried: no current error line"

section between-steps
fresh between-steps
RESHARD_FAULT=after-step:fence run_reshard 99 "between-steps: crash after fence" run plan.cfg --yes
status_both between-steps interrupted
equals "$(jget '$.step')/$(jget '$.fenced')" catch-up/1 "between-steps: catch-up next, fenced"
has status.txt "its process ended after step fence, before step catch-up began" \
	"between-steps: text says between which steps"
equals "$(jget '$.fenced_shards')" '["db0","db1"]' "between-steps: fenced_shards is an array of names"
has status.txt "FENCED since" "between-steps: text says fenced"
has status.txt "on db0 (whole tables), db1 (whole tables)" "between-steps: text names the fence's kind"
check "between-steps: fenced_since is an ISO-8601 UTC time" \
	grep -Eq '"fenced_since": "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.000Z"' status.json

section until
run_reshard 0 "until: run --until verify" run plan.cfg --until verify --yes
status_both until stopped
has status.txt "stopped after step verify as asked (--until)" "until: text says --until"

section aborting
RESHARD_FAULT=after-abort-begun run_reshard 99 "aborting: abort crashes once begun" abort plan.cfg
status_both aborting aborting
has status.txt '`reshard abort plan.cfg` finishes it' "aborting: text says how to finish"

section aborted
run_reshard 0 "aborted: abort again" abort plan.cfg
aside=$(compgen -G 'orders-2x.journal.aborted-*' | grep -v -- '-wal$\|-shm$')
check "aborted: journal set aside under a readable UTC time ($aside)" \
	grep -Eq '^orders-2x\.journal\.aborted-[0-9]{8}T[0-9]{6}Z$' <<<"$aside"
has err "the journal is kept as $dir/$aside" "aborted: abort says where"
status_both aborted aborted
equals "$(jget '$.last_abort.journal')" "$dir/$aside" "aborted: JSON names the set-aside journal"
stamp=${aside##*aborted-}
equals "$(jget '$.last_abort.at')" \
	"${stamp:0:4}-${stamp:4:2}-${stamp:6:2}T${stamp:9:2}:${stamp:11:2}:${stamp:13:2}.000Z" \
	"aborted: JSON says when, as its name does"
has status.txt "state:   aborted at ${stamp:0:4}-${stamp:4:2}-${stamp:6:2} ${stamp:9:2}:${stamp:11:2}:${stamp:13:2} UTC" \
	"aborted: text says when"
has status.txt "kept as $dir/$aside" "aborted: text says where the journal is"
mv "$aside" orders-2x.journal.aborted-1796396738
status_both old-name aborted
equals "$(jget '$.last_abort.at')" 2026-12-04T15:05:38.000Z "old-name: an epoch name is read too"
run_reshard 0 "new-run: run --until preflight" run plan.cfg --until preflight --yes
status_both new-run stopped
equals "$(jget '$.last_abort.journal')" "$dir/orders-2x.journal.aborted-1796396738" \
	"new-run: JSON still names the last abort"

section changed-plan
fresh changed-plan
run_reshard 0 "changed-plan: run --until fence" run plan.cfg --until fence --yes
sed -i 's/name = "orders"/name = "items"/' plan.cfg
status_both changed-plan stopped
has status.txt "but the plan changed since its journal was started, so \`reshard run plan.cfg\` and \`reshard abort plan.cfg\` refuse" \
	"changed-plan: the state line says run and abort refuse"
check "changed-plan: status does not say run goes on" bash -c "! grep -q 'goes on' status.txt"
has status.txt "writes:  unknown: no fence on the tables this plan names, but the run was started with another plan" \
	"changed-plan: writes are not said to be open"
equals "$(jget '$.fenced')" "" "changed-plan: JSON fenced is null"
run_reshard 2 "changed-plan: run refuses" run plan.cfg --yes
equals "reshard: $(jget '$.plan_change')" "$(cat err)" "changed-plan: JSON plan_change is run's refusal"
has status.txt "plan:    \`reshard run\` and \`reshard abort\` refuse: $(sed 's/^reshard: //' err)" \
	"changed-plan: the text gives run's refusal"
write_plan "$dir"
status_both plan-restored stopped
has status.txt "\`reshard run plan.cfg\` goes on with step catch-up" "plan-restored: run goes on"
equals "$(jget '$.plan_change')/$(jget '$.fenced')/$(jget '$.other_runs')" "/1/[]" \
	"plan-restored: no plan change, fenced, no other run"

# The journal moved away from fenced shards: their markers name the run.
section lost-journal
run_id=$(sql orders-2x.journal "SELECT value FROM facts WHERE name = 'run_id'")
mkdir lost && mv orders-2x.journal* lost/
status_both lost-journal never_run
has status.txt "but the shards carry the marker of run $run_id, which has not ended and whose journal is not here, so \`reshard run plan.cfg\` refuses" \
	"lost-journal: the state line names the run and says run refuses"
check "lost-journal: status does not say run starts it" bash -c "! grep -q 'starts it' status.txt"
has status.txt "markers: run $run_id of plan \"orders-2x\" on db0, db1 in state fenced" \
	"lost-journal: the markers line names the run, shards and state"
has status.txt "Restore the journal and \`reshard run\` resumes it, or \`reshard abort PLAN\` releases its fence" \
	"lost-journal: it gives run's advice"
equals "$(jget '$.other_runs[0].shard')/$(jget '$.other_runs[0].run')/$(jget '$.other_runs[0].state')" \
	"db0/$run_id/fenced" "lost-journal: JSON other_runs names the run"
run_reshard 2 "lost-journal: run refuses" run plan.cfg --yes
has err "carries the marker of run $run_id" "lost-journal: run refuses for that marker"
mv lost/* .

# Another plan's run, not ended, on a shard: run refuses for it.
section other-plan
sql db1.db "INSERT INTO reshard_marker VALUES ('other-plan', '0123456789abcdef', 'fenced', 0,
	'2026-01-01 00:00:00')"
status_both other-plan stopped
has status.txt "but the shards carry the marker of run 0123456789abcdef of plan \"other-plan\", which has not ended, so \`reshard run plan.cfg\` refuses" \
	"other-plan: the state line says run refuses"
has status.txt 'markers: run 0123456789abcdef of another plan, "other-plan", on db1 in state fenced (since 2026-01-01 00:00:00 UTC): that run has not ended' \
	"other-plan: the markers line names it"
equals "$(jget '$.other_runs')" \
	'[{"shard":"db1","run":"0123456789abcdef","plan":"other-plan","state":"fenced","epoch":0,"since":"2026-01-01T00:00:00.000Z"}]' \
	"other-plan: JSON other_runs"
run_reshard 2 "other-plan: run refuses" run plan.cfg --yes
has err "of another plan, \"other-plan\"" "other-plan: run refuses for it"
sql db1.db "DELETE FROM reshard_marker WHERE plan = 'other-plan'"

# A fence question that fails once connected is no answer, not "open".
section fence-unanswered
RESHARD_FAULT=status-fenced-fails:db1 status_both fence-unanswered failed
equals "$(jget '$.fenced_shards')/$(jget '$.unanswered_shards')" '["db0"]/["db1"]' \
	"fence-unanswered: db1 did not answer"
has status.txt "on db0 (whole tables), db1?" "fence-unanswered: text says db1 did not answer"

finish
