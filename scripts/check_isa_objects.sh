#!/usr/bin/env bash
# Checks that a built binary or library runs on any x86-64 CPU until the dispatcher picks a
# kernel set: every function that uses AVX/AVX2/AVX-512 instructions (VEX/EVEX-encoded: mnemonics
# starting with "v", and mask-register moves) must belong to fasa::isa_avx2 or fasa::isa_avx512.
# A shared inline function or template compiled for AVX-512 and picked by the linker would show
# up here as an outside function with such instructions (see src/fasa/core/isa_begin.h).
# Usage: scripts/check_isa_objects.sh FILE...   (exit 1 and a list of offenders on failure)
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 FILE..." >&2
  exit 2
fi
status=0
for f in "$@"; do
  if [ ! -f "$f" ]; then
    echo "check_isa_objects: no such file: $f" >&2
    exit 2
  fi
  bad=$(objdump -d -C --no-show-raw-insn "$f" | awk '
    /^[0-9a-f]+ <.*>:$/ { fn = $0; ok = (fn ~ /isa_avx2::|isa_avx512::/); next }
    !ok && /:\t(v[a-z0-9]+|kmov[bwdq]) / { if (!(fn in seen)) { seen[fn] = 1; print fn } }')
  if [ -n "$bad" ]; then
    echo "check_isa_objects: $f: functions outside the AVX kernel sets use AVX instructions:" >&2
    echo "$bad" | head -20 >&2
    status=1
  else
    echo "check_isa_objects: $f: ok"
  fi
done
exit $status
