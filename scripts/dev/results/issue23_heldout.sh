#!/usr/bin/env bash
# Issue 23, the held-out check of the default selector chosen on held-in texts (docs/RESULTS.md,
# "Choosing the default selector"): issue23_equal_bytes.sh's sweep with tasks cut from Persuasion
# (held-out), the new default `fasa` against the paper's selector, Double Sparsity and SparQ.
# Run after the choice, never used for choosing.
#   FASA=build/fasa scripts/dev/results/issue23_heldout.sh OUT MODEL CTX N_PER_KIND CALIB
set -euo pipefail
SPLIT=heldout exec "$(dirname "$0")/issue23_equal_bytes.sh" "$@"
