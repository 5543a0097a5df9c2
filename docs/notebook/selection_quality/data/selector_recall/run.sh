#!/usr/bin/env bash
# Issue 23 item 2: FASA selector variants, selection quality at equal budgets (SmolLM2).
# Held-in texts only (docs/EVALUATION.md "Held-in and held-out texts"): calibrated on Emma,
# measured on Pride and Prejudice. Writes calib_emma.json, calibrate.log and recall_B*.json here.
#   bash docs/notebook/selection_quality/data/selector_recall/run.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")"
FASA=${FASA:-../../../../../build/fasa}
TEXTS=${FASA_HOME:-$HOME/.cache/fasa}/texts
STEPS=${1:-8}
if [ ! -f calib_emma.json ]; then
  { time nice "$FASA" calibrate -m smollm2-135m --text "$TEXTS/austen_emma.txt" \
      -o calib_emma.json; } 2> calibrate.log
fi
C=calib_emma.json
for B in 64 256; do
  nice "$FASA" eval recall -m smollm2-135m --text "$TEXTS/austen_pride_and_prejudice.txt" \
    --ctx 4096 --steps "$STEPS" --json \
    --policy "fasa:calib=$C,budget=$B" \
    --compare "fasa:calib=$C,budget=$B,fcs=mass" \
    --compare "fasa:calib=$C,budget=$B,fcs=compound" \
    --compare "fasa:calib=$C,budget=$B,fc_sets=group" \
    --compare "fasa:calib=$C,budget=$B,fcs=compound,fc_sets=group" \
    --compare "fasa:calib=$C,budget=$B,mean_value=on" \
    --compare "fasa:calib=$C,budget=$B,layer_budget=calibrated" \
    > "recall_B$B.json"
done
# One table: policy, recall, attention mass, KL, KV bytes read per token (and of dense).
python3 - <<'PY'
import json
for B in (64, 256):
    rs = json.load(open(f"recall_B{B}.json"))["results"]
    print(f"\nbudget {B}\n| variant | recall | mass | KL nats | KV bytes/token | of dense |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rs:
        v = r["policy"].split(f"budget={B}")[1].lstrip(",") or "fasa (CA, default)"
        print(f"| {v} | {r['recall']:.4f} | {r['attention_mass']:.4f} | {r['kl']:.5f} | "
              f"{r['kv_bytes_read_per_token']:.0f} | "
              f"{r['kv_bytes_read_per_token'] / r['dense_kv_bytes_read_per_token']:.3f} |")
PY
