#!/usr/bin/env bash
# Installs llama-cpp-python into a throwaway virtual environment (once, under $FASA_HOME or
# ~/.cache/fasa) and runs bench/compare_llamacpp.py with it. Development-time only: the engine
# never depends on it. Arguments are passed on, e.g.
#   bench/compare_llamacpp.sh --fasa ./build/fasa -m ~/.cache/fasa/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf -d 0,1024,4096
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${FASA_HOME:-$HOME/.cache/fasa}/venv-llamacpp
VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import llama_cpp, numpy" 2>/dev/null; then
  echo "fasa: installing llama-cpp-python $VERSION into $VENV (builds llama.cpp; minutes)" >&2
  "$VENV/bin/pip" install --quiet "llama-cpp-python==$VERSION" numpy
fi
exec "$VENV/bin/python" "$HERE/compare_llamacpp.py" "$@"
