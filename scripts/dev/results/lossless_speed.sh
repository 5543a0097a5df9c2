#!/usr/bin/env bash
# Lossless decoding speed (docs/notebook/lossless/README.md): dense decoding against FASA-C
# drafting K tokens verified by full attention, on real text (Persuasion), Gemma 3 270M at depth 16384 and
# Qwen2.5-Coder-1.5B at depth 8192; and, in a second run, plain FASA-C decoding (the drafts'
# speed) against dense. Calibrations: `fasa calibrate -m M --text austen_emma.txt -t 1` (held-in).
#   FASA=build/fasa scripts/dev/results/lossless_speed.sh OUT CALIB_DIR [MODELS]
# The committed results ran before the default selector changed (2026-12-02): `fasa` was the
# paper's selector, which the version-3 calibrations serve; a build after the change needs
# `fasa:method=paper,...` in $F for the same runs (the new default refuses version-3 files).
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1
CAL=$2
MODELS=${3:-"gemma3-270m:16384 qwen2.5-coder-1.5b:8192"}
T=${FASA_HOME:-$HOME/.cache/fasa}/texts/austen_persuasion.txt
mkdir -p "$OUT"
for md in $MODELS; do
  m=${md%%:*} d=${md##*:}
  C=$CAL/calib_${m}_emma.json
  F="fasa:calib=$C,budget=256"
  "$FASA" bench -m "$m" -p 0 -n 64 -d "$d" -r 1 --text "$T" --policy full --compare "$F" \
    --lossless 4 --json > "$OUT/${m}_d${d}_lossless4.jsonl"
  "$FASA" bench -m "$m" -p 0 -n 64 -d "$d" -r 1 --text "$T" --policy full --compare "$F" \
    --lossless auto --json > "$OUT/${m}_d${d}_lossless_auto.jsonl"
  "$FASA" bench -m "$m" -p 0 -n 64 -d "$d" -r 1 --text "$T" --policy full --compare "$F" \
    --json > "$OUT/${m}_d${d}_plain.jsonl"
done
