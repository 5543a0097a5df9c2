#!/usr/bin/env python3
"""The table of docs/BENCHMARKS.md's "The default selector's own cost" from selector_cost.sh's
raw JSON: per build and round, each setting's t/s, its ratio to full in the same run, ms per
token, its cost over mean_value=off in the same run, and the barriers per token; then per build
the same cost paired repetition by repetition (median and quartiles over all rounds).
  selector_cost_table.py OUT > OUT/table.md"""
import glob
import json
import os
import statistics
import sys


def label(policy):
    p = policy.split(",")
    extra = [x for x in p[1:] if not x.startswith("budget=")]
    return p[0].split(":")[0] + (":" + ",".join(extra) if extra else "")


def main(out):
    print("| build | round | setting | t/s | × full | ms/token | vs mean_value=off | barriers/token |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for which in ("before", "after"):
        for f in sorted(glob.glob(os.path.join(out, f"{which}_round*.json"))):
            rows = json.load(open(f))
            full = next(r for r in rows if r["policy"] == "full")["tokens_per_s"]
            off = next(r for r in rows if r["policy"].endswith("mean_value=off"))["tokens_per_s"]
            rnd = f.split("round")[1].split(".")[0]
            for r in rows:
                tps = r["tokens_per_s"]
                cost = (1000 / tps - 1000 / off) / (1000 / off)
                print(f"| {r['fasa_version']} | {rnd} | {label(r['policy'])} | {tps:.2f} ± "
                      f"{r['stddev']:.2f} | {tps / full:.2f} | {1000 / tps:.2f} | "
                      f"{'' if r['policy'] == 'full' else f'{100 * cost:+.1f} %'} | "
                      f"{r['parallel_barriers_per_token']:.0f} |")
    paired(out)


def paired(out):
    """Per build, over every round: repetition i of each setting ran next to repetition i of the
    others (bench alternates them), so the cost is taken per repetition, then its median and
    quartiles over all repetitions of all rounds."""
    print("\n| build | repetitions | setting | × full (median) | vs mean_value=off: median "
          "[quartiles] |")
    print("| --- | ---: | --- | ---: | ---: |")
    for which in ("before", "after"):
        files = sorted(glob.glob(os.path.join(out, f"{which}_round*.json")))
        if not files:
            continue
        per = {}
        version = ""
        for f in files:
            rows = json.load(open(f))
            version = rows[0]["fasa_version"]
            full = next(r for r in rows if r["policy"] == "full")["samples"]
            off = next(r for r in rows if r["policy"].endswith("mean_value=off"))["samples"]
            for r in rows:
                if r["policy"] == "full":
                    continue
                d = per.setdefault(label(r["policy"]), ([], []))
                d[0].extend(x / f for x, f in zip(r["samples"], full))
                d[1].extend(o / x - 1 for x, o in zip(r["samples"], off))
        for name, (xf, cost) in per.items():
            q = sorted(cost)
            k = len(q) - 1
            print(f"| {version} | {len(q)} | {name} | {statistics.median(xf):.2f} | "
                  f"{100 * statistics.median(q):+.1f} % [{100 * q[k // 4]:+.1f}, "
                  f"{100 * q[(3 * k) // 4]:+.1f}] |")


if __name__ == "__main__":
    main(sys.argv[1])
