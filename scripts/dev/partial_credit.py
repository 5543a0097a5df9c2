#!/usr/bin/env python3
"""Partial credit for a finished `fasa eval sweep`: per setting, the mean over task kinds of the
share of a task's answers that appear in its output (RULER's string_match_all), next to the
sweep's own all-or-nothing score. For multi-answer kinds (niah-multivalue, niah-multiquery,
variable-tracking, common-words, freq-words: metric "all") a small model rarely gets every answer,
so the sweep's score is 0 almost everywhere; the share found still ranks the policies.

Matching is the engine's (src/fasa/eval/tasks.cpp): both sides lower-cased (ASCII), trimmed and
white-space runs folded to one space, then a substring test. Generation stops once every answer
is found (docs/EVALUATION.md), which cannot change the share found, so the outputs in results.json are
what a run to the token limit would score.

  python3 scripts/dev/partial_credit.py DIR/results.json TASKS.jsonl [--check]

--check also recomputes the sweep's own scores from the outputs and fails on any difference.
"""
import hashlib
import json
import re
import sys
from collections import defaultdict


def normalize(s):
    s = re.sub(r"[ \t\n\r\f\v]+", " ", s).strip(" ")
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def share_found(output, answers):
    out = normalize(output)
    return sum(normalize(a) in out for a in answers) / len(answers)


def engine_score(metric, output, answers):
    if metric == "exact":
        return float(any(normalize(output) == normalize(a) for a in answers))
    share = share_found(output, answers)
    return float(share > 0 if metric == "contains" else share == 1)


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    if len(args) != 2:
        sys.exit("usage: partial_credit.py DIR/results.json TASKS.jsonl [--check]")
    res = json.load(open(args[0], encoding="utf-8"))
    tasks = {}
    for n, line in enumerate(open(args[1], encoding="utf-8"), 1):
        if line.strip():
            try:
                t = json.loads(line)
                tasks[t["id"]] = t
            except (ValueError, KeyError, TypeError):
                sys.exit(f"{args[1]}: line {n} is not a task (a JSON object with an id)")
    sha = hashlib.sha256(open(args[1], "rb").read()).hexdigest()
    if sha != res.get("tasks_sha256"):
        print(f"note: {args[1]} is not the sweep's task file (sha256 differs); its tasks are "
              "matched by id", file=sys.stderr)
    missing = {i["id"] for i in res["items"]} - set(tasks)
    if missing:
        sys.exit(f"{args[1]}: has no task {sorted(missing)[0]} of {args[0]} (another task file?)")

    kinds = []
    share = defaultdict(lambda: defaultdict(list))   # spec -> kind -> shares
    score = defaultdict(lambda: defaultdict(list))   # spec -> kind -> the sweep's scores
    bad = 0
    for item in res["items"]:
        t = tasks[item["id"]]
        if t["task"] not in kinds:
            kinds.append(t["task"])
        share[item["spec"]][t["task"]].append(share_found(item["output"], t["answers"]))
        score[item["spec"]][t["task"]].append(item["score"])
        if "--check" in sys.argv and engine_score(t["metric"], item["output"], t["answers"]) != item["score"]:
            bad += 1
            print(f"score differs: {item['id']} {item['spec']}", file=sys.stderr)
    if bad:
        sys.exit(f"{bad} scores differ from the sweep's")

    def mean(v):
        return sum(v) / len(v)

    print(f"Share of answers found (mean over {len(kinds)} kinds; the sweep's all-or-nothing "
          f"score in parentheses), {len({i['id'] for i in res['items']})} tasks, fasa {res.get('fasa_version', '?')}\n")
    print("| setting | " + " | ".join(kinds) + " | mean of kinds |")
    print("| --- | " + " | ".join("---:" for _ in kinds) + " | ---: |")
    for spec in share:
        per = [mean(share[spec][k]) for k in kinds]
        whole = mean([mean(score[spec][k]) for k in kinds])
        print(f"| {spec} | " + " | ".join(f"{p:.3f}" for p in per) +
              f" | {mean(per):.3f} ({whole:.3f}) |")


if __name__ == "__main__":
    main()
