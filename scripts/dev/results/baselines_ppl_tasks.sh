#!/usr/bin/env bash
# FASA against the baselines (docs/notebook/selection_quality/against_baselines.md and
# docs/notebook/tasks/baselines_4k_16k.md), from the committed calibrations
# (docs/notebook/selection_quality/data/baselines_inputs/) and the task files
# scripts/dev/results/baselines_inputs.sh regenerates and checks. Each part is one table; the sweeps take hours on 2 cores (the times
# are in those pages).
#   scripts/dev/results/baselines_ppl_tasks.sh OUT_DIR [ppl|tasks3|tasks6|gemma16k|calib-length|qwen|fcs-mass ...]
set -euo pipefail
OUT=${1:?usage: $0 OUT_DIR [ppl|tasks3|tasks6|gemma16k|calib-length|qwen|fcs-mass ...]}
shift
PARTS=${*:-ppl tasks3 tasks6 gemma16k}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
FASA=${FASA:-$ROOT/build/fasa}
TEXTS=${FASA_HOME:-$HOME/.cache/fasa}/texts   # bash scripts/get_texts.sh
IN=$ROOT/docs/notebook/selection_quality/data/baselines_inputs
S=$IN/emma.json G=$IN/calib_gemma_emma.json
PERS=$TEXTS/austen_persuasion.txt
mkdir -p "$OUT"
tasks() {  # the task files, regenerated once and checked against their recorded sha256
  [ -f "$OUT/inputs/gemma_16k_3kinds_25each_interleaved.jsonl" ] ||
    "$ROOT/scripts/dev/results/baselines_inputs.sh" "$OUT/inputs" tasks
}
ALL=full,oracle,fasa,double-sparsity,sparq,quest,streaming,snapkv,pyramidkv,h2o
for part in $PARTS; do
  case $part in
  ppl)   # perplexity, the paper's protocol, ctx 2048, 5/10/20 %
    A=$OUT/emma_adjacent.json   # the layout ablation's calibration (not kept; made here)
    [ -f "$A" ] || "$FASA" calibrate -m smollm2-135m --text "$TEXTS/austen_emma.txt" --fc-layout adjacent -t 1 -o "$A"
    for B in 0.05 0.1 0.2; do
      "$FASA" eval ppl -m smollm2-135m --text "$PERS" --ctx 2048 --decode 256 --chunks 2 -t 1 \
        --policy full --json --compare oracle:budget=$B --compare fasa:calib=$S,budget=$B \
        --compare fasa:calib=$A,budget=$B --compare double-sparsity:calib=$S,budget=$B --compare sparq:budget=$B \
        --compare quest:budget=$B --compare streaming:budget=$B --compare snapkv:budget=$B \
        --compare pyramidkv:budget=$B --compare h2o:budget=$B > "$OUT/ppl_$B.json"
    done ;;
  tasks3)   # SmolLM2 4K, passkey + niah-single + niah-multikey, 25 each (published as two sweeps,
            # decode-time and prefill-aware policies; one sweep now serves both from one prefill)
    tasks
    "$FASA" eval sweep -m smollm2-135m --tasks "$OUT/inputs/smollm2_4k_3kinds_25each.jsonl" -j 2 \
      --calib "$S" --policies $ALL --budgets 64,128,256,512,1024 -o "$OUT/smollm2_4k_3kinds_25" ;;
  tasks6)   # SmolLM2 4K, the other six kinds, 25 each
    tasks
    "$FASA" eval sweep -m smollm2-135m --tasks "$OUT/inputs/smollm2_4k_6kinds_25each_interleaved.jsonl" \
      -j 2 -t 1 --calib "$S" --policies $ALL --budgets 64,128,256,512,1024 -o "$OUT/smollm2_4k_6kinds_25"
    python3 "$ROOT/scripts/dev/partial_credit.py" "$OUT/smollm2_4k_6kinds_25/results.json" \
      "$OUT/inputs/smollm2_4k_6kinds_25each_interleaved.jsonl" > "$OUT/smollm2_4k_6kinds_25/partial_credit.md" ;;
  gemma16k)   # Gemma 3 270M 16K, three kinds, 25 each
    tasks
    "$FASA" eval sweep -m gemma3-270m --tasks "$OUT/inputs/gemma_16k_3kinds_25each_interleaved.jsonl" \
      -j 2 -t 1 --calib "$G" --policies $ALL --budgets 64,128,256,512,1024 -o "$OUT/gemma_16k_3kinds_25" ;;
  calib-length)   # Gemma at 16K: default calibration against 4 x 8192-token windows
    G8=$OUT/calib_gemma_emma_8k.json
    [ -f "$G8" ] || "$FASA" calibrate -m gemma3-270m --text "$TEXTS/austen_emma.txt" --tokens 8192 -t 1 -o "$G8"
    "$FASA" eval recall -m gemma3-270m --text "$PERS" --ctx 16384 --steps 16 -t 1 \
      --policy fasa:calib=$G,budget=256 --compare fasa:calib=$G8,budget=256 \
      --compare double-sparsity:calib=$G,budget=256 --compare double-sparsity:calib=$G8,budget=256 \
      --compare oracle:budget=256 --compare fasa:calib=$G,budget=64 --compare fasa:calib=$G8,budget=64 \
      --json > "$OUT/recall_gemma_16k_calib_length.json" ;;
  qwen)   # 128-dim heads: Qwen2.5-Coder-1.5B at 4K (fasa pull qwen2.5-coder-1.5b first)
    Q=$OUT/calib_qwen_emma.json
    [ -f "$Q" ] || "$FASA" calibrate -m qwen2.5-coder-1.5b --text "$TEXTS/austen_emma.txt" -o "$Q" -t 1
    "$FASA" eval recall -m qwen2.5-coder-1.5b --text "$PERS" --ctx 4096 --steps 16 -t 1 \
      --policy fasa:calib=$Q,budget=256 --compare double-sparsity:calib=$Q,budget=256 \
      --compare oracle:budget=256 --compare sparq:budget=256 --compare fasa:calib=$Q,budget=64 \
      --compare double-sparsity:calib=$Q,budget=64 --compare oracle:budget=64 \
      --json > "$OUT/recall_qwen25coder_4k.json" ;;
  fcs-mass)   # FCs ranked by |q.k| mass: recall on SmolLM2 4K and Gemma 16K, SmolLM2 perplexity
    for m in "smollm2-135m $S 4096 smollm2_4k" "gemma3-270m $G 16384 gemma_16k"; do
      set -- $m
      "$FASA" eval recall -m $1 --text "$PERS" --ctx $3 --steps 16 -t 1 \
        --policy fasa:calib=$2,budget=256 --compare fasa:calib=$2,budget=256,fcs=mass \
        --compare double-sparsity:calib=$2,budget=256 --compare oracle:budget=256 \
        --compare fasa:calib=$2,budget=64 --compare fasa:calib=$2,budget=64,fcs=mass \
        --compare double-sparsity:calib=$2,budget=64 --compare oracle:budget=64 \
        --json > "$OUT/recall_$4.json"
    done
    for B in 0.05 0.1 0.2; do
      "$FASA" eval ppl -m smollm2-135m --text "$PERS" --ctx 2048 --decode 256 --chunks 2 -t 1 \
        --policy full --json --compare fasa:calib=$S,budget=$B --compare fasa:calib=$S,budget=$B,fcs=mass \
        --compare double-sparsity:calib=$S,budget=$B > "$OUT/ppl_smollm2_$B.json"
    done ;;
  *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done
