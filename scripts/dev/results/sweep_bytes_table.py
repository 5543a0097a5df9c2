#!/usr/bin/env python3
"""Compact tables of an `eval sweep` results.json for choosing at equal bytes: score / KiB read
per decoded token per policy and budget, and, for each reference policy's budget, the best score
each other policy reaches reading at most the reference's bytes at that budget (its Pareto
frontier at equal or fewer bytes; "-" when no budget of it reads that little).
    sweep_bytes_table.py results.json [REFERENCE ...]   (default: double-sparsity sparq)"""
import json
import sys

j = json.load(open(sys.argv[1]))
refs = sys.argv[2:] or ["double-sparsity", "sparq"]
rows = {}


def name(spec):
    """The spec without its budget and calibration file (calib=online stays): one row per setting."""
    pol, _, opts = spec.partition(":")
    kept = [o for o in opts.split(",")
            if o and not o.startswith("budget=") and not (o.startswith("calib=") and o != "calib=online")]
    return pol + (":" + ",".join(kept) if kept else "")


for r in j["results"]:
    rows.setdefault(name(r["spec"]), {})[r["budget"]] = (r["score"], r["kv_bytes_read_per_token"])
budgets = sorted({b for p in rows.values() for b in p if b > 0})
print(f"{j['model'].split('/')[-1]}, {j['n_tasks']} tasks, ctx {j['n_ctx']}, fasa {j['fasa_version']}\n")
print("| policy | " + " | ".join(f"B {int(b)}" for b in budgets) + " |")
print("| --- |" + " ---: |" * len(budgets))
for p, by_b in rows.items():
    cells = [f"{by_b[b][0]:.3f} / {by_b[b][1] / 1024:.0f}" if b in by_b else "" for b in budgets]
    if p == "full":
        cells = [f"{by_b[0.0][0]:.3f} / {by_b[0.0][1] / 1024:.0f}"] + [""] * (len(budgets) - 1)
    print(f"| {p} | " + " | ".join(cells) + " |")
for ref in refs:
    if ref not in rows:
        continue
    print(f"\nBest score at <= {ref}'s bytes (its score in parentheses):\n")
    print("| policy | " + " | ".join(f"{ref} B {int(b)}" for b in budgets) + " |")
    print("| --- |" + " ---: |" * len(budgets))
    for p, by_b in rows.items():
        if p in ("full", ref) or p.startswith("oracle"):
            continue
        cells = []
        for b in budgets:
            s_ref, bytes_ref = rows[ref][b]
            ok = [s for s, by in by_b.values() if by <= bytes_ref]
            cells.append(f"{max(ok):.3f} ({s_ref:.3f})" if ok else f"- ({s_ref:.3f})")
        print(f"| {p} | " + " | ".join(cells) + " |")
