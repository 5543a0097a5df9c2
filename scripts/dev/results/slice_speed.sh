#!/usr/bin/env bash
# The low-bit TIP slice's speed and bytes on the 8B shape (random weights: speed and memory only)
# at depths 16K and 32K, filled synthetically: dense, then the default `fasa` and `fasa` without
# the mean-value correction, each with the cache's own f16 slice (slice=auto), q8 and q4, in one
# run per KV type (ratios within a run), f16 and q8_0 KV.
#   FASA=build/fasa scripts/dev/results/slice_speed.sh OUT M8 CALIB8 [DEPTHS] [KV_TYPES]
# SETTINGS (default "on:auto on:q8 on:q4 off:auto off:q8 off:q4") lists mean_value:slice pairs.
# Every policy of a run keeps its own session (repetitions alternate), about 4.3 GiB of f16 KV
# each at 32K on the 8B shape, beside 4.4 GiB of repacked weights: on a 24 GiB machine a 32K run
# takes dense and at most two `fasa` settings (OUT_TAG names the run's files).
# M8: `fasa synth --shape llama-3.1-8b-instruct-q4_k_m -o M8`; CALIB8: `fasa calibrate -m M8
# --text calib.txt --tokens 64 --samples 1 --steps 4 --k 16` (docs/BENCHMARKS.md).
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 M8=$2 C=$3 DEPTHS=${4:-16384,32768} KVS=${5:-f16,q8_0}
mkdir -p "$OUT"
sha256sum "$M8" "$C" > "$OUT/inputs.txt"
IFS=, read -r -a kvs <<< "$KVS"
for kv in "${kvs[@]}"; do
  f="$OUT/slice_${kv}${OUT_TAG:-}.jsonl"
  [ -s "$f" ] && continue
  compares=()
  for setting in ${SETTINGS:-on:auto on:q8 on:q4 off:auto off:q8 off:q4}; do
    compares+=(--compare "fasa:calib=$C,budget=1024,mean_value=${setting%%:*},slice=${setting#*:}")
  done
  "$FASA" bench -m "$M8" -p 0 -n 16 -d "$DEPTHS" -r "${ROUNDS:-2}" -t 2 --kv-type "$kv" \
    --depth-fill synthetic --bandwidth --policy full "${compares[@]}" --json \
    > "$f.tmp" 2> "$OUT/slice_${kv}${OUT_TAG:-}.stderr"
  mv "$f.tmp" "$f"
done
