#!/usr/bin/env python3
"""llama.cpp's own noise floor on a goldens file: how often its top-1 at each position of chunk 0
agrees with the golden (its batched evaluation, n_ubatch 512) when the same tokens are evaluated
with another micro-batch size, or token by token (n_batch 1, its decode path).

Development-time only (llama-cpp-python):
  python3 scripts/dev/llamacpp_self_agreement.py MODEL.gguf tests/data/model/gemma3_persuasion_goldens.json
"""
import json
import sys

import numpy as np
from llama_cpp import Llama


def top1(model_path, toks, n_ctx, n_batch, n):
    llm = Llama(model_path=model_path, n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_batch,
                logits_all=True, n_threads=2, verbose=False)
    llm.reset()
    if n_batch == 1:
        out = []
        for i in range(n):
            llm.eval([toks[i]])
            out.append(int(np.argmax(llm.scores[i])))
        return out
    llm.eval(toks[:n])
    return [int(np.argmax(llm.scores[i])) for i in range(n)]


def main():
    model_path, goldens_path = sys.argv[1:3]
    g = json.load(open(goldens_path))
    n_ctx = g["n_ctx"]
    toks = g["tokens"][:n_ctx]
    ref, margin = g["chunks"][0]["argmax"], g["chunks"][0]["margin"]
    for n_batch, n in [(64, n_ctx), (1, 512)]:
        got = top1(model_path, toks, n_ctx, n_batch, n)
        same = sum(a == r for a, r in zip(got, ref[:n]))
        conf = [a == r for a, r, m in zip(got, ref[:n], margin[:n]) if m >= 0.5]
        print(f"n_batch {n_batch}: {same}/{n} = {same / n:.4f} agree with the golden; "
              f"where its margin >= 0.5: {sum(conf)}/{len(conf)}", flush=True)


if __name__ == "__main__":
    main()
