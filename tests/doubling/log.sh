#!/usr/bin/env bash
# log: `reshard log` of a run interrupted after the fence and resumed:
# every step of the doubling begun and done, the fence per shard, the
# confirmations by --yes, progress lines; text lines start with an
# ISO-8601 UTC time and a level; --format json is one JSON object a line
# with exactly at, level, message.  A plan never run logs nothing.
. "$(dirname "$0")/lib.sh"
begin "$@"

section log
fresh log
"$bin" log plan.cfg >log.txt 2>log.err
equals "$?/$(wc -l <log.txt)" 0/0 "log: a plan never run logs nothing (exit 0)"
has log.err "the plan was never run" "log: and says so"
RESHARD_FAULT=after-step:fence run_reshard 99 "log: a crash after step fence" run plan.cfg --yes
run_reshard 0 "log: run again completes" run plan.cfg --yes
"$bin" log plan.cfg >log.txt 2>log.err
equals "$?" 0 "log: exit 0"
for step in preflight pre-verify fence catch-up promote verify publish unfence purge final-check; do
	check "log: step $step begun and done" \
		bash -c "grep -qE ' info  step $step (starting|resuming)' log.txt &&
			grep -qE ' info  step $step done$' log.txt"
done
check "log: step catch-up begun after the crash, in the second run" \
	bash -c "[ \$(grep -c 'step fence done' log.txt) = 1 ] && grep -q 'step catch-up starting' log.txt"
has log.txt "db0: writes fenced (whole tables)" "log: the fence per shard"
has log.txt "step purge cannot be undone: confirmed by --yes" "log: the confirmation"
check "log: a progress line for verify" grep -qE ' info  progress verify: [0-9,]+ rows' log.txt
check "log: every text line is TIME LEVEL MESSAGE" \
	bash -c "! grep -vE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z (info |warn |error) ' log.txt"
"$bin" log plan.cfg --format json >log.json 2>log.err
check "log: --format json is one object a line, as the text" python3 -S -c '
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
text = open(sys.argv[2], encoding="utf-8").read().splitlines()
assert len(lines) == len(text), (len(lines), len(text))
for line, t in zip(lines, text):
    e = json.loads(line)
    assert sorted(e) == ["at", "level", "message"], e
    assert t.startswith(e["at"] + " ") and t.endswith(" " + e["message"]), (t, e)
' log.json log.txt
expect_usage() { run_reshard 2 "$1" "${@:2}"; }
expect_usage "log: an unknown format is bad usage" log plan.cfg --format yaml

finish
