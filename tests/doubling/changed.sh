#!/usr/bin/env bash
# changed: a changed plan is not resumed.  A changed publish.file is
# refused with exit 2, saying what it was and what it is now, and nothing
# more is done; the original plan resumes.
. "$(dirname "$0")/lib.sh"
begin "$@"

section changed
fresh changed
run_reshard 0 "changed: run --until fence" run plan.cfg --until fence --yes
write_plan "$dir" 50 0 routing-new.cfg
run_reshard 2 "changed: changed publish file refused (exit 2)" run plan.cfg --yes
has err "was: \"publish.file = $dir/routing.cfg\"" "changed: message says what it was"
has err "now: \"publish.file = $dir/routing-new.cfg\"" "changed: message says what it is now"
status_json
equals "$(step_field catch-up state)" pending "changed: nothing more was done"
write_plan "$dir"
run_reshard 0 "changed: the original plan resumes" run plan.cfg --yes
check "changed: no routing file under the refused name" test ! -e routing-new.cfg
complete "changed"

finish
