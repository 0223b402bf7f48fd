#!/usr/bin/env bash
# Build reshard.  Usage: integration/build.sh [release|asan]
#   release (default): build/        optimised, warnings are errors
#   asan:              build-asan/   AddressSanitizer + UBSan, for the tests
# Prints only compiler diagnostics; the binary is build/reshard.
set -euo pipefail
cd "$(dirname "$0")/.."

kind=${1:-release}
case "$kind" in
release) dir=build flags=(-DCMAKE_BUILD_TYPE=Release) ;;
asan) dir=build-asan flags=(-DCMAKE_BUILD_TYPE=Debug -DRESHARD_SANITIZE=ON) ;;
*)
	echo "usage: integration/build.sh [release|asan]" >&2
	exit 2
	;;
esac
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
cmake --build "$dir" --parallel "$(nproc)" -- --no-print-directory >/dev/null
