#!/usr/bin/env python3
"""Rough llama.cpp reference speeds through llama-cpp-python (development-time only).

  python3 scripts/dev/bench_llamacpp.py MODEL.gguf [threads] [--pp N] [--tg N] [--depths D,D]
                                       [--reps R]

pp512: eval of 512 random tokens in one batch; tg128: 128 single-token evals; each at depth 0
and 1024 (a prefilled context first), 3 repetitions, mean tokens/s (the flags change these; the
context is sized to fit). Same token ids are not reused from fasa bench; speeds do not depend on
the ids. Versions used for docs/BENCHMARKS.md: llama-cpp-python 0.3.36.
"""
import argparse
import time

import numpy as np
from llama_cpp import Llama


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("threads", nargs="?", type=int, default=2)
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=128)
    ap.add_argument("--depths", default="0,1024")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    path, threads = a.model, a.threads
    depths = [int(d) for d in a.depths.split(",")]
    n_ctx = max(2048, max(depths) + max(a.pp, a.tg))
    llm = Llama(model_path=path, n_ctx=n_ctx, n_batch=512, n_ubatch=512, n_threads=threads,
                n_threads_batch=threads, verbose=False)
    rng = np.random.default_rng(0)
    n_vocab = llm.n_vocab()
    for depth in depths:
        ctx = rng.integers(0, n_vocab, depth).tolist()
        for name, n, batched in ((f"pp{a.pp}", a.pp, True), (f"tg{a.tg}", a.tg, False)):
            rates = []
            for _ in range(a.reps):
                llm.reset()
                llm._ctx.kv_cache_clear() if hasattr(llm._ctx, "kv_cache_clear") else None
                if depth:
                    llm.eval(ctx)
                toks = rng.integers(0, n_vocab, n).tolist()
                t0 = time.perf_counter()
                if batched:
                    llm.eval(toks)
                else:
                    for t in toks:
                        llm.eval([t])
                rates.append(n / (time.perf_counter() - t0))
            label = f"{name} @ d{depth}" if depth else name
            print(f"| llama.cpp (llama-cpp-python) | {threads} | {label} | {np.mean(rates):.2f} ± {np.std(rates, ddof=1):.2f} |")


if __name__ == "__main__":
    main()
