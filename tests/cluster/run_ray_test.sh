#!/usr/bin/env bash
# Runs tests/cluster/ray_test.py (a sweep on a two-node Ray cluster on this machine, a node
# killed mid-run) with the Ray venv's Python (scripts/setup.sh makes it from
# tests/cluster/requirements.txt). Without the venv, or with another ray than the pinned one,
# the test is skipped (exit 77), or fails under FASA_REQUIRE_MODEL=1 (CI).
#   run_ray_test.sh FASA_BINARY
set -euo pipefail
here=$(dirname "$0")
venv="${FASA_HOME:-$HOME/.cache/fasa}/venv-ray"
want=$(sed -n 's/^ray==//p' "$here/requirements.txt")
have=$("$venv/bin/python" -c "import ray; print(ray.__version__)" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  echo "no venv with ray $want at $venv (found: ${have:-none}; run scripts/setup.sh)" >&2
  [ "${FASA_REQUIRE_MODEL:-0}" = "1" ] && exit 1
  exit 77
fi
exec "$venv/bin/python" "$here/ray_test.py" "$@"
