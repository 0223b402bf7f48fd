#!/usr/bin/env bash
# usage: bad usage is refused with exit 2 and a clear message: an unknown
# --until step, abort of a plan never run, no --yes and no terminal (run
# stops before promote).
. "$(dirname "$0")/lib.sh"
begin "$@"

section usage
fresh usage
run_reshard 2 "usage: --until with an unknown step (exit 2)" run plan.cfg --until fencing --yes
has err "fencing" "usage: the message names the step"
check "usage: nothing was started" test ! -e orders-2x.journal
run_reshard 2 "usage: abort of a plan never run (exit 2)" abort plan.cfg
"$bin" run plan.cfg </dev/null >out 2>err
equals "$?" 2 "usage: without --yes nor a terminal, run stops before promote (exit 2)"
has err "--yes" "usage: it says to use --yes"
status_json
equals "$(step_field catch-up state)/$(step_field promote state)" done/pending \
	"usage: promote not begun"

finish
