#!/usr/bin/env bash
# FASA-M past the RAM dense attention needs: the 8B shape at DEPTH tokens (synthetic fill).
#   FASA=build/fasa scripts/dev/results/beyond_ram.sh OUT M8 CALIB8 [DEPTH]   (as root)
# 1. dense (`full`) at REF_DEPTH (default 65536, which fits this machine beside other work):
#    its peak RSS (/usr/bin/time); dense's need at DEPTH = that + the KV of the extra tokens
#    (f16: n_layers x n_kv_heads x head_dim x 2 x 2 bytes a token, from `fasa inspect`);
# 2. a cgroup v1 memory group limited to a third of that need; inside it FASA-M with each slice
#    of SLICES (default "q8 q4") decodes N tokens at DEPTH (peak RSS, the group's peak usage, t/s,
#    disk bytes);
# 3. `full` at DEPTH inside the same group: refused up front (exit 1, the message kept).
# Needs root for /sys/fs/cgroup/memory (cgroup v1). Outputs under OUT; raw files kept.
set -euo pipefail
FASA=${FASA:-build/fasa}
OUT=$1 M=$2 C=$3 DEPTH=${4:-131000}
REF=${REF_DEPTH:-65536} N=${N:-8} OFF=${OFFLOAD:-/var/tmp} B=${BUDGET:-1024}
mkdir -p "$OUT"
sha256sum "$M" "$C" > "$OUT/inputs.txt"
"$FASA" --version > "$OUT/version.txt"
git rev-parse HEAD >> "$OUT/version.txt"
# Per-token f16 KV bytes of the model.
"$FASA" inspect --json "$M" > "$OUT/inspect.json"
per_token=$(python3 -c "
import json; j = json.load(open('$OUT/inspect.json'))
print(j['n_layers'] * j['n_kv_heads'] * j['head_dim'] * 2 * 2)")
run_timed() {  # name, then the command: time -v into OUT/name.time, stdout/err into files
  local name=$1; shift
  set +e
  /usr/bin/time -v -o "$OUT/$name.time" "$@" > "$OUT/$name.jsonl" 2> "$OUT/$name.stderr"
  echo $? > "$OUT/$name.rc"
  set -e
}
peak_kb() { awk -F': ' '/Maximum resident set size/ {print $2}' "$OUT/$1.time"; }
# 1. dense at REF
if [ ! -s "$OUT/full_d$REF.rc" ]; then
  run_timed "full_d$REF" "$FASA" bench -m "$M" -p 0 -n "$N" -d "$REF" -r 1 -t 2 \
    --depth-fill synthetic --policy full --json
fi
ref_peak=$(( $(peak_kb "full_d$REF") * 1024 ))
need=$(( ref_peak + (DEPTH - REF) * per_token ))
limit=$(( need / 3 ))
printf 'per_token_kv_bytes %s\nfull_peak_rss_at_%s %s\ndense_need_at_%s %s\nlimit %s\n' \
  "$per_token" "$REF" "$ref_peak" "$DEPTH" "$need" "$limit" > "$OUT/limit.txt"
# 2./3. inside a memory cgroup of that limit
CG=/sys/fs/cgroup/memory/fasa_beyond_ram
mkdir -p "$CG"
echo "$limit" > "$CG/memory.limit_in_bytes"
in_group() {  # name, then the command, run inside the group from a fresh peak
  local name=$1; shift
  echo 0 > "$CG/memory.max_usage_in_bytes" 2>/dev/null || true
  echo 0 > "$CG/memory.failcnt" 2>/dev/null || true
  run_timed "$name" bash -c 'echo $$ > '"$CG"'/cgroup.procs && exec "$@"' _ "$@"
  { echo "limit_in_bytes $(cat "$CG/memory.limit_in_bytes")"
    echo "max_usage_in_bytes $(cat "$CG/memory.max_usage_in_bytes")"
    echo "failcnt $(cat "$CG/memory.failcnt")"
    grep -E '^(oom_kill|under_oom) ' "$CG/memory.oom_control" || true; } > "$OUT/$name.cgroup"
}
for s in ${SLICES:-q8 q4}; do
  [ -s "$OUT/fasam_${s}_d$DEPTH.rc" ] && [ "$(cat "$OUT/fasam_${s}_d$DEPTH.rc")" = 0 ] && continue
  in_group "fasam_${s}_d$DEPTH" "$FASA" bench -m "$M" -p 0 -n "$N" -d "$DEPTH" -r 1 -t 2 \
    --depth-fill synthetic --policy "fasa:calib=$C,budget=$B,variant=m,offload_dir=$OFF,slice=$s" \
    --json
done
in_group "full_d$DEPTH" "$FASA" bench -m "$M" -p 0 -n "$N" -d "$DEPTH" -r 1 -t 2 \
  --depth-fill synthetic --policy full --json
rmdir "$CG" 2>/dev/null || true
