#!/usr/bin/env bash
# The README's first command: install what is needed, build reshard, and show
# what it does on a real plan — here a dry-run of plans/demo-ring.cfg (four
# SQLite shards growing to five on a consistent-hash ring) over 200,000
# customer keys.  No server is needed and nothing is written but /tmp files.
set -euo pipefail
cd "$(dirname "$0")/.."

integration/install-deps.sh
integration/build.sh release

work=${RESHARD_DEMO_DIR:-/tmp/reshard-quickstart}
mkdir -p "$work"
# 200,000 customer keys, one of them hot (5,000 rows), as a key file.
awk 'BEGIN { srand(42); for (i = 0; i < 195000; i++) printf "customer-%d\n", int(rand() * 1e7);
             for (i = 0; i < 5000; i++) print "customer-1001" }' >"$work/keys.txt"

echo "== reshard dry-run plans/demo-ring.cfg --keys $work/keys.txt --summary --top 3"
build/reshard dry-run plans/demo-ring.cfg --keys "$work/keys.txt" --summary --top 3
echo
echo "== the first movers (key, from, to):"
build/reshard dry-run plans/demo-ring.cfg --keys "$work/keys.txt" >"$work/movers.tsv" 2>/dev/null
head -5 "$work/movers.tsv"
echo "... $(wc -l <"$work/movers.tsv") movers in all, in $work/movers.tsv"
echo
echo "== reshard route plans/demo-ring.cfg customer-1001 customer-42"
build/reshard route plans/demo-ring.cfg customer-1001 customer-42
