#!/usr/bin/env bash
# The layering step (a design step, no feature work; docs/notebook/speed/layering_before_after.md):
# the speed rows re-measured for the build before the change (FASA_BEFORE) and this build, in one
# run, rounds alternating the
# binaries (2 threads; run on a quiet machine, nothing else building).
# Usage: FASA_BEFORE=/path/to/old/fasa scripts/dev/results/layering_before_after.sh OUT_DIR [ROUNDS] [recheck]
#   (rounds alternate which binary goes first, "before" in round 1; START_AFTER=1: "after";
#   THREADS=N: threads per run, default 2)
#   recheck:  only the three rows the first runs left in doubt (Qwen tg64 at depth 0, Qwen pp512
#             at depth 4096, the 8B shape's tg16 at depth 0)
#   recheck2: the two rows the final run (after the session-owned scratch) left lower in both rounds
#             (SmolLM2 tg64 at depth 0, the 8B shape's pp512 at depth 0)
#   d0:       SmolLM2, Gemma 3 270M, Qwen2.5-Coder-1.5B (pp512, tg64) and the 8B shape (pp512,
#             tg16) at depth 0
#   d4096:    SmolLM2, Gemma 3 and Qwen at depth 4096 (synthetic fill: the KV rows are made, not
#             prefilled), pp512 and tg64
#   policies: the 8B shape at depth 16384 (synthetic fill), full and FASA-C (budget 1024), tg16
# M8: the 8B-shaped file (fasa synth --shape llama-3.1-8b-instruct-q4_k_m -o M8); CALIB8: its
# calibration (docs/notebook/long_context_speed/README.md, "The Llama-3.1-8B shape at depth 32K",
# shows both commands).
set -euo pipefail
OUT=${1:?usage: FASA_BEFORE=... $0 OUT_DIR [ROUNDS]}
ROUNDS=${2:-2}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
FASA=${FASA:-$ROOT/build/fasa}
BEFORE=${FASA_BEFORE:?set FASA_BEFORE to a build of the commit before the change (60c720b)}
MODELS=${FASA_HOME:-$HOME/.cache/fasa}/models
M8=${M8:-$MODELS/shaped/llama-3.1-8b-instruct-q4_k_m-random.gguf}
CALIB8=${CALIB8:-$MODELS/shaped/llama-3.1-8b-random.calib.json}
SMOL=$MODELS/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf
GEMMA=$MODELS/gemma3-270m/gemma-3-270m-q4_k_m.gguf
QWEN=$MODELS/qwen2.5-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
mkdir -p "$OUT"
run() {  # label round part args...
  local label=$1 round=$2 part=$3 bin
  shift 3
  bin=$FASA; [ "$label" = before ] && bin=$BEFORE
  "$bin" bench "$@" -t "${THREADS:-2}" --json |
    sed "s/^{/{\"binary\":\"$label\",\"round\":$round,\"part\":\"$part\",/" >> "$OUT/bench.jsonl"
}
uptime | tee "$OUT/uptime.txt"
for round in $(seq 1 "$ROUNDS"); do
  order="before after"; [ $(((round + ${START_AFTER:-0}) % 2)) = 0 ] && order="after before"
  for label in $order; do
    if [ "${3:-}" = recheck2 ]; then
      run $label $round d0 -m "$SMOL" -p 0 -n 64 -r 1
      run $label $round d0 -m "$M8" -p 512 -n 0 -r 1
      continue
    fi
    if [ "${3:-}" = recheck ]; then
      run $label $round d0 -m "$QWEN" -p 0 -n 64 -r 1
      run $label $round d4096 -m "$QWEN" -p 512 -n 0 -d 4096 --depth-fill synthetic -r 1
      run $label $round d0 -m "$M8" -p 0 -n 16 -r 1
      continue
    fi
    for m in "$SMOL" "$GEMMA" "$QWEN"; do
      run $label $round d0 -m "$m" -p 512 -n 64 -r 1
      run $label $round d4096 -m "$m" -p 512 -n 64 -d 4096 --depth-fill synthetic -r 1
    done
    run $label $round d0 -m "$M8" -p 512 -n 16 -r 1
    run $label $round policies -m "$M8" -p 0 -n 16 -d 16384 --depth-fill synthetic -r 1 \
      --policy full,fasa --budget 1024 --calib "$CALIB8"
  done
done
uptime | tee -a "$OUT/uptime.txt"
git -C "$ROOT" rev-parse HEAD > "$OUT/commit.txt"
