#!/usr/bin/env bash
# fasa against llama.cpp's own llama-bench (bench/compare_llamacpp.sh: repetitions alternate,
# llama-bench with flash attention off and on, fasa's kernel path in every row), in parts that
# each fit a session; a part whose table exists is skipped, so re-running resumes.
#   FASA=build/fasa scripts/dev/results/yardstick.sh OUT PART...
# Parts (pp512 and tg128 unless said; 2 threads; real prefill of the depth in both engines):
#   d0          SmolLM2, Gemma 3 270M, Qwen2.5-Coder-1.5B and the 8B shape at depth 0, 3 reps
#   d0_vnni     the four models, pp512 only, fasa with FASA_NO_AMX=1 (the VNNI path)
#   d4096       SmolLM2, Gemma 3 and Qwen at depth 4096, 3 reps
#   d4096_vnni  SmolLM2, Gemma 3 and Qwen at depth 4096, pp512 only, FASA_NO_AMX=1, 3 reps
#   d4096_8b    the 8B shape at depth 4096, 1 rep (each process prefills 4096 tokens of an 8B)
#   d4096_8b_vnni  the same, pp512 only, FASA_NO_AMX=1
#   d16384      Gemma 3 at depth 16384 (3 reps) and Qwen (1 rep)
#   d0_avx2     SmolLM2, Gemma 3 and Qwen at depth 0, 2 reps, both engines built for AVX2 (fasa
#               FASA_ISA=avx2; llama-bench FASA_LLAMACPP_ISA=avx2, its own build)
# Models come from `fasa pull` (M8: the 8B shape from `fasa synth`, see docs/BENCHMARKS.md).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
FASA=${FASA:-$ROOT/build/fasa}
OUT=$1; shift
MODELS=${FASA_HOME:-$HOME/.cache/fasa}/models
SMOL=$MODELS/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf
GEMMA=$MODELS/gemma3-270m/gemma-3-270m-q4_k_m.gguf
QWEN=$MODELS/qwen2.5-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
M8=${M8:-$MODELS/shaped/llama-3.1-8b-instruct-q4_k_m-random.gguf}
mkdir -p "$OUT"
cmp() {  # part, then the driver's arguments
  local part=$1; shift
  if [ -s "$OUT/$part.md" ]; then echo "yardstick: $part done already" >&2; return; fi
  "$ROOT/bench/compare_llamacpp.sh" --fasa "$FASA" -t 2 "$@" \
    --jsonl "$OUT/$part.jsonl.part" --md "$OUT/$part.md.part" 2> >(tee "$OUT/$part.log" >&2)
  mv "$OUT/$part.jsonl.part" "$OUT/$part.jsonl"
  mv "$OUT/$part.md.part" "$OUT/$part.md"
}
for part in "$@"; do
  case $part in
    d0) cmp d0 -m "$SMOL" -m "$GEMMA" -m "$QWEN" -m "$M8" -p 512 -n 128 -d 0 -r 3 ;;
    d0_vnni) FASA_NO_AMX=1 cmp d0_vnni -m "$SMOL" -m "$GEMMA" -m "$QWEN" -m "$M8" -p 512 -n 0 -d 0 -r 3 ;;
    d4096) cmp d4096 -m "$SMOL" -m "$GEMMA" -m "$QWEN" -p 512 -n 128 -d 4096 -r 3 ;;
    d4096_vnni)
      FASA_NO_AMX=1 cmp d4096_vnni -m "$SMOL" -m "$GEMMA" -m "$QWEN" -p 512 -n 0 -d 4096 -r 3 ;;
    d4096_8b) cmp d4096_8b -m "$M8" -p 512 -n 128 -d 4096 -r 1 ;;
    d4096_8b_vnni) FASA_NO_AMX=1 cmp d4096_8b_vnni -m "$M8" -p 512 -n 0 -d 4096 -r 1 ;;
    d0_avx2)
      FASA_ISA=avx2 FASA_LLAMACPP_ISA=avx2 \
        cmp d0_avx2 -m "$SMOL" -m "$GEMMA" -m "$QWEN" -p 512 -n 128 -d 0 -r 2 ;;
    d16384)
      cmp d16384_gemma -m "$GEMMA" -p 512 -n 128 -d 16384 -r 3
      cmp d16384_qwen -m "$QWEN" -p 512 -n 128 -d 16384 -r 1 ;;
    *) echo "yardstick: unknown part '$part'" >&2; exit 2 ;;
  esac
done
