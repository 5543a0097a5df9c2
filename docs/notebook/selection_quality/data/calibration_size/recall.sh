#!/usr/bin/env bash
# Issue 23 item 2: does a larger or longer calibration help the default selector? Recall, mass,
# KL and bytes of the default `fasa` (compound sets, one per kv-head group, mean-value
# correction) with three SmolLM2 calibrations made on Emma (calibrate.sh), measured on two
# held-in texts (Pride and Prejudice, Sense and Sensibility), budgets 64 and 256, 4K context.
#   bash docs/notebook/selection_quality/data/calibration_size/recall.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")"
FASA=${FASA:-../../../../../build/fasa}
TEXTS=${FASA_HOME:-$HOME/.cache/fasa}/texts
STEPS=${1:-8}
C0=../selector_recall/calib_emma.json C1=calib_emma_16x1024.json C2=calib_emma_4x4096.json
for book in pride_and_prejudice sense_and_sensibility; do
  for B in 64 256; do
    nice "$FASA" eval recall -m smollm2-135m --text "$TEXTS/austen_$book.txt" \
      --ctx 4096 --steps "$STEPS" --json -t 1 \
      --policy "fasa:calib=$C0,budget=$B" \
      --compare "fasa:calib=$C1,budget=$B" \
      --compare "fasa:calib=$C2,budget=$B" \
      --compare "fasa:calib=$C0,budget=$B,method=paper" \
      --compare "fasa:calib=$C1,budget=$B,method=paper" \
      --compare "fasa:calib=$C2,budget=$B,method=paper" \
      > "recall_${book}_B$B.json"
  done
done
python3 - <<'PY'
import json
names = {"../selector_recall/calib_emma.json": "4 x 1024 (default)",
         "../selector/calib_emma.json": "4 x 1024 (default)",  # the committed runs' path
         "calib_emma_16x1024.json": "16 x 1024 (4x the queries)",
         "calib_emma_4x4096.json": "4 x 4096 (4x the window)"}
for book in ("pride_and_prejudice", "sense_and_sensibility"):
    for B in (64, 256):
        rs = json.load(open(f"recall_{book}_B{B}.json"))["results"]
        print(f"\n{book}, budget {B}\n")
        print("| selector | calibration | recall | mass | KL nats | KV bytes/token |")
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        for r in rs:
            opts = dict(kv.split("=", 1) for kv in r["policy"].split(":", 1)[1].split(","))
            sel = "paper's (`method=paper`)" if opts.get("method") == "paper" else "default"
            print(f"| {sel} | {names[opts['calib']]} | {r['recall']:.4f} | "
                  f"{r['attention_mass']:.4f} | {r['kl']:.5f} | "
                  f"{r['kv_bytes_read_per_token']:.0f} |")
PY
