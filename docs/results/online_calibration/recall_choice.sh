#!/usr/bin/env bash
# Held-in development proxy for online calibration's defaults: selection recall, attention mass
# and KL against full attention (fasa eval recall) at ctx 4096, 16 decode steps, on two held-in
# novels, for the stored offline calibration (Emma) and online windows 8/16/32/64, with
# Double Sparsity's offline and online channel statistics beside them.
# Usage: FASA=build/fasa docs/results/online_calibration/recall_choice.sh OUT_DIR
set -euo pipefail
FASA=${FASA:-build/fasa}
out=$1
mkdir -p "$out"
calib=docs/results/issue23/selector/calib_emma.json
for text in pride_and_prejudice sense_and_sensibility; do
  for b in 64 256; do
    "$FASA" eval recall -m smollm2-135m --text "$HOME/.cache/fasa/texts/austen_$text.txt" -c 4096 \
      --steps 16 --policy "fasa:calib=$calib,budget=$b" \
      --compare "fasa:calib=online,calib_window=8,budget=$b" \
      --compare "fasa:calib=online,calib_window=16,budget=$b" \
      --compare "fasa:calib=online,calib_window=32,budget=$b" \
      --compare "fasa:calib=online,calib_window=64,budget=$b" \
      --compare "double-sparsity:calib=$calib,budget=$b" \
      --compare "double-sparsity:calib=online,budget=$b" \
      --json > "$out/recall_${text}_B$b.json" 2> "$out/recall_${text}_B$b.log"
  done
done
