#!/usr/bin/env bash
# The default selector's own cost (docs/BENCHMARKS.md, "The default selector's own cost"): the
# issue's command, full against default `fasa`, `method=paper` and `mean_value=off` on SmolLM2 at
# depth 8160, budget 256, 2 threads, run by two builds in turn (BEFORE, AFTER, BEFORE, AFTER) so
# both see the same machine; each run's ratios are within that run.
#   selector_cost.sh OUT BEFORE_BIN AFTER_BIN CALIB [ROUNDS]
set -euo pipefail
OUT=$1 BEFORE=$2 AFTER=$3 C=$4 ROUNDS=${5:-2}
mkdir -p "$OUT"
sha256sum "$C" > "$OUT/calib.sha256"
for r in $(seq 1 "$ROUNDS"); do
  for which in before after; do
    bin=$BEFORE
    [ "$which" = after ] && bin=$AFTER
    "$bin" --version > "$OUT/${which}_version.txt" 2>&1 || true
    "$bin" bench -m smollm2-135m -p 0 -n 32 -d 8160 -r 3 --policy full \
      --compare "fasa:calib=$C,budget=256" --compare "fasa:calib=$C,budget=256,method=paper" \
      --compare "fasa:calib=$C,budget=256,mean_value=off" -o json > "$OUT/${which}_round$r.json" \
      2> "$OUT/${which}_round$r.log"
  done
done
