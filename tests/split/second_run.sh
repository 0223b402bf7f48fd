#!/usr/bin/env bash
# second_run: a plan name used again once its first run is done, as an
# operator grows the same cluster a second time.  The first run (the
# ring n0 … n3 grows to five) ends and publishes; a second plan of the
# same name and routing file, with a journal of its own, grows the ring
# of five to six onto a new n5.  Each shard keeps one marker a plan name,
# so the second run's markers replace the first's `done` ones: that must
# not look like a first run whose journal was lost.  The second run,
# stopped after capture, resumes, and ends with every row once on its
# owner under the ring of six (tests/oracle.py), unchanged.  (Its abort
# before the fence is tests/doubling/abort.sh's abort-second-run.)
. "$(dirname "$0")/lib.sh"
begin "$@"

section first-run
fresh second-run
run_reshard 0 "first-run: the ring of four grows to five" run plan.cfg --yes
complete first-run

section second-run
# n5: new and empty, with the tables.
sql n5.db "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL,
		amount DECIMAL(12,2), note TEXT);
	CREATE TABLE items (order_id INTEGER NOT NULL, line INTEGER NOT NULL,
		customer TEXT NOT NULL, sku BLOB, qty INTEGER,
		PRIMARY KEY (order_id, line))"
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
# The oracle's rows under the ring of six, from where the first run left
# them.
own_master
oracle_from=ring:100:n0,n1,n2,n3,n4
oracle_to=ring:100:n0,n1,n2,n3,n4,n5
reroute
nodes=(n0 n1 n2 n3 n4 n5)
source_rows "second-run: before it, every row on its owner under the ring of five"

run_reshard 0 "second-run: run --until capture" run six.cfg --until capture --yes
run_reshard 0 "second-run: it resumes (not taken for a run with a lost journal)" \
	run six.cfg --until copy --yes
run_reshard 0 "second-run: it runs to its end" run six.cfg --yes
final_rows "second-run: every row once, on its owner under the ring of six, unchanged"
no_leftovers "second-run: no trigger or change log left at the end"
equals "$(markers)" "$(all_markers "done")" "second-run: every marker says done"
has routing.cfg "epoch = 2L;" "second-run: routing file published at epoch 2"

finish
