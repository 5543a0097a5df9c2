#!/usr/bin/env bash
# Reproduces the SmolLM2 kernel measurements of docs/notebook/speed/against_llamacpp.md (Q4_1,
# 2 threads). Run on a quiet machine. Usage: scripts/dev/results/smollm2_kernels_vs_llamacpp.sh OUT_DIR [fasa|llamacpp|isa ...]
#   fasa:     dense vs FASA-C decode at depths 1024, 4096, 8064 (budget 256, default n_tip 8 of
#             32 FCs = 25%), with the bandwidth roofline
#   llamacpp: bench/compare_llamacpp.sh, pp512 and tg128 at depths 0, 1024, 4096
#   isa:      the same engine with each kernel instruction set (FASA_ISA)
# CALIB: a calibration of SmolLM2 on Emma (fasa calibrate -m smollm2-135m --text
# ~/.cache/fasa/texts/austen_emma.txt -o CALIB); made here when missing.
set -euo pipefail
OUT=${1:?usage: $0 OUT_DIR [fasa|llamacpp|isa ...]}
shift
PARTS=${*:-fasa llamacpp isa}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
FASA=${FASA:-$ROOT/build/fasa}
MODEL=$HOME/.cache/fasa/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf
CALIB=${CALIB:-$OUT/calib_emma_rope.json}
mkdir -p "$OUT"
for part in $PARTS; do
  case $part in
  fasa)
    [ -f "$CALIB" ] || "$FASA" calibrate -m smollm2-135m --text "${FASA_HOME:-$HOME/.cache/fasa}/texts/austen_emma.txt" -o "$CALIB"
    "$FASA" bench -m smollm2-135m -p 0 -n 64 -d 1024,4096,8064 -r "${REPS:-2}" -t 2 --bandwidth \
      --policy full --compare "fasa:calib=$CALIB,budget=256" | tee "$OUT/fasa_decode.md" ;;
  llamacpp)
    "$ROOT/bench/compare_llamacpp.sh" --fasa "$FASA" -m "$MODEL" -t 2 -d 0,1024,4096 \
      | tee "$OUT/llamacpp.md" ;;
  isa)
    for isa in scalar avx2 avx512; do
      echo "## FASA_ISA=$isa"
      FASA_ISA=$isa "$FASA" bench -m smollm2-135m -p 64 -n 16 -r 2 -t 2
    done | tee "$OUT/isa.md" ;;
  *) echo "unknown part $part" >&2; exit 1 ;;
  esac
done
