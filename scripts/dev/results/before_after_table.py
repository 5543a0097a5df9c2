#!/usr/bin/env python3
"""Markdown table of a before/after benchmark run (scripts/dev/results/layering_before_after.sh):
per model, part, test and policy the tokens/s of each round for both binaries, after / before per round and
the median of those ratios. Usage: before_after_table.py bench.jsonl"""
import json
import statistics
import sys
from collections import defaultdict

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
runs = defaultdict(lambda: defaultdict(dict))  # key -> binary -> round -> t/s
order = []
for r in rows:
    model = r["model"].rsplit("/", 1)[-1].replace(".gguf", "")
    key = (model, r["part"], r["test"], r["policy"] + (f" b{r['budget']}" if r.get("budget") else ""))
    if key not in runs:
        order.append(key)
    runs[key][r["binary"]][r["round"]] = r["tokens_per_s"]
versions = sorted({(r["binary"], r["fasa_version"]) for r in rows})
print("builds: " + ", ".join(f"{b} = {v}" for b, v in versions))
print()
print("| model | part | test | policy | before t/s per round | after t/s per round | after / before per round | median |")
print("| --- | --- | --- | --- | --- | --- | --- | ---: |")
for key in order:
    b, a = runs[key]["before"], runs[key]["after"]
    rounds = sorted(set(b) & set(a))
    ratios = [a[k] / b[k] for k in rounds]
    fmt = lambda d: " / ".join(f"{d[k]:.2f}" for k in rounds)
    print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {fmt(b)} | {fmt(a)} | "
          f"{' / '.join(f'{x:.2f}' for x in ratios)} | {statistics.median(ratios):.2f} |")
