#!/usr/bin/env bash
# The README's first command: install what is needed, build reshard, and run
# a real migration on SQLite shards — `reshard demo` makes two shards of
# 300,000 orders, writes a plan that doubles them to four, shows the
# dry-run, runs every step (fence, replica made with SQLite's online backup,
# promote, verify, publish, unfence, purge, final check) and the status.
# No server is needed; everything is written under one folder.
set -euo pipefail
cd "$(dirname "$0")/.."

integration/install-deps.sh
integration/build.sh release

demo=${RESHARD_DEMO_DIR:-/tmp/reshard-demo}
rm -rf "$demo"
build/reshard demo "$demo"
echo
echo "The shards, the plan (demo.cfg), the journal and routing.cfg are in $demo."
echo "Try: build/reshard dry-run $demo/demo.cfg --keys - <<< customer-1001"
