#!/usr/bin/env bash
# Held-out check of calib_spread=96 (chosen on held-in tasks, heldin_spread.sh) on the held-out
# tasks of heldout_sweep.sh (Mansfield Park, seed 53) at every budget 32..512; paired with that
# sweep's offline and default online rows (same task file).
#   FASA=build/fasa docs/notebook/calibration/data/online/heldout_spread.sh OUT TASKS MODEL
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 TASKS=$2 M=$3
shift 3
mkdir -p "$OUT"
"$FASA" eval sweep -m "$M" --tasks "$TASKS" -j "${JOBS:-2}" -t 1 \
  --policy fasa:calib=online,calib_spread=96 --budgets 32,64,128,256,512 -o "$OUT/sweep" "$@"
