#!/usr/bin/env bash
# Issue 3, perplexity: the paper's protocol (dense prefill of N-D tokens, D teacher-forced decode
# steps under the policy) at ctx 4096, D 256, on Persuasion, for full, oracle and FASA at 5/10/20%.
# Usage: scripts/dev/results/issue3_ppl.sh CALIB.json OUT_DIR   (FASA binary: build/fasa or $FASA)
set -euo pipefail
CALIB=$1 OUT=$2
FASA=${FASA:-./build/fasa}
TEXT=../shared/data/texts/austen_persuasion.txt
CHUNKS=${CHUNKS:-8}
mkdir -p "$OUT"
run() {  # name, policy flags...
  local name=$1; shift
  "$FASA" eval ppl -m smollm2-135m --text "$TEXT" --ctx 4096 --decode 256 --chunks "$CHUNKS" \
    "$@" --json > "$OUT/ppl_$name.json"
  echo "$name: $(cat "$OUT/ppl_$name.json")"
}
run full --policy full
for b in 0.05 0.1 0.2; do
  run "oracle_$b" --policy oracle --budget "$b"
  run "fasa_$b" --policy fasa --calib "$CALIB" --budget "$b"
done
