#!/usr/bin/env bash
# Online calibration's cost against the prefill it follows, in one run per model (fasa bench:
# the depth's prefill from a real text, then tg16 whose first decode step calibrates): the
# default (calib_window 32, calib_keys 512) and a cheaper setting (16, 256); QWEN=1 adds
# Qwen2.5-Coder-1.5B at 8192 (the default only; its prefill takes minutes).
# Usage: FASA=build/fasa docs/notebook/calibration/data/online/cost_bench.sh OUT_DIR
set -euo pipefail
FASA=${FASA:-build/fasa}
out=$1
mkdir -p "$out"
text="$HOME/.cache/fasa/texts/austen_persuasion.txt"
"$FASA" bench -m smollm2-135m -p 0 -n 16 -d 4096 -r 2 --text "$text" --policy full \
  --compare fasa:calib=online,budget=256 \
  --compare fasa:calib=online,calib_window=16,calib_keys=256,budget=256 \
  --compare double-sparsity:calib=online,budget=256 \
  -o jsonl > "$out/cost_smollm2.jsonl" 2> "$out/cost_smollm2.log"
"$FASA" bench -m gemma3-270m -p 0 -n 16 -d 4096,16384 -r 1 --text "$text" --policy full \
  --compare fasa:calib=online,budget=256 \
  --compare fasa:calib=online,calib_window=16,calib_keys=256,budget=256 \
  -o jsonl > "$out/cost_gemma3.jsonl" 2> "$out/cost_gemma3.log"
if [ -n "${QWEN:-}" ]; then
  "$FASA" bench -m qwen2.5-coder-1.5b -p 0 -n 16 -d 8192 -r 1 --text "$text" \
    --policy fasa:calib=online,budget=256 \
    -o jsonl > "$out/cost_qwen.jsonl" 2> "$out/cost_qwen.log"
fi
