#!/usr/bin/env bash
# FASA-M's decode against FASA-C and dense, with and without its RAM row cache, in one run per
# model and depth (ratios within a run; every policy keeps its own session, repetitions
# alternate):
#   FASA=build/fasa scripts/dev/results/fasam_speed.sh OUT 8b M8 CALIB8 [DEPTHS]
#     the 8B shape (random weights: speed and memory only), depths filled synthetically
#   FASA=build/fasa scripts/dev/results/fasam_speed.sh OUT real MODEL CALIB [DEPTHS] TEXT
#     a real model, the depth a real prefill of TEXT (consecutive steps' real selections)
# Policies: full; fasa (FASA-C); fasa variant=m with each of M_SETTINGS (default
# "row_cache=0 - row_cache=4B": no row cache, the default 2 x budget, 4 x budget; "-" is the
# defaults, 4B is 4 x BUDGET). BUDGET (default 1024), N (decoded tokens, 16), ROUNDS (2),
# OFFLOAD (/var/tmp), TAG (a suffix of the output files).
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
  f="$OUT/fasam_${KIND}_d${d}${TAG:-}.jsonl"
  [ -s "$f" ] && continue
  base="fasa:calib=$C,budget=$B"
  m="$base,variant=m,offload_dir=$OFF"
  compares=(--compare "$base")
  for s in ${M_SETTINGS:-row_cache=0 - row_cache=4B}; do
    s=${s//4B/$((4 * B))}
    if [ "$s" = - ]; then compares+=(--compare "$m"); else compares+=(--compare "$m,$s"); fi
  done
  "$FASA" bench -m "$M" -p 0 -n "$N" -d "$d" -r "${ROUNDS:-2}" -t 2 "${fill[@]}" --bandwidth \
    --policy full "${compares[@]}" --json > "$f.tmp" 2> "$OUT/fasam_${KIND}_d${d}${TAG:-}.stderr"
  mv "$f.tmp" "$f"
done
