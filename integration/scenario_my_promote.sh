#!/usr/bin/env bash
# MariaDB replica promotion against the real pair, which it destroys, so
# it runs apart from scenario_backends.sh (and sorts after it): build/
# backend_check --promote-my catches the replica up with a last write on
# the primary, checks that backend_promote_ready rotates its relay log
# away while it goes on replicating, that backend_promoted says it
# follows, then stopped after a STOP SLAVE (backend_resume_replication
# starts it again and it applies a write made meanwhile), promotes it from
# there, checks that backend_promoted says promoted, and detached once
# read-only again, promotes it again, checks that the promoted server
# takes a write the old primary does not see, and that
# backend_replica_check now refuses it.
#
# Afterwards, whatever happened, the servers of RESHARD_SERVERS_DIR get a
# fresh replica again: `servers.sh reset-replicas my`.
#
# Needs the servers of integration/servers.sh (RESHARD_SERVERS_DIR/env) and
# build/backend_check (BACKEND_CHECK=path overrides).
# Usage: integration/scenario_my_promote.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
source "${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}/env"

bin=${BACKEND_CHECK:-build/backend_check}
if [ ! -x "$bin" ]; then
	echo "scenario_my_promote.sh: $bin not found; run integration/build.sh" >&2
	exit 1
fi

restart() {
	local dir=$RESHARD_SERVERS_DIR
	integration/servers.sh reset-replicas my "$dir" >/dev/null || {
		echo "scenario_my_promote.sh: could not restart the servers in $dir" >&2
		return 1
	}
}

rc=0
"$bin" --promote-my || rc=$?
restart || rc=1
exit "$rc"
