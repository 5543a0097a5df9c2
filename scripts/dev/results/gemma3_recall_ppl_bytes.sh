#!/usr/bin/env bash
# FASA on a hybrid stack (docs/notebook/selection_quality/first_models.md): Gemma 3 270M,
# calibrated on Emma, evaluated on Persuasion at ctx 4096. The calibration behind the published tables was not kept (and the
# vectorized GELU has changed Gemma's numerics since); this makes a new one with the current
# build, so expect numbers close to, not equal to, the published ones.
#   scripts/dev/results/gemma3_recall_ppl_bytes.sh OUT_DIR [recall|ppl|bytes ...]   # FASA=path/to/fasa
set -euo pipefail
OUT=${1:?usage: $0 OUT_DIR [recall|ppl|bytes ...]}
shift
PARTS=${*:-recall ppl bytes}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
FASA=${FASA:-$ROOT/build/fasa}
TEXTS=${FASA_HOME:-$HOME/.cache/fasa}/texts   # bash scripts/get_texts.sh
mkdir -p "$OUT"
C=$OUT/gemma_calib.json
[ -f "$C" ] || "$FASA" calibrate -m gemma3-270m --text "$TEXTS/austen_emma.txt" -o "$C"
F=fasa:calib=$C
for part in $PARTS; do
  case $part in
  recall)
    "$FASA" eval recall -m gemma3-270m --text "$TEXTS/austen_persuasion.txt" --ctx 4096 --steps 16 \
      --policy "$F,budget=256" --compare "$F,budget=256,fcs=random" --compare "$F,budget=256,gqa=per-head" \
      --compare oracle:budget=256 --compare oracle:budget=256,gqa=per-head --json > "$OUT/recall_4096.json" ;;
  ppl)
    for chunks in 1 4; do
      "$FASA" eval ppl -m gemma3-270m --text "$TEXTS/austen_persuasion.txt" --ctx 4096 --decode 256 \
        --chunks $chunks --policy full --compare "$F,budget=256" --compare "$F,budget=512" \
        --compare oracle:budget=256 --compare oracle:budget=512 --json > "$OUT/ppl_4096_chunks$chunks.json"
    done
    "$FASA" eval ppl -m gemma3-270m --text "$TEXTS/austen_persuasion.txt" --ctx 4096 --decode 256 \
      --chunks 1 --policy full --compare "$F,budget=256,gqa=per-head" --compare "$F,budget=512,gqa=per-head" \
      --compare "$F,budget=256,fcs=random" --json > "$OUT/ppl_4096_chunks1_perhead.json" ;;
  bytes)
    "$FASA" bench -m gemma3-270m -p 0 -n 32 -d 4064 --policy full --compare "$F,budget=256" \
      --compare "$F,budget=256,variant=m,offload_dir=${OFFLOAD:-/var/tmp}" --json > "$OUT/bench_d4064.jsonl" ;;
  *) echo "unknown part $part (recall|ppl|bytes)" >&2; exit 2 ;;
  esac
done
