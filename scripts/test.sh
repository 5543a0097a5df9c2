#!/usr/bin/env bash
# Runs the whole test suite: set-up (deps, build, model), then every test through ctest.
# Real-model tests fail (rather than skip) when the model is missing: FASA_REQUIRE_MODEL=1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export FASA_REQUIRE_MODEL=1
ctest --test-dir build --output-on-failure -j"$(nproc)"
