#!/usr/bin/env python3
"""Markdown table of `fasa eval ppl --json` outputs: one column per file (a budget), one row per
policy, perplexity and its change against `full` in the same file.
    ppl_table.py ppl_B0.05.json ppl_B0.1.json ppl_B0.2.json"""
import json
import sys

cols = []
for path in sys.argv[1:]:
    res = json.load(open(path))["results"]
    full = next(r["ppl"] for r in res if r["policy"] == "full")
    cols.append((path, full, {r["policy"]: r for r in res}))


def short(policy):
    parts = [p for p in policy.split(":", 1)[-1].split(",")
             if not p.startswith("budget=") and not (p.startswith("calib=") and p != "calib=online")]
    return policy.split(":")[0] + (" " + ",".join(parts) if parts else "")


names = []
for _, _, rows in cols:
    for p in rows:
        if p != "full" and short(p) not in names:
            names.append(short(p))
print("| policy | " + " | ".join(c[0] for c in cols) + " |")
print("| --- |" + " ---: |" * len(cols))
print("| full | " + " | ".join(f"{c[1]:.2f}" for c in cols) + " |")
for n in names:
    cells = []
    for _, full, rows in cols:
        r = next((r for p, r in rows.items() if p != "full" and short(p) == n), None)
        cells.append("" if r is None else
                     f"{r['ppl']:.2f} ({100 * (r['ppl'] / full - 1):+.1f} %), rows {100 * r['decode_rows_read_fraction']:.1f} %")
    print(f"| {n} | " + " | ".join(cells) + " |")
