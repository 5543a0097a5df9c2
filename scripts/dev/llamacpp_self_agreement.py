#!/usr/bin/env python3
"""llama.cpp against itself: how often its top-1 changes when only the batch split changes.

Evaluates the first N tokens of chunk 0 of a model-goldens file (make_model_goldens.py or
make_qwen_model_goldens.py; the goldens were made with one llama_decode per chunk in ubatches of
512) again with other n_ubatch values, from an empty cache with the goldens' n_ctx, and compares
each run's per-position argmax and logits with the goldens' and with the first run's. This is the
noise floor of the reference: an independent implementation cannot be expected to agree with it
more often than it agrees with itself. Development-time only.

  ~/.cache/fasa/venv-llamacpp/bin/python scripts/dev/llamacpp_self_agreement.py MODEL.gguf \
      tests/data/model/qwen2.5-coder-1.5b_persuasion_goldens.json [--n 512] [--ubatch 512 128 1]

Prints, per n_ubatch: seconds, top-1 agreement with the goldens overall and split by the goldens'
margin, and the max / mean |logit difference| against the first n_ubatch listed (over the whole
vocabulary) and the max |next-token log-prob difference| against the goldens.
"""
import argparse
import json
import time

import numpy as np
from llama_cpp import Llama

EDGES = [0.0, 0.1, 0.25, 0.5, 1.0, 2.0, float("inf")]


def log_softmax_rows(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("goldens")
    ap.add_argument("--n", type=int, default=512, help="positions of chunk 0 to evaluate")
    ap.add_argument("--ubatch", type=int, nargs="+", default=[512, 128, 1])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with open(args.goldens) as f:
        g = json.load(f)
    n_ctx, n = g["n_ctx"], args.n
    toks = g["tokens"][:n]
    ref_argmax = np.array(g["chunks"][0]["argmax"][:n])
    ref_margin = np.array(g["chunks"][0]["margin"][:n])
    ref_lp = np.array(g["chunks"][0]["next_logprob"][:n - 1])
    first = None
    for ub in args.ubatch:
        llm = Llama(model_path=args.model, n_ctx=n_ctx, n_batch=ub,
                    n_ubatch=ub, logits_all=True, n_threads=args.threads,
                    n_threads_batch=args.threads, verbose=False, seed=0)
        t0 = time.time()
        llm.eval(toks)
        secs = time.time() - t0
        logits = np.array(llm.scores[:n], dtype=np.float32)
        del llm
        am = logits.argmax(axis=-1)
        same = am == ref_argmax
        lp = log_softmax_rows(logits)
        next_lp = lp[np.arange(n - 1), toks[1:]]
        line = (f"n_ubatch {ub}: {secs:.1f} s; top-1 agreement with goldens "
                f"{same.mean():.4f} ({same.sum()}/{n}); "
                f"max |next log-prob - goldens| {np.abs(next_lp - ref_lp).max():.4f}")
        if first is None:
            first = (ub, logits)
        else:
            d = np.abs(logits - first[1])
            line += f"; |logits - n_ubatch {first[0]}| max {d.max():.4f} mean {d.mean():.4f}"
        print(line, flush=True)
        for lo, hi in zip(EDGES[:-1], EDGES[1:]):
            sel = (ref_margin >= lo) & (ref_margin < hi)
            if sel.any():
                print(f"    goldens margin in [{lo}, {hi}): {same[sel].mean():.4f} "
                      f"({same[sel].sum()}/{sel.sum()})")
        bad = np.nonzero(~same)[0]
        if len(bad):
            print(f"    largest goldens margin at a disagreement: {ref_margin[bad].max():.4f}")


if __name__ == "__main__":
    main()
