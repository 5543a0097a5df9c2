#!/usr/bin/env python3
"""Paired comparison of two settings of an `eval sweep` on the same tasks, budget by budget:
the mean per-task score difference A - B with its 95 % interval (normal approximation over the
tasks' paired differences), and the tasks A wins and loses.
    paired_table.py results.json A B   (A, B: settings as sweep_bytes_table.py names them,
                                        e.g. fasa:calib=online fasa)"""
import json
import math
import sys

j = json.load(open(sys.argv[1]))
a_name, b_name = sys.argv[2], sys.argv[3]


def name(spec):
    """The spec without its budget and calibration file (calib=online stays)."""
    pol, _, opts = spec.partition(":")
    kept = [o for o in opts.split(",")
            if o and not o.startswith("budget=") and not (o.startswith("calib=") and o != "calib=online")]
    return pol + (":" + ",".join(kept) if kept else "")


def budget(spec):
    for o in spec.partition(":")[2].split(","):
        if o.startswith("budget="):
            return float(o[7:])
    return 0.0


scores = {}  # (setting, budget) -> {task id: score}
for it in j["items"]:
    scores.setdefault((name(it["spec"]), budget(it["spec"])), {})[it["id"]] = it["score"]
budgets = sorted({b for (n, b) in scores if n == a_name})
print(f"{j['model'].split('/')[-1]}, {j['n_tasks']} tasks, ctx {j['n_ctx']}: {a_name} - {b_name}\n")
print("| budget | A | B | A - B | 95 % interval | A wins | B wins |")
print("| ---: | ---: | ---: | ---: | --- | ---: | ---: |")
for b in budgets:
    sa, sb = scores[(a_name, b)], scores.get((b_name, b))
    if sb is None:
        continue
    d = [sa[t] - sb[t] for t in sa]
    n = len(d)
    mean = sum(d) / n
    var = sum((x - mean) ** 2 for x in d) / (n - 1) if n > 1 else 0.0
    half = 1.96 * math.sqrt(var / n)
    print(f"| {b:g} | {sum(sa.values()) / n:.3f} | {sum(sb.values()) / n:.3f} | {mean:+.3f} | "
          f"[{mean - half:+.3f}, {mean + half:+.3f}] | {sum(x > 0 for x in d)} | {sum(x < 0 for x in d)} |")
