#!/usr/bin/env bash
# step_boundaries: a crash (fault point) right after every step, and right
# before fence, promote, publish and purge, then resume.  The fence
# outlives the crashed process (on from fence until unfence); the resumed
# run skips what was recorded done and runs a step not begun exactly once.
. "$(dirname "$0")/lib.sh"
begin "$@"

section after-step
for s in "${steps[@]}"; do
	fresh "after-$s"
	RESHARD_FAULT=after-step:$s run_reshard 99 "after-step:$s: crash" \
		run plan.cfg --yes
	case "$s" in
	fence | catch-up | promote | verify | publish) fenced=1 ;;
	*) fenced=0 ;;
	esac
	status_json
	equals "$(jget '$.fenced')" "$fenced" \
		"after-step:$s: status after the crash shows fenced = $fenced"
	run_reshard 0 "after-step:$s: resume" run plan.cfg --yes
	has err "step $(printf '%-14s' "$s") done earlier" \
		"after-step:$s: resume skips $s, recorded done before the crash"
	complete "after-step:$s"
done

section before-step
for s in fence promote publish purge; do
	fresh "before-$s"
	RESHARD_FAULT=before-step:$s run_reshard 99 "before-step:$s: crash" \
		run plan.cfg --yes
	status_json
	equals "$(step_field "$s" state)/$(step_field "$s" attempts)" pending/0 \
		"before-step:$s: $s not begun"
	run_reshard 0 "before-step:$s: resume" run plan.cfg --yes
	status_json
	equals "$(step_field "$s" attempts)" 1 "before-step:$s: $s run once"
	complete "before-step:$s"
done

finish
