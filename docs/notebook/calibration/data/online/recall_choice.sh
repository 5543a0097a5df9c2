#!/usr/bin/env bash
# Held-in development proxy for online calibration's defaults: selection recall, attention mass
# and KL against full attention (fasa eval recall) at ctx 4096, 16 decode steps, on two held-in
# novels, budgets 64 and 256: the stored offline calibration (Emma) against online windows
# (calib_window 16/32/64) and key samples (calib_keys 256/512; 0 = the exact greedy), with
# Double Sparsity's offline and online channel statistics beside them.
# Usage: FASA=build/fasa docs/notebook/calibration/data/online/recall_choice.sh OUT_DIR
set -euo pipefail
FASA=${FASA:-build/fasa}
out=$1
mkdir -p "$out"
calib=docs/notebook/selection_quality/data/selector_recall/calib_emma.json
for text in pride_and_prejudice sense_and_sensibility; do
  for b in 64 256; do
    args=(--policy "fasa:calib=$calib,budget=$b")
    for w in 16 32 64; do
      for keys in 256 512; do
        args+=(--compare "fasa:calib=online,calib_window=$w,calib_keys=$keys,budget=$b")
      done
    done
    args+=(--compare "fasa:calib=online,calib_window=32,calib_keys=0,budget=$b")
    args+=(--compare "double-sparsity:calib=$calib,budget=$b")
    args+=(--compare "double-sparsity:calib=online,budget=$b")
    "$FASA" eval recall -m smollm2-135m --text "$HOME/.cache/fasa/texts/austen_$text.txt" -c 4096 \
      --steps 16 "${args[@]}" --json > "$out/recall_${text}_B$b.json" 2> "$out/recall_${text}_B$b.log"
  done
done
