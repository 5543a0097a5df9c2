#!/usr/bin/env bash
# Runs a server test script with the test venv's Python (scripts/setup.sh makes it). Without the
# venv the test is skipped (exit 77), or fails under FASA_REQUIRE_MODEL=1 (CI).
#   run_python_test.sh SCRIPT FASA_BINARY [args...]
set -euo pipefail
venv="${FASA_HOME:-$HOME/.cache/fasa}/venv-test"
if ! "$venv/bin/python" -c "import openai" 2>/dev/null; then
  echo "no test venv with the openai client at $venv (run scripts/setup.sh)" >&2
  [ "${FASA_REQUIRE_MODEL:-0}" = "1" ] && exit 1
  exit 77
fi
script="$1"
shift
exec "$venv/bin/python" "$script" "$@"
