#!/usr/bin/env bash
# Held-out task sweeps under both protocols (docs/RESULTS.md, "Quality where FASA pays"): the
# whole prompt prefilled densely, and the question decoded under each policy
# (--question-under-policy). Tasks of every kind are cut from Mansfield Park (held-out: no
# default was chosen on it) with a seed of this split's own, interleaved so that any finished
# shard holds every kind; each shard is a unit of work that can be stopped, resumed (RESUME=1)
# and committed on its own, then `fasa eval merge` joins the shards of each protocol.
#   FASA=build/fasa question_protocol_sweep.sh OUT MODEL CTX N_PER_KIND SEED CALIB SHARD [PROTOCOLS]
# SHARD: I/N (tasks with index % N == I); PROTOCOLS: "question dense" (default) or one of them.
# KINDS (env) overrides the kinds; BUDGETS (env) the budgets (default 64,256,1024,2048).
# e.g. ... OUT qwen2.5-coder-1.5b 16384 10 4116 CALIB.json 0/10
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 M=$2 CTX=$3 N=$4 SEED=$5 C=$6 SHARD=$7
PROTOCOLS=${8:-question dense}
KINDS=${KINDS:-"passkey niah-single niah-multikey niah-multivalue niah-multiquery variable-tracking
  common-words freq-words qa niah-multivalue-8 niah-multiquery-8 variable-tracking-10 json-records
  two-fact"}
T=${FASA_HOME:-$HOME/.cache/fasa}/texts
haystack=$T/austen_mansfield_park.txt
mkdir -p "$OUT/tasks"
tasks="$OUT/tasks/${M}_${CTX}_mansfield_seed${SEED}_${N}each.jsonl"
if [ ! -s "$tasks" ]; then
  mkdir -p "$OUT/tasks/kinds"
  for k in $KINDS; do
    "$FASA" gen-tasks -m "$M" --kind "$k" --haystack "$haystack" --ctx "$CTX" --n "$N" \
      --seed "$SEED" -o "$OUT/tasks/kinds/$k.jsonl"
  done
  cat "$OUT"/tasks/kinds/*.jsonl > "$OUT/tasks/kinds/all.jsonl"
  python3 "$(dirname "$0")/../interleave_tasks.py" "$OUT/tasks/kinds/all.jsonl" "$tasks"
  rm -r "$OUT/tasks/kinds"
fi
policies=(--policies full,oracle:gqa=per-head,fasa,fasa:calib=online,double-sparsity,sparq,quest,snapkv,streaming
          --policy fasa:mean_value=off --policy fasa:method=paper)
i=${SHARD%/*} n=${SHARD#*/}
for p in $PROTOCOLS; do
  flag=()
  [ "$p" = question ] && flag=(--question-under-policy)
  dir="$OUT/$p/shard_${i}_of_$n"
  if [ -f "$dir/shard.json" ]; then echo "done: $dir"; continue; fi
  resume=()
  [ -f "$dir/checkpoint.jsonl" ] && resume=(--resume)
  "$FASA" eval sweep -m "$M" --tasks "$tasks" -j "${JOBS:-1}" -t "${THREADS:-2}" --calib "$C" \
    "${policies[@]}" --budgets "${BUDGETS:-64,256,1024,2048}" "${flag[@]}" --shard "$SHARD" \
    -o "$dir" "${resume[@]}"
done
