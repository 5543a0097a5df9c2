#!/usr/bin/env bash
# clang-format (.clang-format) over the project's C++ files: rewrites them, or with --check lists
# the files that differ and exits 1. Generated tables (tokenizer/unicode_data.cpp) are left alone.
# Usage: scripts/format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
CF=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}
[ -n "$CF" ] || { echo "format: clang-format not found (apt install clang-format)" >&2; exit 77; }
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.h' 'apps/*.cpp' 'apps/*.h' 'tests/*.cpp' \
  'tests/*.h' 'bench/*.cpp' 'fuzz/*.cpp' 'python/*.cpp' 'python/*.h' |
  grep -v 'tokenizer/unicode_data.cpp')
if [ "${1:-}" = --check ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! "$CF" --style=file "$f" | cmp -s "$f" -; then echo "format: $f differs"; bad=1; fi
  done
  [ $bad = 0 ] && echo "format: ${#files[@]} files formatted"
  exit $bad
fi
"$CF" --style=file -i "${files[@]}"
