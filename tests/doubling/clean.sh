#!/usr/bin/env bash
# clean: a run with no fault: exit 0, status JSON (every step done, not
# fenced, epoch 1), the routing file at epoch 1, no fence trigger left,
# pre-verify and purge in many chunks, three durable journal writes while
# writes were fenced; a second run does nothing.  Also that
# `reshard route` agrees with the oracle on every key of the data.
. "$(dirname "$0")/lib.sh"
begin "$@"

section route
fresh route
mapfile -t keys < <(cut -f1 "$template/routes.tsv")
"$bin" route plan.cfg -- "${keys[@]}" 2>route.err | cut -f1-5 >route.tsv
diff "$template/routes.tsv" route.tsv >route.diff 2>&1
check "route: reshard route agrees with the oracle on all ${#keys[@]} keys" \
	test ! -s route.diff -a ! -s route.err
[ -s route.diff ] && head -n 6 route.diff | sed 's/^/#   /'

section clean
fresh clean
run_reshard 0 "clean: run --yes" run plan.cfg --yes
complete "clean"
equals "$(jget '$.epoch')" 1 "clean: status shows epoch 1"
# While writes were fenced the journal waited for the disk three times:
# the begins of catch-up and promote (abort goes by them) and publish's
# one write before the shards learn the epoch.  Seven before.
equals "$(sql -readonly orders-2x.journal "SELECT message FROM events
	WHERE message LIKE 'durable journal writes%'")" \
	"durable journal writes while writes were fenced: 3" \
	"clean: three durable journal writes while writes were fenced"
check "clean: routing file has epoch 1" grep -qE '^epoch = 1L?;$' routing.cfg
check "clean: no fence trigger left on any shard" \
	test "$(fence_triggers db0)$(fence_triggers db1)$(fence_triggers db2)$(fence_triggers db3)" = 0000
clean_counts
if [ "${clean_chunks[pre-verify]:-0}" -gt 10 ] && [ "${clean_chunks[purge]:-0}" -gt 10 ]; then
	ok "clean: many chunks (pre-verify ${clean_chunks[pre-verify]}, purge ${clean_chunks[purge]})"
else
	not_ok "clean: many chunks (pre-verify ${clean_chunks[pre-verify]:-?}, purge ${clean_chunks[purge]:-?})"
fi
# Each row is deleted once, from the one of its pair that does not own
# it; nothing is kept.
deleted=$(sed -nE 's/^  db[0-3]: ([0-9,]+) rows deleted, 0 kept$/\1/p' err | tr -d , | paste -sd+ | bc)
equals "$(grep -cE '^  db[0-3]: [0-9,]+ rows deleted, 0 kept$' err)/${deleted:-?}" \
	"4/$(sql "$template/master.db" "SELECT count(*) FROM orders")" \
	"clean: purge says per shard what it deleted, every row once in all, none kept"
run_reshard 0 "clean: run again after the end does nothing" run plan.cfg --yes
has err "done earlier" "clean: run again says the steps were done earlier"
final_rows "clean: row set unchanged by a second run"

finish
