#!/usr/bin/env bash
# mid_step: crashes in the middle of pre-verify, publish and purge.  The step
# resumes (attempts 2, the chunk and row counts of a clean run, every
# chunk once and done); a row changed after its chunk was compared is
# found by verify under the fence (it compares again what changed since),
# not by pre-verify doing the chunk again; the resumed purge does at most
# the chunks left.  quiet-fail: a step failing with no message is still
# named, with how to go on.  fault-count: after-chunk:STEP:N counts the
# chunks of the whole step, not of one table.  A clean run of its own
# gives the counts.
# The exact counts hold for one stream (parallel = 1): with several, a
# crash leaves other streams' chunks half done, like a kill -9 (sigkill.sh
# covers that), and the redone chunks see fewer rows.
. "$(dirname "$0")/lib.sh"
begin "$@"

# fresh NAME, with the plan's walks in one stream.
fresh_sequential() {
	fresh "$1"
	sed -i 's/^options = { /options = { parallel = 1; /' "$dir/plan.cfg"
}

section baseline
fresh_sequential baseline
run_reshard 0 "baseline: a clean run, for its chunk counts" run plan.cfg --yes
check "baseline: its status and journal give the chunk and row counts" \
	clean_counts

section mid-verify
fresh_sequential mid-verify
own_master
RESHARD_FAULT=after-chunk:pre-verify:3 run_reshard 99 \
	"mid-verify: crash after chunk 3 of pre-verify" run plan.cfg --yes
status_json
equals "$(step_field pre-verify state)/$(step_field pre-verify chunks)" interrupted/3 \
	"mid-verify: status has pre-verify interrupted with 3 chunks done"
# Change the copy of a moving row of chunk 1 on its new owner, after
# pre-verify compared it: the resumed pre-verify does not compare that
# chunk again, and verify, under the fence, compares again the rows
# changed since (the new owner's change log has it) and finds it.
tampered=$(sql orders-2x.journal "SELECT CAST(json_extract(upto_key, '\$[0]')
	AS INTEGER) FROM chunks WHERE step = 'pre-verify' AND shard = 'db0'
	AND table_name = 'orders_0' AND number = 0")
read -r tampered_id tampered_owner < <(sql -separator ' ' master.db \
	"SELECT o.id, r.to_owner FROM orders o JOIN routes r ON r.key = o.customer_id
	 WHERE r.from_owner = 'db0.orders_0' AND r.moves = 'moves'
	   AND o.id <= ${tampered:-0} ORDER BY o.id LIMIT 1")
tampered_table=${tampered_owner#*.}
if [ -n "${tampered_id:-}" ] &&
	bypass_fence "${tampered_owner%%.*}" "$tampered_table" \
		"UPDATE $tampered_table SET note = 'changed after pre-verify'
		 WHERE id = $tampered_id"; then
	ok "mid-verify: changed row $tampered_id on $tampered_owner (chunk 1, compared)"
else
	not_ok "mid-verify: change a row of a compared chunk"
fi
run_reshard 3 "mid-verify: resume; verify finds the changed row (exit 3)" \
	run plan.cfg --yes
has err "step pre-verify     resuming" "mid-verify: pre-verify resumed, not restarted"
has err "(id = '$tampered_id') differs on $tampered_owner" \
	"mid-verify: verify names the row changed after pre-verify compared it"
status_json
equals "$(step_field pre-verify attempts)" 2 "mid-verify: pre-verify attempts = 2"
equals "$(step_field pre-verify chunks)" "${clean_chunks[pre-verify]}" \
	"mid-verify: pre-verify chunks = a clean run's"
# The step's rows are those of the whole step, as in a clean run, not
# those of its last attempt.
equals "$(step_field pre-verify rows)" "${clean_rows[pre-verify]}" \
	"mid-verify: pre-verify rows = a clean run's"
equals "$(journal_chunks pre-verify)" \
	"${clean_chunks[pre-verify]}|${clean_chunks[pre-verify]}|${clean_chunks[pre-verify]}" \
	"mid-verify: journal chunks of pre-verify unique and done"
# Put right from the source, as an operator would.
bypass_fence "${tampered_owner%%.*}" "$tampered_table" "
	ATTACH 'db0.db' AS s;
	UPDATE $tampered_table SET note = (SELECT note FROM s.orders_0
		WHERE id = $tampered_id) WHERE id = $tampered_id"
run_reshard 0 "mid-verify: put right, the run goes on" run plan.cfg --yes
complete "mid-verify"

section mid-purge
fresh_sequential mid-purge
RESHARD_FAULT=after-chunk:purge:5 run_reshard 99 "mid-purge: crash after chunk 5" \
	run plan.cfg --yes
status_json
equals "$(step_field purge state)/$(step_field purge chunks)" interrupted/5 \
	"mid-purge: status has purge interrupted with 5 chunks done"
# The resumed process must finish only the chunks left: the fault point
# one beyond them must not be reached (it counts the step's chunks in this
# process; fault-count below checks that it does).
left=$((${clean_chunks[purge]:-0} - 5))
RESHARD_FAULT=after-chunk:purge:$((left + 1)) run_reshard 0 \
	"mid-purge: resume finishes at most the $left chunks left" run plan.cfg --yes
has err "step purge          resuming" "mid-purge: purge resumed, not restarted"
status_json
equals "$(step_field purge attempts)" 2 "mid-purge: purge attempts = 2"
equals "$(step_field purge chunks)" "${clean_chunks[purge]}" \
	"mid-purge: purge chunks = a clean run's"
equals "$(step_field purge rows)" "${clean_rows[purge]}" \
	"mid-purge: purge rows = a clean run's"
equals "$(journal_chunks purge)" \
	"${clean_chunks[purge]}|${clean_chunks[purge]}|${clean_chunks[purge]}" \
	"mid-purge: journal chunks of purge unique and done"
complete "mid-purge"

# publish resumed after the delete logs were emptied (journaled) and
# before any shard said "published": it goes on with the same epoch.  It
# used to fail with an empty message on every later attempt (the epoch
# read from the journal was taken for an error code).
section mid-publish
fresh_sequential mid-publish
RESHARD_FAULT=mid-step:publish run_reshard 99 \
	"mid-publish: crash inside publish, delete logs emptied" run plan.cfg --yes
status_json
equals "$(step_field publish state)" interrupted \
	"mid-publish: status has publish interrupted"
run_reshard 0 "mid-publish: resume" run plan.cfg --yes
has err "step publish        resuming" "mid-publish: publish resumed"
complete "mid-publish"
equals "$(jget '$.epoch')" 1 "mid-publish: the same epoch, 1"
check "mid-publish: routing file has epoch 1" grep -qE '^epoch = 1L?;$' routing.cfg

# A step that fails without a message (as publish once did after a
# resume) is still named, with how to go on, and the run resumes.
section quiet-fail
fresh_sequential quiet-fail
RESHARD_FAULT=quiet-fail:verify run_reshard 1 \
	"quiet-fail: verify fails, saying nothing" run plan.cfg --yes
has err "step verify failed without saying why" \
	"quiet-fail: the failure names the step"
has err "reshard run plan.cfg" "quiet-fail: it says how to go on"
status_json
equals "$(step_field verify state)" failed \
	"quiet-fail: status has verify failed"
run_reshard 0 "quiet-fail: resume" run plan.cfg --yes
complete "quiet-fail"

# The fault point counts the chunks the step finished in this process
# (engine.h), over all its tables: one more than the biggest table has
# must still fire.
section fault-count
fresh_sequential fault-count
run_reshard 0 "fault-count: run --until unfence" run plan.cfg --until unfence --yes
n=$((${biggest_purge_table:-0} + 1))
RESHARD_FAULT=after-chunk:purge:$n run_reshard 99 \
	"fault-count: after-chunk:purge:$n fires (purge has ${clean_chunks[purge]:-?} chunks, at most ${biggest_purge_table:-?} a table)" \
	run plan.cfg --yes
run_reshard 0 "fault-count: resume" run plan.cfg --yes
complete "fault-count"

finish
