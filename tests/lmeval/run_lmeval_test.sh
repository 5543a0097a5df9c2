#!/usr/bin/env bash
# Runs tests/lmeval/lmeval_test.py with the lm-eval venv's Python (scripts/setup.sh makes it).
# Without the venv the test is skipped (exit 77), or fails under FASA_REQUIRE_MODEL=1 (CI).
#   run_lmeval_test.sh FASA_BINARY
set -euo pipefail
venv="${FASA_HOME:-$HOME/.cache/fasa}/venv-lmeval"
if ! "$venv/bin/python" -c "import lm_eval" 2>/dev/null; then
  echo "no lm-eval venv at $venv (run scripts/setup.sh)" >&2
  [ "${FASA_REQUIRE_MODEL:-0}" = "1" ] && exit 1
  exit 77
fi
exec "$venv/bin/python" "$(dirname "$0")/lmeval_test.py" "$@"
