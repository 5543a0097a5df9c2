#!/usr/bin/env bash
# FASA-M's decode against FASA-C and dense, with and without its RAM row cache, in one run per
# model and depth (ratios within a run; every policy keeps its own session, repetitions
# alternate):
#   FASA=build/fasa scripts/dev/results/fasam_speed.sh OUT 8b M8 CALIB8 [DEPTHS]
#     the 8B shape (random weights: speed and memory only), depths filled synthetically
#   FASA=build/fasa scripts/dev/results/fasam_speed.sh OUT real MODEL CALIB [DEPTHS] TEXT
#     a real model, the depth a real prefill of TEXT (consecutive steps' real selections)
# Policies: full; fasa (FASA-C); fasa variant=m with row_cache=0, the default (2 x budget) and
# 4 x budget. BUDGET (default 1024), N (decoded tokens, 16), ROUNDS (2), OFFLOAD (/var/tmp).
# The file tier is a direct-I/O file under OFFLOAD: its device decides FASA-M's time.
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 KIND=$2 M=$3 C=$4 DEPTHS=${5:-16384,32768} TEXT=${6:-}
B=${BUDGET:-1024} N=${N:-16} OFF=${OFFLOAD:-/var/tmp}
mkdir -p "$OUT"
sha256sum "$M" "$C" ${TEXT:+"$TEXT"} > "$OUT/inputs_${KIND}.txt"
fill=(--depth-fill synthetic)
[ "$KIND" = real ] && fill=(--text "$TEXT")
IFS=, read -r -a depths <<< "$DEPTHS"
for d in "${depths[@]}"; do
  f="$OUT/fasam_${KIND}_d${d}.jsonl"
  [ -s "$f" ] && continue
  base="fasa:calib=$C,budget=$B"
  m="$base,variant=m,offload_dir=$OFF"
  "$FASA" bench -m "$M" -p 0 -n "$N" -d "$d" -r "${ROUNDS:-2}" -t 2 "${fill[@]}" --bandwidth \
    --policy full --compare "$base" --compare "$m,row_cache=0" --compare "$m" \
    --compare "$m,row_cache=$((4 * B))" --json > "$f.tmp" 2> "$OUT/fasam_${KIND}_d${d}.stderr"
  mv "$f.tmp" "$f"
done
