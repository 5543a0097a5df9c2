#!/usr/bin/env bash
# The perplexity protocol of docs/notebook/selection_quality/against_baselines.md (SmolLM2,
# ctx 2048, 256 decode steps x 2 chunks, budgets 5/10/20 % of the context) for the selector variants against Double
# Sparsity and SparQ, on one text: a held-in one (Pride and Prejudice) for choosing, the
# held-out Persuasion only for the final number (docs/EVALUATION.md, "Held-in and held-out texts").
#   FASA=build/fasa scripts/dev/results/selector_ppl.sh OUT TEXT CALIB
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 TEXT=$2 C=$3
mkdir -p "$OUT"
for B in 0.05 0.1 0.2; do
  "$FASA" eval ppl -m smollm2-135m --text "$TEXT" --ctx 2048 --decode 256 --chunks 2 -t "${THREADS:-1}" \
    --policy full --json \
    --compare "fasa:calib=$C,budget=$B,fcs=calibrated" \
    --compare "fasa:calib=$C,budget=$B,fcs=compound" \
    --compare "fasa:calib=$C,budget=$B,fcs=compound,sink=4,recent=32" \
    --compare "fasa:calib=$C,budget=$B,fcs=compound,fc_sets=group,mean_value=on" \
    --compare "fasa:calib=$C,budget=$B,fcs=mass" \
    --compare "double-sparsity:calib=$C,budget=$B" \
    --compare "sparq:budget=$B" > "$OUT/ppl_B$B.json"
done
