#!/usr/bin/env bash
# The build enforces the layer graph (CMakeLists.txt, fasa_layer): a layer's sources see only
# their own headers and those of the layers below them. This compiles, with each layer's real
# compile command (compile_commands.json), one header from the layer itself (must compile) and
# one from a layer above it (must fail with "No such file"), so the check cannot pass by accident.
# Usage: tests/repo/layer_includes.sh BUILD_DIR
set -euo pipefail
build=$1
db=$build/compile_commands.json
[ -f "$db" ] || { echo "layer_includes: no $db" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# layer  own header  a header of a layer above it
probes="core:core/error.h:io/gguf.h
io:io/gguf.h:kernels/matmul.h
kernels:kernels/matmul.h:attention/kv_cache.h
tokenizer:tokenizer/tokenizer.h:model/model.h
attention:attention/policy.h:model/forward.h
model:model/forward.h:engine/session.h
engine:engine/session.h:calibrate/calibrator.h
calibrate:calibrate/calibrator.h:eval/sweep.h
eval:eval/sweep.h:server/server.h
hub:hub/pull.h:engine/session.h
synth:synth/shaped_model.h:attention/policy.h"
status=0
for p in $probes; do
  IFS=: read -r layer own above <<<"$p"
  cmd=$(python3 - "$db" "$layer" <<'PY'
import json, sys
db, layer = sys.argv[1], sys.argv[2]
for e in json.load(open(db)):
    if f"/src/fasa/{layer}/" in e["file"] and not e["file"].endswith(".isa.cpp"):
        print(e["command"]); break
PY
)
  [ -n "$cmd" ] || { echo "layer_includes: no compile command for $layer" >&2; exit 2; }
  for h in "$own" "$above"; do
    echo "#include \"fasa/$h\"" >"$tmp/probe.cpp"
    probe=$(echo "$cmd" | sed -E "s| -o [^ ]+| -o $tmp/probe.o|; s| -c [^ ]+| -fsyntax-only -c $tmp/probe.cpp|")
    if (cd "$build" && eval "$probe") >"$tmp/out" 2>&1; then ok=1; else ok=0; fi
    if [ "$h" = "$own" ] && [ $ok = 0 ]; then
      echo "layer_includes: $layer cannot include its own fasa/$h:" >&2; head -5 "$tmp/out" >&2; status=1
    elif [ "$h" = "$above" ] && { [ $ok = 1 ] || ! grep -q 'No such file' "$tmp/out"; }; then
      echo "layer_includes: $layer can include fasa/$h from a layer above it" >&2; status=1
    fi
  done
done
[ $status = 0 ] && echo "layer_includes: every layer sees only itself and the layers below"
exit $status
