#!/usr/bin/env bash
# The default selector's own cost (docs/BENCHMARKS.md, "The default selector's own cost"): the
# issue's command, full against default `fasa`, `method=paper` and `mean_value=off` on SmolLM2 at
# depth 8160, budget 256, 2 threads, run by two builds in turn (BEFORE, AFTER, BEFORE, AFTER) so
# both see the same machine; each run's ratios are within that run.
#   [FILL=prefill|synthetic] [REPS=3] [THREADS=2] selector_cost.sh OUT BEFORE_BIN AFTER_BIN CALIB [ROUNDS]
# FILL=synthetic fills the depth with random K/V rows (seconds instead of minutes per fill; the
# selector's work per token is the same), so many more repetitions fit; THREADS=1 times the work
# alone, without a second thread's waits.
set -euo pipefail
OUT=$1 BEFORE=$2 AFTER=$3 C=$4 ROUNDS=${5:-2} FILL=${FILL:-prefill} REPS=${REPS:-3} THREADS=${THREADS:-2}
mkdir -p "$OUT"
sha256sum "$C" > "$OUT/calib.sha256"
for r in $(seq 1 "$ROUNDS"); do
  for which in before after; do
    bin=$BEFORE
    [ "$which" = after ] && bin=$AFTER
    "$bin" --version > "$OUT/${which}_version.txt" 2>&1 || true
    "$bin" bench -m smollm2-135m -p 0 -n 32 -d 8160 -t "$THREADS" -r "$REPS" --depth-fill "$FILL" --policy full \
      --compare "fasa:calib=$C,budget=256" --compare "fasa:calib=$C,budget=256,method=paper" \
      --compare "fasa:calib=$C,budget=256,mean_value=off" -o json > "$OUT/${which}_round$r.json" \
      2> "$OUT/${which}_round$r.log"
  done
done
