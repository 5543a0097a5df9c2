#!/usr/bin/env python3
"""Markdown table of `fasa eval recall --json` runs of the low-bit TIP slice (slice_quality.sh).

    python3 scripts/dev/results/slice_recall_table.py OUT/recall_*.json

One row per (file, policy): budget, recall of the oracle's top-B, attention mass, KL, KV bytes
read per token, and each against the same policy with slice=auto (the cache's f16 values).
"""
import json
import sys


def split(policy):
    name, opts = policy.split(":", 1)
    kv = dict(o.split("=", 1) for o in opts.split(","))
    return name, kv.get("slice", "auto")


def main(paths):
    print("| model | text | budget | policy | slice | recall | Δ recall | mass | KL | KV read/token | vs auto |")
    print("| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for path in paths:
        rows = json.load(open(path))["results"]
        base = {}
        for r in rows:
            name, slice_ = split(r["policy"])
            if slice_ == "auto":
                base[name] = r
        for r in rows:
            name, slice_ = split(r["policy"])
            b = base[name]
            text = r["text"].rsplit("/", 1)[-1].replace(".txt", "")
            model = r["model"].rsplit("/", 1)[-1].replace(".gguf", "")
            print("| %s | %s | %d | %s | %s | %.4f | %+.4f | %.4f | %.4f | %.2f MB | %.2f |" % (
                model, text, r["budget"], name, slice_, r["recall"], r["recall"] - b["recall"],
                r["attention_mass"], r["kl"], r["kv_bytes_read_per_token"] / 1e6,
                r["kv_bytes_read_per_token"] / b["kv_bytes_read_per_token"]))


if __name__ == "__main__":
    main(sys.argv[1:])
