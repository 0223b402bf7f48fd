#!/usr/bin/env bash
# sigkill: kill -9 at seeded random instants until a run completes, at
# most 40 attempts, then the exact final rows.  Small chunks and a
# throttled purge make the run last long enough to be cut anywhere.  The
# first kills come within 60 ms, among the short first steps; then the
# window grows with each attempt, as final-check starts its count over
# when resumed and needs one uninterrupted pass.
. "$(dirname "$0")/lib.sh"
begin "$@"

section sigkill
fresh sigkill 10 3000
RANDOM=20240611
attempts=0 rc=1 killed_in=()
while [ "$rc" -ne 0 ] && [ "$attempts" -lt 40 ]; do
	attempts=$((attempts + 1))
	window=$((attempts <= 6 ? 60 : 100 * attempts))
	delay=$((RANDOM % window))
	"$bin" run plan.cfg --yes >out 2>>err </dev/null &
	pid=$!
	background+=("$pid")
	sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rc=$?
	if [ "$rc" -ne 0 ]; then
		killed_in+=("$(sql -readonly orders-2x.journal "SELECT coalesce(
			(SELECT name FROM steps WHERE state = 'running'),
			(SELECT 'after ' || name FROM steps WHERE state = 'done'
			 ORDER BY first_begun DESC LIMIT 1), 'start')" \
			2>/dev/null)@${delay}ms")
	fi
done
if [ "$rc" -eq 0 ]; then
	ok "sigkill: a run completed after $((attempts - 1)) kills"
else
	not_ok "sigkill: no run completed in 40 attempts (last exit $rc)" err
fi
echo "# killed in: ${killed_in[*]}"
complete "sigkill"

finish
