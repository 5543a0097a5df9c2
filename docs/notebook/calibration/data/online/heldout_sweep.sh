#!/usr/bin/env bash
# Online calibration against the stored offline one (made on Emma) and against Double Sparsity
# (offline and online) at equal bytes: a task sweep at every budget 32..512 on HELD-OUT tasks,
# cut from Mansfield Park (no earlier choice used it) with a seed of their own (53; the held-in
# splits used 11). The online defaults (calib_window 32, calib_keys 512) were chosen on
# Pride and Prejudice and Sense and Sensibility (recall_choice.sh).
#   FASA=build/fasa docs/notebook/calibration/data/online/heldout_sweep.sh OUT MODEL CTX N_PER_KIND CALIB
# Extra arguments go to `eval sweep` (e.g. --shard 1/2, --resume).
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 M=$2 CTX=$3 N=$4 C=$5
shift 5
T=${FASA_HOME:-$HOME/.cache/fasa}/texts
haystack=$T/austen_mansfield_park.txt
mkdir -p "$OUT"
tasks="$OUT/${M}_${CTX}_mansfield_3kinds_${N}each.jsonl"
if [ ! -s "$tasks" ]; then
  for k in niah-multikey niah-single passkey; do
    "$FASA" gen-tasks -m "$M" --kind $k --haystack "$haystack" \
      --ctx "$CTX" --n "$N" --seed 53 -o "$OUT/${M}_${CTX}_mansfield_$k.jsonl"
    cat "$OUT/${M}_${CTX}_mansfield_$k.jsonl" >> "$tasks"
  done
fi
"$FASA" eval sweep -m "$M" --tasks "$tasks" -j "${JOBS:-2}" -t 1 --calib "$C" \
  --policies full,fasa,double-sparsity \
  --policy fasa:calib=online --policy double-sparsity:calib=online \
  --budgets 32,64,128,256,512 -o "$OUT/sweep_${M}_${CTX}" "$@"
