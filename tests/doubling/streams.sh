#!/usr/bin/env bash
# streams: a step works on every shard at once, and one failing shard
# does not hide another.  With orders_1 dropped on both sources, preflight
# fails naming the first failure and, as an "also" line, the other shard's;
# nothing is fenced.  With one stream (parallel = 1) the same run gives
# the same row sets as with four.
. "$(dirname "$0")/lib.sh"
begin "$@"

section two-failures
fresh two-failures
sql db0.db "DROP TABLE orders_1"
sql db1.db "DROP TABLE orders_1"
run_reshard 1 "two-failures: run fails in preflight" run plan.cfg --yes
has err "table orders_1 does not exist" "two-failures: a missing table is named"
check "two-failures: both shards are named, one as an also line" \
	bash -c "grep -q 'shard db0 ' err && grep -q 'shard db1 ' err && grep -q '^  also: ' err"
status_json
equals "$(jget '$.fenced')" 0 "two-failures: nothing fenced"

section one-stream
fresh one-stream
own_master
sed -i 's/^options = { /options = { parallel = 1; /' plan.cfg
run_reshard 0 "one-stream: a run with parallel = 1" run plan.cfg --yes
complete "one-stream"

section many-streams
fresh many-streams
own_master
sed -i 's/^options = { /options = { parallel = 16; /' plan.cfg
run_reshard 0 "many-streams: a run with parallel = 16 (more than tables)" run plan.cfg --yes
complete "many-streams"
finish
