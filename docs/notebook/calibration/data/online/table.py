#!/usr/bin/env python3
"""Markdown table of recall_choice.sh's results: recall, attention mass and KL per policy, one
column group per (text, budget).   table.py DIR"""
import glob
import json
import os
import sys

d = sys.argv[1]
runs = {}
for f in sorted(glob.glob(os.path.join(d, "recall_*_B*.json"))):
    name = os.path.basename(f)[len("recall_"):-len(".json")]
    runs[name] = json.load(open(f))["results"]
names = list(runs)
print("| policy | " + " | ".join(f"{n}: recall / mass / KL" for n in names) + " |")
print("| --- |" + " ---: |" * len(names))
first = runs[names[0]]
for i, r in enumerate(first):
    label = r["policy"]
    for emma in ("docs/notebook/selection_quality/data/selector_recall/calib_emma.json",
                 "docs/results/issue23/selector/calib_emma.json"):  # the committed runs' path
        label = label.replace(emma, "EMMA")
    label = label.replace(",budget=" + str(r["budget"]), "")
    cells = []
    for n in names:
        x = runs[n][i]
        cells.append(f"{x['recall']:.4f} / {x['attention_mass']:.4f} / {x['kl']:.4f}")
    print(f"| {label} | " + " | ".join(cells) + " |")
