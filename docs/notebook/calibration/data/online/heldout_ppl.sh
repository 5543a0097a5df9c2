#!/usr/bin/env bash
# The decode-perplexity protocol (SmolLM2, ctx 2048, the last 256 tokens of each of 2 chunks
# scored as policy-driven decode steps; budget a share of the context) on HELD-OUT text:
# Mansfield Park, which no earlier choice used. Online calibration against the offline one
# (Emma) and Double Sparsity, each offline and online.
#   FASA=build/fasa docs/notebook/calibration/data/online/heldout_ppl.sh OUT CALIB
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 C=$2
T=${FASA_HOME:-$HOME/.cache/fasa}/texts
mkdir -p "$OUT"
for B in 0.05 0.1 0.2; do
  "$FASA" eval ppl -m smollm2-135m --text "$T/austen_mansfield_park.txt" --ctx 2048 --decode 256 \
    --chunks 2 -t 2 --policy full --json \
    --compare "fasa:calib=$C,budget=$B" --compare "fasa:calib=online,budget=$B" \
    --compare "double-sparsity:calib=$C,budget=$B" --compare "double-sparsity:calib=online,budget=$B" \
    > "$OUT/ppl_B$B.json" 2> "$OUT/ppl_B$B.log"
done
