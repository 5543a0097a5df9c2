#!/usr/bin/env bash
# Held-in diagnosis of online calibration on Gemma 3 270M at 16K (its held-out task sweep lost
# to the offline calibration at budgets 32-64): selection recall, attention mass and KL against
# full attention (fasa eval recall), 16 decode steps after a 16K prefill of a held-in novel,
# budgets 32 and 64: the offline calibration (Emma) against online ones with more sampled keys
# (calib_keys 2048, 0 = the exact greedy) and a longer window (calib_window 128).
# Usage: FASA=build/fasa docs/notebook/calibration/data/online/recall_gemma16k.sh OUT_DIR
set -euo pipefail
FASA=${FASA:-build/fasa}
out=$1
mkdir -p "$out"
calib=docs/notebook/selection_quality/data/default_selector_equal_bytes/inputs/calib_gemma3-270m_emma_v4.json
text=${TEXT:-pride_and_prejudice}
for b in 32 64; do
  args=(--policy "fasa:calib=$calib,budget=$b")
  args+=(--compare "fasa:calib=online,budget=$b")
  args+=(--compare "fasa:calib=online,calib_keys=2048,budget=$b")
  args+=(--compare "fasa:calib=online,calib_keys=0,budget=$b")
  args+=(--compare "fasa:calib=online,calib_window=128,budget=$b")
  args+=(--compare "double-sparsity:calib=$calib,budget=$b")
  args+=(--compare "double-sparsity:calib=online,budget=$b")
  "$FASA" eval recall -m gemma3-270m --text "$HOME/.cache/fasa/texts/austen_$text.txt" -c 16384 \
    --steps 16 "${args[@]}" --json > "$out/recall_${text}_B$b.json" 2> "$out/recall_${text}_B$b.log"
done
