#!/usr/bin/env bash
# Held-in check of calib_spread (queries spread over the whole prompt besides the last W) on
# Gemma 3 270M at 16K, where online calibration lost to the offline one at budgets 32-64: the
# held-in tasks of heldin_gemma16k.sh (Pride and Prejudice, seed 11), the offline calibration
# (Emma), online as by default, and online with 32 and 96 spread queries.
#   FASA=build/fasa docs/notebook/calibration/data/online/heldin_spread.sh OUT TASKS
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 TASKS=$2
shift 2
C=docs/notebook/selection_quality/data/default_selector_equal_bytes/inputs/calib_gemma3-270m_emma_v4.json
mkdir -p "$OUT"
"$FASA" eval sweep -m gemma3-270m --tasks "$TASKS" -j "${JOBS:-2}" -t 1 --calib "$C" \
  --policies fasa --policy fasa:calib=online --policy fasa:calib=online,calib_spread=32 \
  --policy fasa:calib=online,calib_spread=96 --budgets 32,64 -o "$OUT/sweep" "$@"
