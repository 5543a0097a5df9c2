#!/usr/bin/env bash
# A second held-in text (Sense and Sensibility) for the same variants, plus a sink + recent
# floor and compound + group + mean_value together. Uses calib_emma.json from run.sh.
#   bash docs/notebook/selection_quality/data/selector_recall/run2.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")"
FASA=${FASA:-../../../../../build/fasa}
TEXTS=${FASA_HOME:-$HOME/.cache/fasa}/texts
STEPS=${1:-8}
C=calib_emma.json
for B in 64 256; do
  nice "$FASA" eval recall -m smollm2-135m --text "$TEXTS/austen_sense_and_sensibility.txt" \
    --ctx 4096 --steps "$STEPS" --json \
    --policy "fasa:calib=$C,budget=$B" \
    --compare "fasa:calib=$C,budget=$B,fcs=mass" \
    --compare "fasa:calib=$C,budget=$B,fcs=compound" \
    --compare "fasa:calib=$C,budget=$B,fc_sets=group" \
    --compare "fasa:calib=$C,budget=$B,fcs=compound,fc_sets=group" \
    --compare "fasa:calib=$C,budget=$B,mean_value=on" \
    --compare "fasa:calib=$C,budget=$B,layer_budget=calibrated" \
    --compare "fasa:calib=$C,budget=$B,sink=4,recent=16" \
    --compare "fasa:calib=$C,budget=$B,fcs=compound,fc_sets=group,mean_value=on" \
    > "recall2_B$B.json"
done
python3 - <<'PY'
import json
for B in (64, 256):
    rs = json.load(open(f"recall2_B{B}.json"))["results"]
    print(f"\nbudget {B}\n| variant | recall | mass | KL nats | KV bytes/token | of dense |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rs:
        v = r["policy"].split(f"budget={B}")[1].lstrip(",") or "fasa (CA, default)"
        print(f"| {v} | {r['recall']:.4f} | {r['attention_mass']:.4f} | {r['kl']:.5f} | "
              f"{r['kv_bytes_read_per_token']:.0f} | "
              f"{r['kv_bytes_read_per_token'] / r['dense_kv_bytes_read_per_token']:.3f} |")
PY
