#!/usr/bin/env bash
# clang-tidy (.clang-tidy) over the engine and CLI sources with the build's compile commands;
# exit 1 on any finding. Slow (seconds per file): a development check, not part of the suite.
# Usage: [TIDY_JOBS=N] scripts/tidy.sh [BUILD_DIR] [FILE...]
#   (default: build, every src/ and apps/ .cpp; TIDY_JOBS parallel clang-tidy processes, default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
CT=${CLANG_TIDY:-$(command -v clang-tidy-14 || command -v clang-tidy || true)}
[ -n "$CT" ] || { echo "tidy: clang-tidy not found (apt install clang-tidy)" >&2; exit 77; }
[ -f "$build/compile_commands.json" ] || { echo "tidy: no $build/compile_commands.json" >&2; exit 2; }
if [ $# -gt 0 ]; then files=("$@"); else
  mapfile -t files < <(git ls-files 'src/*.cpp' 'apps/*.cpp' | grep -v 'tokenizer/unicode_data.cpp')
fi
jobs=${TIDY_JOBS:-$(nproc)}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "tidy: TIDY_JOBS must be a positive integer, got '$jobs'" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Findings stream to stdout as they come (so a long run can be read while it runs), then the
# summary repeats them.
printf '%s\n' "${files[@]}" |
  xargs -P "$jobs" -n 4 "$CT" -p "$build" --quiet 2>&1 | tee "$log" || true
if grep -E ': (warning|error):|^Error while processing' "$log"; then
  echo "tidy: findings above" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files clean"
