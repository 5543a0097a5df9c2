#!/usr/bin/env python3
"""Rough llama.cpp reference speeds through llama-cpp-python (development-time only).

  python3 scripts/dev/bench_llamacpp.py MODEL.gguf [threads]

pp512: eval of 512 random tokens in one batch; tg128: 128 single-token evals; each at depth 0
and 1024 (a prefilled context first), 3 repetitions, mean tokens/s. Same token ids are not
reused from fasa bench; speeds do not depend on the ids.
"""
import sys
import time

import numpy as np
from llama_cpp import Llama


def main():
    path = sys.argv[1]
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    llm = Llama(model_path=path, n_ctx=2048, n_batch=512, n_ubatch=512, n_threads=threads,
                n_threads_batch=threads, verbose=False)
    rng = np.random.default_rng(0)
    n_vocab = llm.n_vocab()
    for depth in (0, 1024):
        ctx = rng.integers(0, n_vocab, depth).tolist()
        for name, n, batched in (("pp512", 512, True), ("tg128", 128, False)):
            rates = []
            for _ in range(3):
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
