#!/usr/bin/env bash
# The gates every change passes, run by integration/test-all.sh (and so by
# CI): formatting (clang-format --dry-run --Werror on every C file), then
# cppcheck and clang-tidy (the checks in .clang-tidy: clang-analyzer-* and
# bugprone-*, findings are errors) on src/.  Zero findings is the bar; a
# finding that is wrong is silenced where it stands, with a comment saying
# why (// NOLINTNEXTLINE(check) or // cppcheck-suppress id), and
# .clang-tidy lists, with reasons, the checks left out.
#
# Usage: integration/lint.sh [BUILD_DIR]   (default build; it needs the
# build's compile_commands.json, made by integration/build.sh)
# Exit status: 0 clean, 1 findings, 2 a missing tool or build.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

for tool in clang-format cppcheck clang-tidy run-clang-tidy; do
	command -v "$tool" >/dev/null || {
		echo "lint: $tool is missing: run integration/install-deps.sh" >&2
		exit 2
	}
done
[ -e "$build/compile_commands.json" ] || {
	echo "lint: no $build/compile_commands.json: run integration/build.sh" >&2
	exit 2
}

status=0
mapfile -t c_files < <(git ls-files '*.c' '*.h')

echo "lint: clang-format (${#c_files[@]} files)"
if ! clang-format --dry-run --Werror "${c_files[@]}"; then
	echo "lint: formatting differs: clang-format -i the files above" >&2
	status=1
fi

echo "lint: cppcheck src/"
if ! cppcheck --quiet --error-exitcode=1 --std=c11 --inline-suppr \
	--enable=warning,portability -I src src; then
	status=1
fi

echo "lint: clang-tidy src/ (checks in .clang-tidy)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! run-clang-tidy -quiet -p "$build" "$PWD/src/" >"$log" 2>&1 ||
	grep -qE '(warning|error):' "$log"; then
	grep -E -A8 '(warning|error):' "$log" | head -n 200 >&2
	status=1
fi
[ "$status" -eq 0 ] && echo "lint: clean"
exit "$status"
