#!/usr/bin/env python3
"""Reorders a task file (fasa gen-tasks output, several kinds concatenated) so the kinds take
turns: kind A's 1st task, kind B's 1st, ..., kind A's 2nd, ... The tasks themselves are kept
byte for byte, so every task scores the same. A long checkpointed sweep over the interleaved
file is an even sample of every kind whenever it is stopped.

  python3 scripts/dev/interleave_tasks.py IN.jsonl OUT.jsonl
"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: interleave_tasks.py IN.jsonl OUT.jsonl")
    lines = [l for l in open(sys.argv[1], encoding="utf-8").read().splitlines() if l.strip()]
    by_kind = {}
    for n, line in enumerate(lines, 1):
        try:
            kind = json.loads(line)["task"]
        except (ValueError, KeyError) as e:
            sys.exit(f"{sys.argv[1]}:{n}: not a task line ({e})")
        by_kind.setdefault(kind, []).append(line)
    out = []
    for i in range(max(len(v) for v in by_kind.values())):
        out += [v[i] for v in by_kind.values() if i < len(v)]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print(f"{len(out)} tasks, kinds in turn: {', '.join(by_kind)}")


if __name__ == "__main__":
    main()
