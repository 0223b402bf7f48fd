# tests/harness.sh: the checks every shell scenario of tests/ counts
# with, and the few helpers around them.  Sourced by tests/doubling/lib.sh
# and tests/split/lib.sh, never run.  The sourcing file sets passed=0,
# failed=0, background=() and root, and sets dir to the current
# scenario's folder and bin to the reshard under test.
# shellcheck shell=bash
# shellcheck disable=SC2154 # dir, background, scenario: the sourcing lib sets them

# ok NAME: count a passed check.
ok() {
	passed=$((passed + 1))
	echo "ok - $1"
}

# not_ok NAME [DETAIL_FILE]: count a failed check, DETAIL_FILE's head as comments.
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $1"
	if [ $# -gt 1 ] && [ -s "$2" ]; then
		head -n 15 "$2" | sed 's/^/#   /'
	fi
}

# check NAME COMMAND...: passes when COMMAND succeeds.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}

# run_reshard CODE NAME ARGS...: reshard ARGS (output in $dir/out, err) must exit CODE.
run_reshard() {
	local want=$1 name=$2 got
	shift 2
	"$bin" "$@" >"$dir/out" 2>"$dir/err" </dev/null
	got=$?
	if [ "$got" -eq "$want" ]; then
		ok "$name"
		return 0
	fi
	{
		echo "exit $got, expected $want; stderr:"
		grep -v '^step ' "$dir/err" | tail -n 12
	} >"$dir/why"
	not_ok "$name" "$dir/why"
	return 1
}

# has FILE TEXT NAME: passes when FILE contains TEXT (a fixed string).
has() {
	if grep -qsF -- "$2" "$1"; then
		ok "$3"
	else
		{
			echo "no \"$2\" in $1:"
			grep -sv '^step ' "$1"
		} >"$dir/why"
		not_ok "$3" "$dir/why"
	fi
}

# equals GOT WANT NAME: passes when the two strings are equal.
equals() {
	if [ "$1" == "$2" ]; then
		ok "$3"
	else
		printf 'got  %s\nwant %s\n' "$1" "$2" >"$dir/why"
		not_ok "$3" "$dir/why"
	fi
}

# harness_begin KIND PATH/TO/reshard: set bin; make $root (in memory when
# /dev/shm is there: every step fsyncs its journal, and on a disk that
# alone would take minutes; RESHARD_TEST_TMPDIR chooses another place),
# removed by the cleanup trap; check the tools the scenarios need.
harness_begin() {
	local kind=$1 base=${RESHARD_TEST_TMPDIR:-} tool
	bin=${2:?usage: $0 PATH/TO/reshard}
	case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac
	if [ -z "$base" ]; then
		base=${TMPDIR:-/tmp}
		[ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
	fi
	root=$(mktemp -d "$base/reshard-$kind-$scenario.XXXXXX") || exit 1
	trap cleanup EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 141' PIPE
	trap 'exit 143' TERM
	for tool in sqlite3 python3; do
		command -v "$tool" >/dev/null ||
			bail "the $tool command is needed"
	done
	[ -x "$bin" ] || bail "no reshard binary at $bin"
}

# cleanup: the EXIT trap: kill $background, remove $root unless RESHARD_TEST_KEEP.
cleanup() {
	local pid
	for pid in "${background[@]}"; do
		kill -9 "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -n "${RESHARD_TEST_KEEP:-}" ]; then
		echo "# kept $root"
	else
		rm -rf "$root"
	fi
}

# bail WHY: the script cannot go on: one failed check, the summary, exit 1.
bail() {
	not_ok "$1"
	echo "$passed passed, $failed failed"
	exit 1
}

section() {
	local now=$(($(date +%s%N) / 1000000))
	[ -n "$section_name" ] &&
		echo "# $section_name took $((now - section_start)) ms"
	section_name=$1 section_start=$now
}

# finish: print "N passed, M failed" and exit, 1 when a check failed.
finish() {
	section end
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

# sql ARGS...: the sqlite3 shell, waiting up to 5 s for a lock.
sql() { sqlite3 -batch -cmd '.timeout 5000' "$@"; }

# status_json: `reshard status --format json` into $dir/status.json (not ok if it fails).
status_json() {
	if ! "$bin" status "$dir/plan.cfg" --format json >"$dir/status.json" \
		2>"$dir/status.err"; then
		{
			echo "stdout:"
			cat "$dir/status.json"
			echo "stderr:"
			cat "$dir/status.err"
		} >"$dir/why"
		not_ok "status of $dir failed" "$dir/why"
	fi
}

# jget PATH: a value of $dir/status.json by JSON path ('$.fenced'; booleans as 0/1).
jget() {
	sql :memory: "SELECT json_extract(readfile('$dir/status.json'), '$1')"
}

# step_field STEP FIELD: a field of a step in status.json: state, attempts, chunks, rows….
step_field() {
	sql :memory: "SELECT json_extract(value, '\$.$2')
		FROM json_each(readfile('$dir/status.json'), '\$.steps')
		WHERE json_extract(value, '\$.name') = '$1'"
}

# step_states: "name=state name=state …" of status.json ($all_done when finished).
step_states() {
	sql :memory: "SELECT group_concat(json_extract(value, '\$.name') || '='
		|| json_extract(value, '\$.state'), ' ')
		FROM json_each(readfile('$dir/status.json'), '\$.steps')"
}

# wait_for WHAT SECONDS COMMAND...: poll COMMAND every 20 ms, fail after SECONDS.
wait_for() {
	local what=$1 tries=$(($2 * 50))
	shift 2
	while ! "$@"; do
		tries=$((tries - 1))
		if [ "$tries" -le 0 ]; then
			echo "timed out waiting for $what" >&2
			return 1
		fi
		sleep 0.02
	done
}

# hold_lock FILE SECONDS: a transaction holds FILE's write lock for
# SECONDS (in the background: its pid in $lock_pid and $background), once
# `locked` exists.
hold_lock() {
	rm -f locked
	python3 -c '
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
open("locked", "w").close()
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")' "$1" "$2" &
	lock_pid=$!
	background+=("$lock_pid")
	wait_for "the lock" 10 test -e locked
}

# same_lines NAME WANT GOT: files WANT and GOT hold the same lines (the
# count said when they do, the first differences when not).
same_lines() {
	if cmp -s "$2" "$3"; then
		ok "$1 ($(wc -l <"$3") rows)"
	else
		diff "$2" "$3" | head -n 10 >"$dir/why"
		not_ok "$1" "$dir/why"
	fi
}

# log_lines FILE N: FILE exists and has at least N lines.
log_lines() { [ -e "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ]; }
