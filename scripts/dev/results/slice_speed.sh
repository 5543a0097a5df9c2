#!/usr/bin/env bash
# The low-bit TIP slice's speed and bytes on the 8B shape (random weights: speed and memory only)
# at depths 16K and 32K, filled synthetically: dense, then the default `fasa` and `fasa` without
# the mean-value correction, each with the cache's own f16 slice (slice=auto), q8 and q4, in one
# run per KV type (ratios within a run), f16 and q8_0 KV.
#   FASA=build/fasa scripts/dev/results/slice_speed.sh OUT M8 CALIB8 [DEPTHS] [KV_TYPES]
# M8: `fasa synth --shape llama-3.1-8b-instruct-q4_k_m -o M8`; CALIB8: `fasa calibrate -m M8
# --text calib.txt --tokens 64 --samples 1 --steps 4 --k 16` (docs/BENCHMARKS.md).
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 M8=$2 C=$3 DEPTHS=${4:-16384,32768} KVS=${5:-f16,q8_0}
mkdir -p "$OUT"
sha256sum "$M8" "$C" > "$OUT/inputs.txt"
IFS=, read -r -a kvs <<< "$KVS"
for kv in "${kvs[@]}"; do
  f="$OUT/slice_${kv}.jsonl"
  [ -s "$f" ] && continue
  compares=()
  for mv in on off; do
    for s in auto q8 q4; do
      compares+=(--compare "fasa:calib=$C,budget=1024,mean_value=$mv,slice=$s")
    done
  done
  "$FASA" bench -m "$M8" -p 0 -n 16 -d "$DEPTHS" -r "${ROUNDS:-2}" -t 2 --kv-type "$kv" \
    --depth-fill synthetic --bandwidth --policy full "${compares[@]}" --json \
    > "$f.tmp" 2> "$OUT/slice_${kv}.stderr"
  mv "$f.tmp" "$f"
done
