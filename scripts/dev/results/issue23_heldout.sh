#!/usr/bin/env bash
# Issue 23, the held-out check of the default selector chosen on held-in texts (docs/RESULTS.md,
# "Choosing the default selector"): the same task sweep as issue23_equal_bytes.sh, with tasks cut
# from Persuasion (held-out), the new default `fasa` against the paper's selector, Double Sparsity
# and SparQ, every budget 32..512. Run after the choice, never used for choosing.
#   FASA=build/fasa scripts/dev/results/issue23_heldout.sh OUT MODEL CTX N_PER_KIND CALIB
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 M=$2 CTX=$3 N=$4 C=$5
T=${FASA_HOME:-$HOME/.cache/fasa}/texts
mkdir -p "$OUT"
tasks="$OUT/${M}_${CTX}_persuasion_3kinds_${N}each.jsonl"
: > "$tasks"
for k in niah-multikey niah-single passkey; do
  "$FASA" gen-tasks -m "$M" --kind $k --haystack "$T/austen_persuasion.txt" \
    --ctx "$CTX" --n "$N" --seed 11 -o "$OUT/${M}_${CTX}_persuasion_$k.jsonl"
  cat "$OUT/${M}_${CTX}_persuasion_$k.jsonl" >> "$tasks"
done
"$FASA" eval sweep -m "$M" --tasks "$tasks" -j "${JOBS:-2}" -t 1 --calib "$C" \
  --policies full,oracle:gqa=per-head,fasa,fasa:method=paper,double-sparsity,sparq \
  --budgets 32,64,128,256,512 -o "$OUT/sweep_${M}_${CTX}" ${RESUME:+--resume}
