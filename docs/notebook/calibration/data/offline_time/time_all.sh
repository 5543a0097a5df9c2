#!/usr/bin/env bash
# Offline calibration time at the defaults (K 256, 4 samples x (1024 prefill + 32 decode steps),
# compound sets of 0.25 of the FCs) on Emma, 2 threads, one model after the other, each under
# /usr/bin/time -v: SmolLM2-135M, Gemma 3 270M, Qwen2.5-Coder-1.5B and, with LLAMA8B=FILE, the
# 8B shape (`fasa synth --shape llama-3.1-8b-instruct-q4_k_m -o FILE`: random weights, time only).
#   FASA=build/fasa docs/notebook/calibration/data/offline_time/time_all.sh OUT_DIR
set -euo pipefail
FASA=${FASA:-build/fasa}
out=$1
mkdir -p "$out"
text=${FASA_HOME:-$HOME/.cache/fasa}/texts/austen_emma.txt
build=$("$FASA" --version | sed 's/.*(\(.*\)).*/\1/')
models=(smollm2-135m gemma3-270m qwen2.5-coder-1.5b)
[ -n "${LLAMA8B:-}" ] && models+=("$LLAMA8B")
for m in "${models[@]}"; do
  name=$(basename "$m" .gguf)
  /usr/bin/time -v "$FASA" calibrate -m "$m" --text "$text" -o "$out/calib_${name}.json" -t 2 \
    > "$out/calibrate_${name}_${build}.log" 2>&1
done
