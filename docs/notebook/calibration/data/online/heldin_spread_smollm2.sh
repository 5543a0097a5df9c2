#!/usr/bin/env bash
# Held-in check of calib_spread on SmolLM2-135M at 4K: tasks cut from Pride and Prejudice with
# the held-in seed (11), budgets 32-128: the offline calibration (Emma), online as by default,
# and online with 32 and 96 spread queries.
#   FASA=build/fasa docs/notebook/calibration/data/online/heldin_spread_smollm2.sh OUT N_PER_KIND
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 N=$2
shift 2
C=docs/notebook/selection_quality/data/selector_recall/calib_emma.json
T=${FASA_HOME:-$HOME/.cache/fasa}/texts
mkdir -p "$OUT"
tasks="$OUT/smollm2-135m_4096_pp_3kinds_${N}each.jsonl"
if [ ! -s "$tasks" ]; then
  for k in niah-multikey niah-single passkey; do
    "$FASA" gen-tasks -m smollm2-135m --kind $k --haystack "$T/austen_pride_and_prejudice.txt" \
      --ctx 4096 --n "$N" --seed 11 -o "$OUT/pp_$k.jsonl"
    cat "$OUT/pp_$k.jsonl" >> "$tasks"
  done
fi
"$FASA" eval sweep -m smollm2-135m --tasks "$tasks" -j "${JOBS:-2}" -t 1 --calib "$C" \
  --policies fasa --policy fasa:calib=online --policy fasa:calib=online,calib_spread=32 \
  --policy fasa:calib=online,calib_spread=96 --budgets 32,64,128 -o "$OUT/sweep" "$@"
