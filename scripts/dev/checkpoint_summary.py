#!/usr/bin/env python3
"""Interim scores of an unfinished `fasa eval sweep` from its DIR/checkpoint.jsonl: per task kind
and setting, the mean score over the tasks finished so far (and how many). For watching a long
run; the sweep's own results.json/md are the record.

  python3 scripts/dev/checkpoint_summary.py DIR/checkpoint.jsonl TASKS.jsonl
"""
import json
import sys
from collections import defaultdict


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: checkpoint_summary.py CHECKPOINT.jsonl TASKS.jsonl")
    lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
    header = json.loads(lines[0])
    specs = header["policies"]
    kinds = [json.loads(l)["task"] for l in open(sys.argv[2], encoding="utf-8") if l.strip()]
    sums = defaultdict(lambda: [0.0] * len(specs))
    count = defaultdict(int)
    for line in lines[1:]:
        try:
            d = json.loads(line)
        except ValueError:
            continue  # a line cut short by a crash
        k = kinds[d["task"]]
        count[k] += 1
        for p, o in enumerate(d["outcomes"]):
            sums[k][p] += o["score"]
    order = [k for k in dict.fromkeys(kinds) if count[k]]
    print(f"{sum(count.values())} of {len(kinds)} tasks done: "
          + ", ".join(f"{k} {count[k]}" for k in order))
    print("| setting | " + " | ".join(order) + " | mean of kinds |")
    print("| --- |" + " ---: |" * (len(order) + 1))
    for p, spec in enumerate(specs):
        means = [sums[k][p] / count[k] for k in order]
        print(f"| {spec} | " + " | ".join(f"{m:.3f}" for m in means)
              + f" | {sum(means) / len(means):.3f} |")


if __name__ == "__main__":
    main()
