#!/usr/bin/env bash
# A full disk under a PostgreSQL target, on a real server: a split from a
# SQLite file (20,000 orders, keys 1 … 20,000 with the identity hash) into
# a new database on pair 1's primary, which takes the keys above 10,000.
# The target's table lives in a tablespace on a 1 MB tmpfs, which the
# copy fills: PostgreSQL cannot extend the table's file ("could not
# extend file …: No space left on device", SQLSTATE 53100) and rolls the
# chunk back.  The run must stop (exit 1) naming the target and the
# cause, with some chunks done, the source as it was, and the server up
# with its standby streaming.  Once the file system is grown (as an
# operator frees space), `reshard run` resumes and ends exact: every row
# once, on its owner by its key's range, unchanged.
#
# The tablespace is an in-place one (allow_in_place_tablespaces: a
# directory in the primary's data directory; its standby replays it into
# a directory of its own), with the tmpfs mounted over it.  Mounting needs
# root: without, the scenario says so and exits 77 (skipped).
#
# Needs the servers of integration/servers.sh (RESHARD_SERVERS_DIR/env).
# About 10 s.
# Usage: integration/scenario_full_disk_pg.sh
ENGINE=pg
# shellcheck source=integration/doubling_lib.sh
. "$(dirname "$0")/doubling_lib.sh"

p1=$(url_of primary 1)
dst=${p1%/*}/rs_full_dst
space=''
dir=$tmp/full-disk
mkdir -p "$dir"

if [ "$(id -u)" -ne 0 ]; then
	echo "ok - # SKIP mounting a tmpfs needs root (uid $(id -u))"
	exit 77
fi

# space_of: the directory of the tablespace rs_full, when p1 has it.
space_of() {
	q "$p1" "SELECT current_setting('data_directory') || '/' ||
		pg_tablespace_location(oid) FROM pg_tablespace WHERE spcname = 'rs_full'"
}
# leftovers_go: the target database, the file system, then the tablespace
# (dropped once empty, its directory only once nothing is mounted on it),
# of this run or of one killed before; says what it could not remove.
leftovers_go() {
	local left=() at
	at=$(space_of 2>/dev/null)
	q "$p1" "DROP DATABASE IF EXISTS rs_full_dst WITH (FORCE)" >/dev/null 2>&1 ||
		left+=("database rs_full_dst")
	if [ -n "$at" ] && mountpoint -q "$at"; then
		umount "$at" 2>/dev/null || umount -l "$at" || left+=("the tmpfs on $at")
	fi
	q "$p1" "DROP TABLESPACE IF EXISTS rs_full" >/dev/null 2>&1 || left+=("tablespace rs_full")
	[ ${#left[@]} -eq 0 ] || echo "# full disk: could not remove ${left[*]}"
	[ ${#left[@]} -eq 0 ]
}
trap 'leftovers_go; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT

# The tablespace, and the tmpfs over its directory, owned by the server's
# user; the version directory PostgreSQL made in it is made again on the
# tmpfs.
leftovers_go || bail "removing what an earlier run left on p1"
PGOPTIONS="-c allow_in_place_tablespaces=on" psql -X -w -q -v ON_ERROR_STOP=1 "$p1" \
	-c "CREATE TABLESPACE rs_full LOCATION ''" ||
	bail "making the tablespace rs_full on p1"
space=$(space_of)
[ -d "$space" ] || bail "the tablespace's directory ($space) is not on this machine"
version=$(ls "$space")
owner=$(stat -c %u:%g "$space")
mount -t tmpfs -o "size=1m,mode=0700,uid=${owner%:*},gid=${owner#*:}" tmpfs "$space" ||
	bail "mounting a 1 MB tmpfs on $space"
install -d -o "${owner%:*}" -g "${owner#*:}" -m 0700 "$space/$version" ||
	bail "making $version on the tmpfs"

streaming="SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"
standbys=$(q "$p1" "$streaming")
check "p1 has standbys streaming ($standbys)" test "${standbys:-0}" -gt 0
q "$p1" "CREATE DATABASE rs_full_dst" &&
	q "$dst" "CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL,
		amount numeric(12,2), note text) TABLESPACE rs_full" ||
	bail "making the target database on p1"
full_disk_split "$dir" "$dst" || bail "making the source and the plan"

run_reshard 1 "full disk: the run fails when dst's tablespace is full (exit 1)" run plan.cfg --yes
echo "# full disk: $(grep -m1 '^reshard:' "$dir/err")"
has "$dir/err" "shard dst (" "full disk: the error names dst"
has "$dir/err" "No space left on device" "full disk: the error says the disk is full"
has "$dir/err" "once that is fixed, \`reshard run plan.cfg\` resumes at step copy" \
	"full disk: the error says that run resumes at the copy"
(cd "$dir" && "$bin" status plan.cfg --format json) >"$dir/status.json" 2>"$dir/status.err"
equals "$(python3 -c 'import json, sys
steps = {s["name"]: s for s in json.load(open(sys.argv[1]))["steps"]}
print(steps["copy"]["state"])' "$dir/status.json")" failed "full disk: status says the copy failed"
full_disk_stopped 0
equals "$(q "$p1" "$streaming")" "$standbys" \
	"full disk: p1 is up, its $standbys standbys streaming"

mount -o remount,size=64m "$space" || bail "growing the tmpfs"
run_reshard 0 "full disk: with space again the run resumes and finishes" run plan.cfg --yes
q "$dst" "SELECT id, customer, amount, note FROM orders ORDER BY id" >"$dir/got.dst"
check "full disk: dst holds every key above 10,000, unchanged" cmp "$dir/rows.dst" "$dir/got.dst"
src_rows "$dir/src.db" >"$dir/got.src"
check "full disk: src holds the rest, unchanged" cmp "$dir/rows.src" "$dir/got.src"
finish
