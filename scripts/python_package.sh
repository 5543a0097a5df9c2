#!/usr/bin/env bash
# The Python package (python/) in the test venv: installs the test requirements when they
# changed (--deps; needs PyPI), then `pip install ./python` when its sources, the engine's or the
# commit changed since the last install (a stamp in the venv). The build folder stays in
# build/python, so a reinstall recompiles only what changed.
#   scripts/python_package.sh [--deps] VENV
set -euo pipefail
cd "$(dirname "$0")/.."
deps=0
if [ "${1:-}" = --deps ]; then deps=1; shift; fi
venv=$1
py="$venv/bin/python"

# A hash of what a file list says, each file's contents included.
hash_of() { sort | xargs -d '\n' sha256sum | sha256sum | cut -d' ' -f1; }

if [ $deps = 1 ]; then
  [ -x "$py" ] || python3 -m venv "$venv"
  want=$(printf '%s\n' tests/server/requirements.txt tests/python/requirements.txt | hash_of)
  if [ "$(cat "$venv/.fasa-deps" 2>/dev/null)" != "$want" ]; then
    "$py" -m pip install -q -r tests/server/requirements.txt -r tests/python/requirements.txt
    echo "$want" >"$venv/.fasa-deps"
  fi
fi
"$py" -c "import scikit_build_core" 2>/dev/null || {
  echo "python_package: no scikit-build-core in $venv (scripts/setup.sh installs it)" >&2
  exit 1
}
# The commit too: the package records it in every results file (cmake/git_commit.cmake), so a
# commit reinstalls it (only the version text is recompiled).
want=$( { find python src cmake CMakeLists.txt -type f -not -path '*/__pycache__/*' | hash_of
          git rev-parse HEAD 2>/dev/null || true
          git status --porcelain --untracked-files=no 2>/dev/null || true; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$venv/.fasa-package" 2>/dev/null)" = "$want" ] && "$py" -c "import fasa._fasa" 2>/dev/null; then
  exit 0
fi
echo "python_package: pip install ./python into $venv" >&2
# Build dependencies come from the venv (no isolated build env: no download at each install).
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
  "$py" -m pip install -q --no-build-isolation ./python
echo "$want" >"$venv/.fasa-package"
