#!/usr/bin/env bash
# The Python package's tests (tests/python) with the test venv's pytest, after bringing the
# installed package up to date with the sources (scripts/python_package.sh: a no-op when
# nothing changed). Without the venv the test is skipped (exit 77), or fails under
# FASA_REQUIRE_MODEL=1 (CI).
#   run_pytest.sh FASA_BINARY
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="${FASA_HOME:-$HOME/.cache/fasa}/venv-test"
if ! "$venv/bin/python" -c "import pytest, numpy, scikit_build_core" 2>/dev/null; then
  echo "no test venv with pytest, numpy and scikit-build-core at $venv (run scripts/setup.sh)" >&2
  [ "${FASA_REQUIRE_MODEL:-0}" = "1" ] && exit 1
  exit 77
fi
bash scripts/python_package.sh "$venv"
export FASA_CLI="$1"
exec "$venv/bin/python" -m pytest tests/python -q -p no:cacheprovider
