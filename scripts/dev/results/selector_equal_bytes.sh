#!/usr/bin/env bash
# Choosing the default selector on HELD-IN texts only (docs/EVALUATION.md, "Held-in
# and held-out texts"): task sweeps at every budget 32..512 with bytes read per token recorded,
# so that every variant can be compared with Double Sparsity and SparQ at equal bytes
# (score_vs_bytes.svg). Tasks are cut from Pride and Prejudice (held-in), calibrations are made
# on Emma (held-in, version 4: with the compound sets).
#   FASA=build/fasa scripts/dev/results/selector_equal_bytes.sh OUT MODEL CTX N_PER_KIND CALIB
# e.g. ... OUT smollm2-135m 4096 8 docs/notebook/selection_quality/data/selector_recall/calib_emma.json
# The committed runs (docs/notebook/selection_quality/data/default_selector_equal_bytes/) used
# builds from before the default selector changed, where plain `fasa` was the paper's selector: with a later build, write
# `fasa:method=paper` for that row (plain `fasa` is then the third --policy below).
# SPLIT=heldout (selector_heldout.sh) cuts the tasks from Persuasion instead and runs the chosen
# default against the paper's selector and the baselines: the held-out check, after the choice.
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 M=$2 CTX=$3 N=$4 C=$5
T=${FASA_HOME:-$HOME/.cache/fasa}/texts
if [ "${SPLIT:-heldin}" = heldout ]; then
  book=persuasion
  policies=(--policies full,oracle:gqa=per-head,fasa,fasa:method=paper,double-sparsity,sparq)
else
  book=pp
  policies=(--policies full,oracle:gqa=per-head,fasa,fasa:fcs=compound,double-sparsity,sparq
            --policy fasa:fcs=compound,sink=4,recent=32
            --policy fasa:fcs=compound,fc_sets=group,mean_value=on)
fi
haystack=$T/austen_pride_and_prejudice.txt
[ $book = persuasion ] && haystack=$T/austen_persuasion.txt
mkdir -p "$OUT"
tasks="$OUT/${M}_${CTX}_${book}_3kinds_${N}each.jsonl"
: > "$tasks"
for k in niah-multikey niah-single passkey; do
  "$FASA" gen-tasks -m "$M" --kind $k --haystack "$haystack" \
    --ctx "$CTX" --n "$N" --seed 11 -o "$OUT/${M}_${CTX}_${book}_$k.jsonl"
  cat "$OUT/${M}_${CTX}_${book}_$k.jsonl" >> "$tasks"
done
"$FASA" eval sweep -m "$M" --tasks "$tasks" -j "${JOBS:-2}" -t 1 --calib "$C" "${policies[@]}" \
  --budgets 32,64,128,256,512 -o "$OUT/sweep_${M}_${CTX}" ${RESUME:+--resume}
