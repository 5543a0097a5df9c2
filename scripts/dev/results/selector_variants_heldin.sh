#!/usr/bin/env bash
# Selector variants on HELD-IN texts only (docs/EVALUATION.md, "Held-in and held-out
# texts"): SmolLM2 at 4K, 8 tasks of each kind it can do (passkey, niah-single, niah-multikey)
# cut from Pride and Prejudice, every FASA variant against Double Sparsity and SparQ at budgets 64
# and 256, with the version-4 Emma calibration of docs/notebook/selection_quality/data/selector_recall/.
#   FASA=build/fasa scripts/dev/results/selector_variants_heldin.sh OUT
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1
T=${FASA_HOME:-$HOME/.cache/fasa}/texts
C=$(dirname "$0")/../../../docs/notebook/selection_quality/data/selector_recall/calib_emma.json
mkdir -p "$OUT"
for k in passkey niah-single niah-multikey; do
  "$FASA" gen-tasks -m smollm2-135m --kind $k --haystack "$T/austen_pride_and_prejudice.txt" \
    --ctx 4096 --n 8 --seed 11 -o "$OUT/smollm2_4k_pp_$k.jsonl"
done
cat "$OUT"/smollm2_4k_pp_niah-multikey.jsonl "$OUT"/smollm2_4k_pp_niah-single.jsonl \
  "$OUT"/smollm2_4k_pp_passkey.jsonl > "$OUT/smollm2_4k_pp_3kinds_8each.jsonl"
"$FASA" eval sweep -m smollm2-135m --tasks "$OUT/smollm2_4k_pp_3kinds_8each.jsonl" -j 2 -t 1 \
  --calib "$C" --policies full,oracle:gqa=per-head,fasa,fasa:fcs=mass,fasa:fcs=compound,double-sparsity,sparq \
  --policy fasa:fcs=compound,fc_sets=group,mean_value=on --budgets 64,256 -o "$OUT/sweep_pp"
