#!/usr/bin/env bash
# The held-out check of the default selector chosen on held-in texts
# (docs/notebook/selection_quality/default_selector.md, "Choosing the default selector"):
# selector_equal_bytes.sh's sweep with tasks cut from Persuasion
# (held-out), the new default `fasa` against the paper's selector, Double Sparsity and SparQ.
# Run after the choice, never used for choosing.
#   FASA=build/fasa scripts/dev/results/selector_heldout.sh OUT MODEL CTX N_PER_KIND CALIB
set -euo pipefail
SPLIT=heldout exec "$(dirname "$0")/selector_equal_bytes.sh" "$@"
