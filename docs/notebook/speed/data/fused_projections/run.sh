#!/bin/sh
# Decode speed and parallel regions per token, before and after the fused projections
# (README.md). BEFORE and AFTER are two `fasa` binaries; builds alternate per repetition round
# so machine drift hits both alike. Output: one JSONL per model, each row tagged with its binary.
set -eu
BEFORE=${BEFORE:?path to the fasa binary before}
AFTER=${AFTER:?path to the fasa binary after}
OUT=${OUT:-.}
SHAPED=$HOME/.cache/fasa/models/shaped/llama-3.1-8b-instruct-q4_k_m-random.gguf
run() {  # name, then bench arguments
  name=$1; shift
  for round in 1 2 3; do
    for b in before after; do
      bin=$BEFORE; [ "$b" = after ] && bin=$AFTER
      "$bin" bench "$@" -t 2 --json | sed "s/^{/{\"binary\":\"$b\",\"round\":$round,/" \
        >> "$OUT/$name.jsonl"
    done
  done
}
PARTS=${PARTS:-"small 8b"}
uptime >> "$OUT/uptime.txt"
case " $PARTS " in *" small "*)
  run smollm2 -m smollm2-135m -p 0 -n 64 -r 3
  run gemma3 -m gemma3-270m -p 0 -n 64 -r 3
  uptime >> "$OUT/uptime.txt";;
esac
case " $PARTS " in *" 8b "*)
  run llama8b_shaped -m "$SHAPED" -p 0 -n 16 -r 2
  uptime >> "$OUT/uptime.txt";;
esac
