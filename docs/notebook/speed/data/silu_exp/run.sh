#!/usr/bin/env bash
# SiLU with the vectorized exp: Qwen2.5-Coder-1.5B prefill (pp512), the build before and after,
# alternating; rounds 1-2 at depths 0 and 4096 (-r 2), rounds 3-4 at depth 0 (-r 3).
#   run.sh BEFORE_BIN AFTER_BIN ROUND DEPTHS REPS
set -euo pipefail
Q=${FASA_HOME:-$HOME/.cache/fasa}/models/qwen2.5-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
for w in before after; do
  b=$1
  [ "$w" = after ] && b=$2
  "$b" bench -m "$Q" -p 512 -n 0 -d "$4" -r "$5" -t 2 --json 2>/dev/null > "${w}_r$3.json"
done
