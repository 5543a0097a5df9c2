#!/usr/bin/env bash
# Issue 23 item 2, "contextual agreement from a larger/longer calibration": two more SmolLM2
# calibrations on Emma (held-in), beside the default one (4 samples x 1024 tokens,
# ../selector_recall/calib_emma.json): 4x the samples, and 4x the window length.
#   bash docs/notebook/selection_quality/data/calibration_size/calibrate.sh
set -euo pipefail
cd "$(dirname "$0")"
FASA=${FASA:-../../../../../build/fasa}
TEXT=${FASA_HOME:-$HOME/.cache/fasa}/texts/austen_emma.txt
{ time nice "$FASA" calibrate -m smollm2-135m --text "$TEXT" -t 1 --samples 16 \
    -o calib_emma_16x1024.json ; } > calibrate_16x1024.log 2>&1
{ time nice "$FASA" calibrate -m smollm2-135m --text "$TEXT" -t 1 --tokens 4096 \
    -o calib_emma_4x4096.json ; } > calibrate_4x4096.log 2>&1
