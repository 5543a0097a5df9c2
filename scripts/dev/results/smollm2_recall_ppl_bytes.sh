#!/usr/bin/env bash
# FASA's first measurements on SmolLM2-135M (docs/notebook/selection_quality/first_models.md),
# calibrated on Emma, evaluated on Persuasion. Usage: scripts/dev/results/smollm2_recall_ppl_bytes.sh OUT_DIR [recall|ppl|bench ...]
# (FASA binary: $FASA, default ./build/fasa; offload dir for FASA-M: $OFFLOAD, default /var/tmp)
set -euo pipefail
OUT=$1; shift
PARTS=${*:-recall ppl bench}
FASA=${FASA:-./build/fasa}
OFFLOAD=${OFFLOAD:-/var/tmp}
TEXTS=${FASA_HOME:-$HOME/.cache/fasa}/texts  # bash scripts/get_texts.sh
mkdir -p "$OUT"
ROPE=$OUT/calib_emma_rope.json ADJ=$OUT/calib_emma_adjacent.json
[ -f "$ROPE" ] || "$FASA" calibrate -m smollm2-135m --text $TEXTS/austen_emma.txt -o "$ROPE"
[ -f "$ADJ" ] || "$FASA" calibrate -m smollm2-135m --text $TEXTS/austen_emma.txt -o "$ADJ" \
  --fc-layout adjacent
for part in $PARTS; do
  case $part in
  recall)
    # 8176 + 16 steps: the last step sees 8192 tokens, SmolLM2's trained context.
    for ctx in ${CTXS:-4096 8176}; do
      F="fasa:calib=$ROPE,budget=256"
      "$FASA" eval recall -m smollm2-135m --text $TEXTS/austen_persuasion.txt --ctx $ctx \
        --steps 16 --policy "$F" \
        --compare "$F,fcs=random" --compare "$F,fcs=high" --compare "$F,fcs=low" \
        --compare "fasa:calib=$ADJ,budget=256" --compare "$F,gqa=per-head" \
        --compare "oracle:budget=256" --compare "oracle:budget=256,gqa=per-head" \
        > "$OUT/recall_$ctx.md"
      cat "$OUT/recall_$ctx.md"
    done ;;
  ppl)
    "$FASA" eval ppl -m smollm2-135m --text $TEXTS/austen_persuasion.txt --ctx 4096 --decode 256 \
      --chunks "${CHUNKS:-8}" --policy full \
      --compare oracle:budget=0.05 --compare oracle:budget=0.1 --compare oracle:budget=0.2 \
      --compare "fasa:calib=$ROPE,budget=0.05" --compare "fasa:calib=$ROPE,budget=0.1" \
      --compare "fasa:calib=$ROPE,budget=0.2" > "$OUT/ppl.md"
    cat "$OUT/ppl.md" ;;
  bench)
    # Depth 8064: the 128 generated tokens end at 8192, SmolLM2's trained context.
    "$FASA" bench -m smollm2-135m -p 0 -n 128 -d 8064 -r "${REPS:-1}" --policy full \
      --compare "fasa:calib=$ROPE,budget=256" \
      --compare "fasa:calib=$ROPE,budget=256,variant=m,offload_dir=$OFFLOAD" > "$OUT/bench.md"
    cat "$OUT/bench.md" ;;
  *) echo "unknown part $part" >&2; exit 1 ;;
  esac
done
