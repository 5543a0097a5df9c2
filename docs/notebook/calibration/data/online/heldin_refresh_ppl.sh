#!/usr/bin/env bash
# Does refreshing the online calibration during a long generation pay? The decode-perplexity
# protocol (SmolLM2, ctx 2048, the last 512 tokens of each of 2 chunks scored as policy-driven
# decode steps) on a HELD-IN text (Pride and Prejudice): online FASA without refresh, and
# refreshed every 64 and 128 decode steps from the newest 32 queries.
#   FASA=build/fasa docs/notebook/calibration/data/online/heldin_refresh_ppl.sh OUT
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1
T=${FASA_HOME:-$HOME/.cache/fasa}/texts
mkdir -p "$OUT"
for B in 0.05 0.1; do
  "$FASA" eval ppl -m smollm2-135m --text "$T/austen_pride_and_prejudice.txt" --ctx 2048 \
    --decode 512 --chunks 2 -t "${THREADS:-2}" --policy full --json \
    --compare "fasa:calib=online,budget=$B" \
    --compare "fasa:calib=online,calib_refresh=64,budget=$B" \
    --compare "fasa:calib=online,calib_refresh=128,budget=$B" \
    > "$OUT/ppl_B$B.json" 2> "$OUT/ppl_B$B.log"
done
