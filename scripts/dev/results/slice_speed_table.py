#!/usr/bin/env python3
"""Markdown table of `fasa bench --json` runs of the low-bit TIP slice (slice_speed.sh).

    python3 scripts/dev/results/slice_speed_table.py RUN.jsonl [RUN.jsonl ...]

One row per (run, depth, setting): t/s (mean of the repetitions, ± stddev), × the run's dense
t/s at that depth, KV bytes read per token, KV resident in RAM, all bytes read per token
(weights + KV) and the build. Ratios are within a run only.
"""
import json
import sys


def setting(policy):
    if policy == "full":
        return "full"
    opts = dict(kv.split("=", 1) for kv in policy.split(":", 1)[1].split(","))
    return "fasa mean_value=%s slice=%s" % (opts.get("mean_value", "on"), opts.get("slice", "auto"))


def main(paths):
    print("| run | depth | setting | t/s | × full | KV read/token | KV resident | all bytes/token | build |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for path in paths:
        rows = [json.loads(line) for line in open(path) if line.strip()]
        full = {r["depth"]: r["tokens_per_s"] for r in rows if r["policy"] == "full"}
        name = path.rsplit("/", 1)[-1]
        for r in rows:
            ratio = r["tokens_per_s"] / full[r["depth"]] if r["depth"] in full else float("nan")
            print("| %s | %d | %s | %.2f ± %.2f | %.2f | %.1f MiB | %.1f MiB | %.2f GiB | %s |" % (
                name, r["depth"], setting(r["policy"]), r["tokens_per_s"], r["stddev"], ratio,
                r["kv_bytes_read_per_token"] / 2**20, r["kv_resident_ram_bytes"] / 2**20,
                r.get("bytes_per_token", 0) / 2**30, r["fasa_version"]))


if __name__ == "__main__":
    main(sys.argv[1:])
