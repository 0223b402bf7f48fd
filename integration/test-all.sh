#!/usr/bin/env bash
# The README's test command: install what is needed, build (optimised and
# with AddressSanitizer + UBSan), run the unit tests under both, start real
# PostgreSQL (primary + streaming replica) and MariaDB (primary + GTID
# replica) servers on 127.0.0.1, run the integration scenarios against them,
# and stop the servers whatever happens.  Exits non-zero if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."

integration/install-deps.sh

suites_passed=0 suites_failed=0 suites_skipped=0
# run_suite NAME COMMAND...: exit 77 is a suite that cannot run here (as
# a scenario that mounts a file system, without root): skipped, said so.
run_suite() {
	local name=$1 start=$SECONDS rc=0
	shift
	echo "== $name"
	"$@" || rc=$?
	case $rc in
	0)
		suites_passed=$((suites_passed + 1))
		echo "== $name passed ($((SECONDS - start)) s)"
		;;
	77)
		suites_skipped=$((suites_skipped + 1))
		echo "== $name skipped: it cannot run on this machine" >&2
		;;
	*)
		suites_failed=$((suites_failed + 1))
		echo "== $name FAILED ($((SECONDS - start)) s)" >&2
		;;
	esac
}

integration/build.sh release
run_suite "integration/lint.sh" integration/lint.sh build
# Two at a time (the machine's cores): every test works in a folder of its
# own, and none asserts on time.  The SQLite scenario suites (labels
# doubling and split, about 100 s optimised, 250 s instrumented) run once,
# under the sanitizers, where they also find memory errors; the release
# binary runs the unit tests here and every real-server scenario below.
# Both builds ran them until CI reached its 20-minute budget.
run_suite "unit tests (release)" ctest --test-dir build -j2 --output-on-failure \
	-LE '^(doubling|split)$'
integration/build.sh asan
run_suite "unit tests (asan+ubsan)" \
	env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --test-dir build-asan -j2 --output-on-failure

# The server scripts themselves: start, replicate, stop, leave nothing.
# With pair 1's downstreams (RESHARD_DOWNSTREAM=1); its last part checks
# the default fleet, without them.
run_suite "integration/test_servers.sh" env -u RESHARD_SERVERS_DIR RESHARD_DOWNSTREAM=1 \
	integration/test_servers.sh

# Scenarios share one set of real servers, stopped on any exit, with pair
# 1's downstream standbys (scenario_downstream_pg.sh throttles purge by
# one; the others see a primary with a standby of its own).
scenarios=(integration/scenario_*.sh)
if [ -e "${scenarios[0]}" ]; then
	export RESHARD_SERVERS_DIR=${RESHARD_SERVERS_DIR:-/tmp/reshard-servers-$$}
	export RESHARD_DOWNSTREAM=1
	trap 'integration/servers.sh stop "$RESHARD_SERVERS_DIR" || true' EXIT
	integration/servers.sh start "$RESHARD_SERVERS_DIR"
	for scenario in "${scenarios[@]}"; do
		run_suite "$scenario" "$scenario"
	done
fi

echo "suites: $suites_passed passed, $suites_failed failed, $suites_skipped skipped"
[ "$suites_failed" -eq 0 ]
