#!/usr/bin/env bash
# Held-in check of the online calibration's key sample on Gemma 3 270M at 16K (its held-out
# sweep lost to the offline calibration at budgets 32-64, and 2 held-in passkey tasks flipped
# with calib_keys): tasks cut from Pride and Prejudice with the held-in seed (11), budgets 32
# and 64: the offline calibration (Emma), online with 512 sampled keys (r = 8 at 16K), 2048
# (r = 32). (The exact greedy, calib_keys=0, took minutes per task single-threaded at 16K: left
# out.)
#   FASA=build/fasa docs/notebook/calibration/data/online/heldin_gemma16k.sh OUT N_PER_KIND
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 N=$2
shift 2
C=docs/notebook/selection_quality/data/default_selector_equal_bytes/inputs/calib_gemma3-270m_emma_v4.json
T=${FASA_HOME:-$HOME/.cache/fasa}/texts
mkdir -p "$OUT"
tasks="$OUT/gemma3-270m_16384_pp_3kinds_${N}each.jsonl"
if [ ! -s "$tasks" ]; then
  for k in niah-multikey niah-single passkey; do
    "$FASA" gen-tasks -m gemma3-270m --kind $k --haystack "$T/austen_pride_and_prejudice.txt" \
      --ctx 16384 --n "$N" --seed 11 -o "$OUT/pp_$k.jsonl"
    cat "$OUT/pp_$k.jsonl" >> "$tasks"
  done
fi
"$FASA" eval sweep -m gemma3-270m --tasks "$tasks" -j "${JOBS:-2}" -t 1 --calib "$C" \
  --policies fasa --policy fasa:calib=online --policy fasa:calib=online,calib_keys=2048 \
  --budgets 32,64 -o "$OUT/sweep" "$@"
