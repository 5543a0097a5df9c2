#!/usr/bin/env bash
# The README's headline numbers with one build: the demo, FASA-C on the 8B shape at 16K/32K,
# the held-out SmolLM2 4K task sweep, and the llama-bench yardstick (d0, d4096, d0_vnni).
#   FASA=BIN headline.sh OUT REPO PARTS...   (parts: demo long8b sweep yard)
set -euo pipefail
OUT=$1 REPO=$2; shift 2
FASA=${FASA:?}
H=${FASA_HOME:-$HOME/.cache/fasa}
M8=$H/models/shaped/llama-3.1-8b-instruct-q4_k_m-random.gguf
mkdir -p "$OUT"
for part in "$@"; do
  case $part in
    demo)
      cd "$REPO"
      { echo "# build: $($FASA --version); command: ./build/fasa run -m smollm2-135m --chat -f \"\$(bash scripts/demo_prompt.sh)\" --policy fasa --budget 256 -n 32 --temp 0"
        "$FASA" run -m smollm2-135m --chat -f "$(bash scripts/demo_prompt.sh)" --policy fasa --budget 256 -n 32 --temp 0 2>&1; } > "$OUT/readme_demo.txt"
      cd - >/dev/null ;;
    long8b)
      sha256sum "$M8" "$OUT/calib8.json" > "$OUT/long8b_inputs.txt"
      "$FASA" bench -m "$M8" -p 0 -n 16 -d 16384,32768 -r 2 -t 2 --depth-fill synthetic --bandwidth \
        --policy full --compare "fasa:calib=$OUT/calib8.json,budget=1024" --json \
        > "$OUT/long8b.jsonl" 2> "$OUT/long8b.stderr" ;;
    sweep)
      JOBS=2 FASA=$FASA bash "$REPO/$SWEEP_SCRIPT" "$OUT/heldout_smollm2_4k" smollm2-135m 4096 8 "$REPO/$SWEEP_CALIB" \
        > "$OUT/heldout_smollm2_4k.log" 2>&1 ;;
    yard)
      FASA=$FASA bash "$REPO/$YARD_SCRIPT" "$OUT/yardstick" d0 d4096 d0_vnni > "$OUT/yardstick.log" 2>&1 ;;
  esac
done
