#!/usr/bin/env bash
# The low-bit TIP slice's quality: `fasa` and `double-sparsity` with slice=q8 and slice=q4
# against the same policies reading the cache's own f16 values (slice=auto), at the same
# budgets. Two parts per split:
#   recall: `fasa eval recall` (recall of the oracle's top-B, attention mass, KL) on one text;
#   tasks:  `fasa eval sweep` on passkey, niah-single and niah-multikey tasks, bytes recorded.
# SPLIT=heldin (the default) chooses: recall on Sense and Sensibility, tasks cut from Pride and
# Prejudice with seed 11 (the default selector's held-in tasks). SPLIT=heldout reports, after the
# choice: recall and tasks on Persuasion, tasks with a seed of their own (5150) never used for a choice.
#   FASA=build/fasa scripts/dev/results/slice_quality.sh OUT MODEL CTX N_PER_KIND CALIB [BUDGETS]
# e.g. ... OUT smollm2-135m 4096 8 docs/notebook/selection_quality/data/selector_recall/calib_emma.json 64,256
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 M=$2 CTX=$3 N=$4 C=$5 BUDGETS=${6:-64,256}
T=${FASA_HOME:-$HOME/.cache/fasa}/texts
if [ "${SPLIT:-heldin}" = heldout ]; then
  recall_text=$T/austen_persuasion.txt task_text=$T/austen_persuasion.txt seed=5150 tag=persuasion
else
  recall_text=$T/austen_sense_and_sensibility.txt task_text=$T/austen_pride_and_prejudice.txt
  seed=11 tag=pp
fi
mkdir -p "$OUT"
{
  echo "fasa $("$FASA" --version 2>&1 | head -1)"
  sha256sum "$C" "$recall_text" "$task_text"
} > "$OUT/inputs.txt"
IFS=, read -r -a budgets <<< "$BUDGETS"
for B in "${budgets[@]}"; do
  f="recall_${M}_${CTX}_B$B.json"
  [ -s "$OUT/$f" ] && continue
  "$FASA" eval recall -m "$M" --text "$recall_text" --ctx "$CTX" --steps "${STEPS:-16}" --json \
    -t "${THREADS:-1}" --policy "fasa:calib=$C,budget=$B" \
    --compare "fasa:calib=$C,budget=$B,slice=q8" --compare "fasa:calib=$C,budget=$B,slice=q4" \
    --compare "double-sparsity:calib=$C,budget=$B" \
    --compare "double-sparsity:calib=$C,budget=$B,slice=q4" > "$OUT/$f.tmp"
  mv "$OUT/$f.tmp" "$OUT/$f"
done
tasks="$OUT/${M}_${CTX}_${tag}_seed${seed}_3kinds_${N}each.jsonl"
: > "$tasks"
for k in niah-multikey niah-single passkey; do
  "$FASA" gen-tasks -m "$M" --kind $k --haystack "$task_text" --ctx "$CTX" --n "$N" \
    --seed $seed -o "$OUT/${M}_${CTX}_${tag}_$k.jsonl"
  cat "$OUT/${M}_${CTX}_${tag}_$k.jsonl" >> "$tasks"
done
"$FASA" eval sweep -m "$M" --tasks "$tasks" -j "${JOBS:-2}" -t 1 --calib "$C" \
  --policies full,fasa,fasa:slice=q8,fasa:slice=q4,double-sparsity,double-sparsity:slice=q4 \
  --budgets "$BUDGETS" -o "$OUT/sweep_${M}_${CTX}" ${RESUME:+--resume}
for b in fasa:slice=q8 fasa:slice=q4; do
  "$FASA" eval paired "$OUT/sweep_${M}_${CTX}" "$b" fasa > "$OUT/paired_${b//[:=]/_}_vs_fasa.txt"
done
"$FASA" eval paired "$OUT/sweep_${M}_${CTX}" double-sparsity:slice=q4 double-sparsity \
  > "$OUT/paired_double-sparsity_slice_q4_vs_double-sparsity.txt"
