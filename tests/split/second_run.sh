#!/usr/bin/env bash
# second_run: a plan name used again once its first run is done, as an
# operator grows the same cluster a second time.  The first run (the
# ring n0 … n3 grows to five) ends and publishes; a second plan of the
# same name and routing file, with a journal of its own, grows the ring
# of five to six onto a new n5.  Each shard keeps one marker a plan name,
# so the second run's markers replace the first's `done` ones: that must
# not look like a first run whose journal was lost.  The second run,
# stopped after capture, resumes, and ends with every row once on its
# owner under the ring of six (tests/oracle.py), unchanged.
#
# third-run: the second run is aborted after its copy; abort gives the
# shards back the first run's `done` markers it replaced, so that a third
# run of the name (a new journal) starts and ends exactly.  (A doubling's
# abort before its fence is tests/doubling/abort.sh's abort-second-run.)
. "$(dirname "$0")/lib.sh"
begin "$@"

# second_plan NAME: after the first run, n5 (new and empty, with the
# tables) and six.cfg; the oracle's rows under the ring of six, from where
# the first run left them.
second_plan() {
	sql n5.db "CREATE TABLE orders (id INTEGER PRIMARY KEY,
			customer TEXT NOT NULL, amount DECIMAL(12,2), note TEXT);
		CREATE TABLE items (order_id INTEGER NOT NULL,
			line INTEGER NOT NULL, customer TEXT NOT NULL, sku BLOB,
			qty INTEGER, PRIMARY KEY (order_id, line))"
	cat >six.cfg <<PLAN
version = 1;
name = "$plan_name";
hash = "sha256_64";
journal = "six.journal";
tables = ( { name = "orders"; key = "customer"; },
           { name = "items"; key = "customer"; } );
shards = (
  { name = "n0"; url = "sqlite://n0.db"; }, { name = "n1"; url = "sqlite://n1.db"; },
  { name = "n2"; url = "sqlite://n2.db"; }, { name = "n3"; url = "sqlite://n3.db"; },
  { name = "n4"; url = "sqlite://n4.db"; }, { name = "n5"; url = "sqlite://n5.db"; }
);
from = { map = "ring"; vnodes = 100; nodes = ["n0", "n1", "n2", "n3", "n4"]; };
to   = { map = "ring"; vnodes = 100; nodes = ["n0", "n1", "n2", "n3", "n4", "n5"]; };
strategy = "split";
options = { batch_rows = 100; };
publish = { file = "routing.cfg"; };
PLAN
	own_master
	oracle_from=ring:100:n0,n1,n2,n3,n4
	oracle_to=ring:100:n0,n1,n2,n3,n4,n5
	reroute
	nodes=(n0 n1 n2 n3 n4 n5)
	source_rows "$1: before it, every row on its owner under the ring of five"
}

section second-run
fresh second-run
run_reshard 0 "second-run: the ring of four grows to five" run plan.cfg --yes
complete "second-run: first"
second_plan second-run
run_reshard 0 "second-run: run --until capture" run six.cfg --until capture --yes
run_reshard 0 "second-run: it resumes (not taken for a run with a lost journal)" \
	run six.cfg --until copy --yes
run_reshard 0 "second-run: it runs to its end" run six.cfg --yes
final_rows "second-run: every row once, on its owner under the ring of six, unchanged"
no_leftovers "second-run: no trigger or change log left at the end"
equals "$(markers)" "$(all_markers "done")" "second-run: every marker says done"
has routing.cfg "epoch = 2L;" "second-run: routing file published at epoch 2"

section third-run
fresh third-run
nodes=(n0 n1 n2 n3 n4)
run_reshard 0 "third-run: the ring of four grows to five" run plan.cfg --yes
complete "third-run: first"
first_run=$(sql -readonly n0.db "SELECT run_id FROM reshard_marker")
second_plan third-run
run_reshard 0 "third-run: the second run copies" run six.cfg --until copy --yes
run_reshard 0 "third-run: the second run is aborted" abort six.cfg
source_rows "third-run: after the abort, every row as the first run left it"
no_leftovers "third-run: no trigger or change log left after the abort"
equals "$(sql -readonly n0.db "SELECT run_id || ' ' || state || ' ' || epoch
	FROM reshard_marker")" "$first_run done 1" \
	"third-run: n0's marker is the first run's done one again"
run_reshard 0 "third-run: a third run of the name starts and ends" \
	run six.cfg --yes
final_rows "third-run: every row once, on its owner under the ring of six, unchanged"
no_leftovers "third-run: no trigger or change log left at the end"
equals "$(markers)" "$(all_markers "done")" "third-run: every marker says done"
has routing.cfg "epoch = 2L;" "third-run: routing file published at epoch 2"

finish
