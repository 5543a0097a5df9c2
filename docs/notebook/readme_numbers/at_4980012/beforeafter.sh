#!/usr/bin/env bash
# Before/after speed of the design step: the same fasa bench tests with the build before (A) and
# after (B), alternating A B A B, 3 rounds; JSON Lines per (binary, round).
#   beforeafter.sh OUT BIN_BEFORE BIN_AFTER
set -euo pipefail
OUT=$1 A=$2 B=$3
M=${FASA_HOME:-$HOME/.cache/fasa}/models
mkdir -p "$OUT"
for r in 1 2 3; do
  for tag in before after; do
    bin=$A; [ $tag = after ] && bin=$B
    "$bin" --version > "$OUT/${tag}_version.txt"
    "$bin" bench -m "$M/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf" -p 512 -n 128 -r 1 -t 2 --json >> "$OUT/${tag}.jsonl"
    "$bin" bench -m "$M/qwen2.5-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" -p 512 -n 64 -r 1 -t 2 --json >> "$OUT/${tag}.jsonl"
    "$bin" bench -m "$M/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf" -p 0 -n 32 -d 4096 -r 1 -t 2 --policy full --compare fasa:budget=256 --compare streaming:budget=256 --json >> "$OUT/${tag}.jsonl" 2>>"$OUT/${tag}.stderr"
  done
done
