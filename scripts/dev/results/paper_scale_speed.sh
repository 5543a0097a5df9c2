#!/usr/bin/env bash
# Reproduces docs/notebook/speed/paper_scale.md's measurements (2 threads). Run on a quiet machine.
# Usage: scripts/dev/results/paper_scale_speed.sh OUT_DIR [threads|roofline|policies|llamacpp|llamacpp8b ...]
#   threads:    thread counters (dispatches and wait share per token) of this build and of
#               FASA_BEFORE (a build with the OpenMP teams, e.g. commit 379e340), alone and with
#               two busy processes on the two cores
#   roofline:   8B-shaped decode tg128 at depth 0 with the bandwidth roofline
#   policies:   8B shape, depths 1024, 16384, 32768 (synthetic fill), full / FASA-C / FASA-M
#               (budget 1024), f16 and q8_0 KV, with the roofline
#   llamacpp:   bench/compare_llamacpp.sh (llama-bench, fa 0/1) on SmolLM2, Gemma 3 270M and
#               Qwen2.5-Coder-1.5B: pp512 and tg128 at depths 0 and 4096
#   llamacpp8b: the same on the 8B shape at depth 0 (pp512, tg64; a real 16K prefill of it takes
#               longer than a working day here)
#   d0:         all four models at depth 0 (pp512, tg64), 2 repetitions alternating
#   norepack:   8B-shaped tg128 at depth 0 with FASA_NO_REPACK=1 and without, alternating
#   final:      d0 again (fasa now warms up untimed), then SmolLM2, Gemma 3 and Qwen at depth 4096
#   d16k:       llama-bench comparison at depth 16384: Gemma 3 (pp512, tg128, 2 repetitions) and
#               Qwen (tg64, 1 repetition: each repetition prefills 16K tokens three times).
#               SmolLM2's trained context is 8192, the 8B shape's 16K prefill takes too long here
#   kvq8tasks:  task scores with q8_0 KV against f16 KV: SmolLM2, the first 10 prompts of
#               passkey, niah-single and niah-multikey at 4K (the kinds full attention scores on
#               at all: docs/notebook/tasks/baselines_4k_16k.md) from Pride and Prejudice,
#               full and FASA (budget 256, the baselines' calibration from Emma), -j 2
#   attn:       attention with register-held accumulators against FASA_BEFORE (ae69543): SmolLM2
#               pp512 + tg64 and Qwen pp512 + tg32 at depth 4096, two rounds alternating
#   smol4k:     llama-bench comparison of SmolLM2 at depth 4096 again (pp512, tg128, 2 repetitions)
#   team:       decode as one team per step against FASA_BEFORE (a build of ae69543: a region per
#               parallel step): SmolLM2, Gemma 3 and the 8B shape, tg64 / tg16, quiet and with two
#               busy processes on the two cores, rounds ROUNDS (default "1 2") alternating the
#               binaries
# M8: the 8B-shaped file (fasa synth --shape llama-3.1-8b-instruct-q4_k_m -o M8); CALIB8: its
# calibration (docs/notebook/long_context_speed/README.md, "The Llama-3.1-8B shape at depth 32K",
# shows both commands).
set -euo pipefail
OUT=${1:?usage: $0 OUT_DIR [threads|roofline|policies|llamacpp|llamacpp8b ...]}
shift
PARTS=${*:-threads roofline policies llamacpp llamacpp8b}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
FASA=${FASA:-$ROOT/build/fasa}
MODELS=${FASA_HOME:-$HOME/.cache/fasa}/models
M8=${M8:-$MODELS/shaped/llama-3.1-8b-instruct-q4_k_m-random.gguf}
CALIB8=${CALIB8:-$MODELS/shaped/llama-3.1-8b-random.calib.json}
SMOL=$MODELS/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf
GEMMA=$MODELS/gemma3-270m/gemma-3-270m-q4_k_m.gguf
QWEN=$MODELS/qwen2.5-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
mkdir -p "$OUT"
busy() { for _ in 1 2; do (while :; do :; done) & done; }
for part in $PARTS; do
  uptime | tee "$OUT/$part.uptime"
  case $part in
  threads)
    BEFORE=${FASA_BEFORE:?set FASA_BEFORE to a build of 379e340 (OpenMP teams)}
    for m in "$SMOL" "$M8"; do
      for load in quiet busy; do
        for bin in "$BEFORE" "$FASA"; do
          pids=""
          if [ $load = busy ]; then busy; pids=$(jobs -p); fi
          n=64; [ "$m" = "$M8" ] && n=16
          "$bin" bench -m "$m" -p 0 -n $n -r 2 -t 2 --json |
            sed "s/^{/{\"binary\":\"$(basename "$bin")\",\"load\":\"$load\",/" >> "$OUT/threads.jsonl"
          [ -z "$pids" ] || kill $pids
        done
      done
    done ;;
  d16k)
    "$ROOT/bench/compare_llamacpp.sh" --fasa "$FASA" -m "$GEMMA" -t 2 -p 512 -n 128 -d 16384 -r 2 \
      --md "$OUT/d16k_gemma.md" --jsonl "$OUT/d16k_gemma.jsonl"
    "$ROOT/bench/compare_llamacpp.sh" --fasa "$FASA" -m "$QWEN" -t 2 -p 0 -n 64 -d 16384 -r 1 \
      --md "$OUT/d16k_qwen.md" --jsonl "$OUT/d16k_qwen.jsonl" ;;
  attn)
    BEFORE=${FASA_BEFORE:?set FASA_BEFORE to a build of ae69543}
    for round in 1 2; do
      for bin in "$BEFORE" "$FASA"; do
        label=new; [ "$bin" = "$BEFORE" ] && label=before
        "$bin" bench -m "$SMOL" -p 512 -n 64 -d 4096 -r 1 -t 2 --json |
          sed "s/^{/{\"binary\":\"$label\",\"round\":$round,/" >> "$OUT/attn.jsonl"
        "$bin" bench -m "$QWEN" -p 512 -n 32 -d 4096 -r 1 -t 2 --json |
          sed "s/^{/{\"binary\":\"$label\",\"round\":$round,/" >> "$OUT/attn.jsonl"
      done
    done ;;
  smol4k)
    "$ROOT/bench/compare_llamacpp.sh" --fasa "$FASA" -m "$SMOL" -t 2 -p 512 -n 128 -d 4096 -r 2 \
      --md "$OUT/smol4k.md" --jsonl "$OUT/smol4k.jsonl" ;;
  kvq8tasks)
    TXT=${FASA_HOME:-$HOME/.cache/fasa}/texts/austen_pride_and_prejudice.txt
    EMMA=$ROOT/docs/notebook/selection_quality/data/baselines_inputs/emma.json
    for k in passkey niah-single niah-multikey; do
      "$FASA" gen-tasks -m "$SMOL" --kind $k --haystack "$TXT" --ctx 4096 --n 25 --seed 1 \
        -o "$OUT/smollm2_4k_$k.jsonl" >&2
      head -10 "$OUT/smollm2_4k_$k.jsonl"
    done > "$OUT/smollm2_4k_10each.jsonl"
    rm "$OUT/smollm2_4k_passkey.jsonl" "$OUT/smollm2_4k_niah-single.jsonl" \
      "$OUT/smollm2_4k_niah-multikey.jsonl"
    for kv in f16 q8_0; do
      start=$SECONDS
      "$FASA" eval tasks -m "$SMOL" --tasks "$OUT/smollm2_4k_10each.jsonl" -j 2 \
        --kv-type $kv --policy full --compare "fasa:calib=$EMMA,budget=256" --json \
        > "$OUT/tasks_$kv.json" 2> "$OUT/tasks_$kv.log"
      echo "wall seconds: $((SECONDS - start))" >> "$OUT/tasks_$kv.log"
    done ;;
  team)
    BEFORE=${FASA_BEFORE:?set FASA_BEFORE to a build of ae69543 (a region per parallel step)}
    for round in ${ROUNDS:-1 2}; do
      for m in "$SMOL" "$GEMMA" "$M8"; do
        for load in quiet busy; do
          for bin in "$BEFORE" "$FASA"; do
            pids=""
            if [ $load = busy ]; then busy; pids=$(jobs -p); fi
            n=64; [ "$m" = "$M8" ] && n=16
            label=team; [ "$bin" = "$BEFORE" ] && label=regions
            "$bin" bench -m "$m" -p 0 -n $n -r 2 -t 2 --json |
              sed "s/^{/{\"binary\":\"$label\",\"load\":\"$load\",\"round\":$round,/" \
                >> "$OUT/team.jsonl"
            [ -z "$pids" ] || kill $pids
          done
        done
      done
    done ;;
  roofline)
    "$FASA" bench -m "$M8" -p 0 -n 128 -r 2 -t 2 --bandwidth --json | tee "$OUT/roofline.jsonl" ;;
  policies)
    for kv in f16 q8_0; do
      "$FASA" bench -m "$M8" -p 0 -n 16 -d 1024,16384,32768 -r 2 -t 2 --kv-type $kv \
        --depth-fill synthetic --bandwidth --policy full,fasa --budget 1024 --calib "$CALIB8" \
        --compare "fasa:calib=$CALIB8,budget=1024,variant=m,offload_dir=${OFFLOAD_DIR:-/var/tmp}" \
        --json | tee "$OUT/policies_$kv.jsonl"
    done ;;
  llamacpp)
    "$ROOT/bench/compare_llamacpp.sh" --fasa "$FASA" -m "$SMOL" -m "$GEMMA" -m "$QWEN" -t 2 \
      -p 512 -n 128 -d 0,4096 -r 2 --md "$OUT/llamacpp.md" --jsonl "$OUT/llamacpp.jsonl" ;;
  llamacpp8b)
    "$ROOT/bench/compare_llamacpp.sh" --fasa "$FASA" -m "$M8" -t 2 -p 512 -n 64 -d 0 -r 1 \
      --md "$OUT/llamacpp8b.md" --jsonl "$OUT/llamacpp8b.jsonl" ;;
  d0)
    "$ROOT/bench/compare_llamacpp.sh" --fasa "$FASA" -m "$SMOL" -m "$GEMMA" -m "$QWEN" -m "$M8" \
      -t 2 -p 512 -n 64 -d 0 -r 2 --md "$OUT/d0.md" --jsonl "$OUT/d0.jsonl" ;;
  final)
    "$ROOT/bench/compare_llamacpp.sh" --fasa "$FASA" -m "$SMOL" -m "$GEMMA" -m "$QWEN" -m "$M8" \
      -t 2 -p 512 -n 64 -d 0 -r 2 --md "$OUT/final_d0.md" --jsonl "$OUT/final_d0.jsonl"
    "$ROOT/bench/compare_llamacpp.sh" --fasa "$FASA" -m "$SMOL" -m "$GEMMA" -m "$QWEN" \
      -t 2 -p 512 -n 64 -d 4096 -r 2 --md "$OUT/final_d4096.md" --jsonl "$OUT/final_d4096.jsonl" ;;
  norepack)
    for rep in 1 2; do
      for e in 1 0; do
        FASA_NO_REPACK=$e "$FASA" bench -m "$M8" -p 0 -n 128 -r 1 -t 2 --bandwidth --json |
          tee -a "$OUT/norepack.jsonl"
      done
    done ;;
  *) echo "unknown part $part" >&2; exit 1 ;;
  esac
  uptime | tee -a "$OUT/$part.uptime"
done
