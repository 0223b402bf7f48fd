#!/usr/bin/env bash
# PostgreSQL promotion against real servers: build/backend_check
# --promote-pg (integration/backend_check.c, pg_promote_mode) brings the
# replica of integration/servers.sh up to the primary's position, promotes
# it (promoted before and after, promote again does nothing), checks that
# it takes writes and that replica_check now refuses it, and releases the
# physical replication slot it streamed from on the primary (release again
# notes nothing).
#
# Promotion ends the pair, so this runs last, and afterwards the servers
# get a fresh replica: `servers.sh reset-replicas pg`.
#
# Needs the servers of integration/servers.sh (RESHARD_SERVERS_DIR/env) and
# build/backend_check (BACKEND_CHECK=path overrides).
# Usage: integration/scenario_pg_promote.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${RESHARD_SERVERS_DIR:-/tmp/reshard-servers}
# shellcheck disable=SC1091
source "$dir/env"

bin=${BACKEND_CHECK:-build/backend_check}
if [ ! -x "$bin" ]; then
	echo "scenario_pg_promote.sh: $bin not found; run integration/build.sh" >&2
	exit 1
fi

rc=0
"$bin" --promote-pg "$RESHARD_PG_PRIMARY_URL" "$RESHARD_PG_REPLICA_URL" || rc=$?

# A new replica for whatever runs next (the ports come from DIR/env).
integration/servers.sh reset-replicas pg "$dir" >&2 || rc=1
integration/servers.sh status "$dir" >/dev/null || {
	echo "scenario_pg_promote.sh: the servers in $dir did not come back" >&2
	rc=1
}
exit "$rc"
