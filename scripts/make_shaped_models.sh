#!/usr/bin/env bash
# Writes the paper-shaped random-weight models (`fasa synth`: the shapes, metadata and Q4_K_M
# tensor types of the public Llama-3.1-8B-Instruct and Qwen2.5-7B-Instruct files, random
# weights) into DIR (default $FASA_HOME/models/shaped, i.e. ~/.cache/fasa/models/shaped):
#   bash scripts/make_shaped_models.sh [DIR]        # FASA=path/to/fasa (default build/fasa)
# About 4.9 + 4.7 GB. A file already there is kept (delete it to write it again). For speed and
# memory measurements only: the outputs of these models mean nothing.
set -euo pipefail

fasa="${FASA:-$(dirname "$0")/../build/fasa}"
dir="${1:-${FASA_HOME:-$HOME/.cache/fasa}/models/shaped}"
[ -x "$fasa" ] || { echo "make_shaped_models.sh: no fasa binary at $fasa (build first, or set FASA)" >&2; exit 1; }
mkdir -p "$dir"
for shape in llama-3.1-8b-instruct-q4_k_m qwen2.5-7b-instruct-q4_k_m; do
  out="$dir/$shape-random.gguf"
  if [ -f "$out" ]; then
    echo "kept $out"
    continue
  fi
  "$fasa" synth --shape "$shape" -o "$out" --seed 1
done
