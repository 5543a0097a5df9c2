#!/usr/bin/env python3
"""Markdown table of fasam_speed.sh's JSONL files: per depth, each policy's t/s, its ratio to
dense and to FASA-C, the file tier's rows / reads / bytes per token, the row cache's hit share
and the KV resident in RAM against dense's.
   python3 scripts/dev/results/fasam_table.py FILE.jsonl..."""
import json
import sys


def short(policy):
    if policy == "full":
        return "full"
    if "variant=m" not in policy:
        return "FASA-C"
    own = [p for p in policy.split(",")[policy.split(",").index("variant=m") + 1:]
           if not p.startswith("offload_dir=")]
    return "FASA-M " + (", ".join(own) if own else "(defaults)")


print("| depth | policy | t/s | vs dense | vs FASA-C | tier rows / token | device reads / token "
      "| disk read / token | row cache hits | KV in RAM (vs dense) |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for path in sys.argv[1:]:
    rows = [json.loads(l) for l in open(path) if l.strip()]
    rows = [r for r in rows if r.get("test", "").startswith("tg")]
    by = {short(r["policy"]): r for r in rows}
    full, c = by.get("full"), by.get("FASA-C")
    for r in rows:
        name = short(r["policy"])
        m = "variant=m" in r["policy"]
        cells = [
            str(r["depth"]), name, f'{r["tokens_per_s"]:.3f}',
            f'{r["tokens_per_s"] / full["tokens_per_s"]:.2f}' if full else "",
            f'{r["tokens_per_s"] / c["tokens_per_s"]:.2f}' if c else "",
            f'{r.get("tier_rows_per_token", 0):,.0f}' if m else "",
            f'{r.get("tier_reads_per_token", 0):,.0f}' if m else "",
            f'{r["disk_bytes_read_per_token"] / 2**20:.1f} MiB in {r["disk_read_ms_per_token"]:.0f} ms'
            if m else "",
            f'{100 * r.get("tier_row_cache_hit_share", 0):.1f} %' if m else "",
            f'{r["kv_resident_ram_bytes"] / 2**20:.0f} MiB ({100 * r["kv_resident_ram_bytes"] / full["kv_resident_ram_bytes"]:.1f} %)'
            if full else "",
        ]
        print("| " + " | ".join(cells) + " |")
