#!/usr/bin/env bash
# Regenerates the inputs behind the baseline tables
# (docs/notebook/selection_quality/against_baselines.md) — the calibrations and every task file —
# and checks each against the sha256 its results file recorded. Task files are regenerated
# bit-identically by `fasa gen-tasks` (deterministic for a seed); a calibration depends on the
# build's numerics, so the ones the tables used are also committed under
# docs/notebook/selection_quality/data/baselines_inputs/ and this script says whether the current
# build reproduces them.
#   scripts/dev/results/baselines_inputs.sh OUT_DIR [calib|tasks ...]   # FASA=path/to/fasa
# Then the sweep commands of each notebook section run on OUT_DIR's files.
set -euo pipefail
OUT=${1:?usage: $0 OUT_DIR [calib|tasks ...]}
shift
PARTS=${*:-calib tasks}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
FASA=${FASA:-$ROOT/build/fasa}
TEXTS=${FASA_HOME:-$HOME/.cache/fasa}/texts   # bash scripts/get_texts.sh
HAY=$TEXTS/austen_pride_and_prejudice.txt
mkdir -p "$OUT"
cd "$OUT"
status=0

check() {  # FILE SHA256 WHAT
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$got" = "$2" ]; then
    echo "same   $1 ($3): $got"
  else
    echo "DIFFER $1 ($3): $got, recorded $2"
    status=1
  fi
}

for part in $PARTS; do
  case $part in
  calib)
    # SmolLM2 (every SmolLM2 baseline table: emma.json = calib_emma_v3.json).
    "$FASA" calibrate -m smollm2-135m --text "$TEXTS/austen_emma.txt" -o emma.json -t 1
    check emma.json ac28895d5a767f2a8c5c7048e0dc8dcd79e67eddc7fdcd209cf67a8a5651840a "SmolLM2 calibration"
    # Gemma 3 270M (the 16K tables, build 2c9f980; the 5-per-kind sample used 8922e666… from
    # before the vectorized GELU).
    "$FASA" calibrate -m gemma3-270m --text "$TEXTS/austen_emma.txt" -o calib_gemma_emma.json -t 1
    check calib_gemma_emma.json e5e30c2afb8707944e93ca5721d40dc86dee94927df49b10f8656c40d9349600 "Gemma calibration"
    ;;
  tasks)
    for k in passkey niah-single niah-multikey niah-multivalue niah-multiquery variable-tracking \
             common-words freq-words qa; do
      "$FASA" gen-tasks -m smollm2-135m --kind $k --haystack "$HAY" --ctx 4096 --n 25 --seed 1 \
        -o smollm2_4k_$k.jsonl >&2   # its "wrote ..." line must not join the task file
      head -2 smollm2_4k_$k.jsonl
    done > smollm2_4k_2each.jsonl
    check smollm2_4k_2each.jsonl a115832483e8cbe8c15a71c8371594061abaf67cb31467d00564cac449eca92e "SmolLM2 4K, 2 per kind"
    cat smollm2_4k_passkey.jsonl smollm2_4k_niah-single.jsonl smollm2_4k_niah-multikey.jsonl \
      > smollm2_4k_3kinds_25each.jsonl
    check smollm2_4k_3kinds_25each.jsonl 0261742231e87ea05e8efd8bb9882f1b5e4b49b372c6d3a6fdda9950fd57a441 "SmolLM2 4K, 3 kinds x 25"
    check smollm2_4k_niah-multikey.jsonl 6bb9053d56bfc8fe687fde3ab0d5af2c1cd0cab8815934e75270a817b5a5f702 "SmolLM2 4K, niah-multikey x 25 (fcs=mass ablation)"
    for k in niah-multivalue niah-multiquery variable-tracking common-words freq-words qa; do
      head -10 smollm2_4k_$k.jsonl
    done > smollm2_4k_6kinds_10each.jsonl
    check smollm2_4k_6kinds_10each.jsonl a9d0e73a89bb03ab3d7b555c7a9983441a4d7be2c41788c75a01c2a0433c84ed "SmolLM2 4K, 6 kinds x 10"
    cat smollm2_4k_niah-multivalue.jsonl smollm2_4k_niah-multiquery.jsonl \
      smollm2_4k_variable-tracking.jsonl smollm2_4k_common-words.jsonl smollm2_4k_freq-words.jsonl \
      smollm2_4k_qa.jsonl > smollm2_4k_6kinds_25each.jsonl
    python3 "$ROOT/scripts/dev/interleave_tasks.py" smollm2_4k_6kinds_25each.jsonl \
      smollm2_4k_6kinds_25each_interleaved.jsonl
    check smollm2_4k_6kinds_25each_interleaved.jsonl 19def7962759f1f1421b563a47991a78d90e064a879ebca895b620a4c2cffb00 "SmolLM2 4K, 6 kinds x 25"
    for k in passkey niah-single niah-multikey; do
      "$FASA" gen-tasks -m gemma3-270m --kind $k --haystack "$HAY" --ctx 16384 --n 25 --seed 1 \
        -o gemma_16k_$k.jsonl
    done
    for k in passkey niah-single niah-multikey; do head -5 gemma_16k_$k.jsonl; done \
      > gemma_16k_3kinds_5each.jsonl
    check gemma_16k_3kinds_5each.jsonl 636549a686a5bb91c344e532cb1f5ff0fc21c51731bdc7adbc11dee56e312e9f "Gemma 16K, 3 kinds x 5"
    cat gemma_16k_passkey.jsonl gemma_16k_niah-single.jsonl gemma_16k_niah-multikey.jsonl \
      > gemma_16k_3kinds_25each.jsonl
    python3 "$ROOT/scripts/dev/interleave_tasks.py" gemma_16k_3kinds_25each.jsonl \
      gemma_16k_3kinds_25each_interleaved.jsonl
    check gemma_16k_3kinds_25each_interleaved.jsonl c0bb1b4804b0c58bc6c4ddbf67842c2e96158d1c7387b19b4ca1916f24a0a54c "Gemma 16K, 3 kinds x 25"
    ;;
  *) echo "unknown part $part (calib|tasks)" >&2; exit 2 ;;
  esac
done
exit $status
