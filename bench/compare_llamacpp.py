#!/usr/bin/env python3
"""fasa against llama.cpp on the same GGUF, threads and depths, in one run (development-time
only; llama.cpp runs through llama-cpp-python, which bench/compare_llamacpp.sh installs into a
throwaway virtual environment).

  python3 bench/compare_llamacpp.py --fasa ./build/fasa -m MODEL.gguf [-t 2] [-p 512] [-n 128]
                                    [-d 0,1024,4096] [-r 3] [--json]

For every depth D and test (ppN: N prompt tokens in one batch; tgN: N single-token decode steps),
each repetition runs fasa (`fasa bench ... -r 1 --json`, one process per measurement) and then
llama.cpp (a context of D random tokens evaluated untimed, then the timed part), alternating so
that load on a shared machine hits both alike. Prints mean ± sd tokens/s and fasa / llama.cpp.
Token ids are random in both (speed does not depend on them).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time


def fasa_rows(stdout):
    """`fasa bench --json` prints JSON Lines: one self-contained object per result row."""
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def fasa_tokens_per_s(rows, test, n, depth):
    """tokens/s of the one row for test ("pp"/"tg"), n tokens, at depth."""
    match = [r for r in rows if r["test"] == f"{test}{n}" and r["depth"] == depth]
    if len(match) != 1:
        raise RuntimeError(f"fasa bench printed {len(match)} rows for {test}{n} @ d{depth}")
    return match[0]["tokens_per_s"]


def fasa_once(a, test, n, depth):
    cmd = [a.fasa, "bench", "-m", a.model, "-t", str(a.threads), "-r", "1", "-d", str(depth),
           "-p", str(n if test == "pp" else 0), "-n", str(n if test == "tg" else 0), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return fasa_tokens_per_s(fasa_rows(out), test, n, depth)


def llama_once(llm, rng, test, n, depth):
    llm.reset()
    n_vocab = llm.n_vocab()
    if depth:
        llm.eval(rng.integers(0, n_vocab, depth).tolist())
    toks = rng.integers(0, n_vocab, n).tolist()
    t0 = time.perf_counter()
    if test == "pp":
        llm.eval(toks)
    else:
        for t in toks:
            llm.eval([t])
    return n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fasa", required=True)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-d", default="0,1024,4096")
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    import numpy as np
    from llama_cpp import Llama, __version__ as llama_version
    depths = [int(x) for x in a.d.split(",")]
    n_ctx = max(depths) + max(a.p, a.n) + 16
    llm = Llama(model_path=a.model, n_ctx=n_ctx, n_batch=512, n_ubatch=512, n_threads=a.threads,
                n_threads_batch=a.threads, verbose=False)
    rng = np.random.default_rng(0)
    rows = []
    for depth in depths:
        for test, n in (("pp", a.p), ("tg", a.n)):
            if n == 0:
                continue
            f, l = [], []
            for _ in range(a.r):
                f.append(fasa_once(a, test, n, depth))
                l.append(llama_once(llm, rng, test, n, depth))
            name = f"{test}{n}" + (f" @ d{depth}" if depth else "")
            rows.append({"test": name, "depth": depth, "fasa": f, "llama_cpp": l,
                         "ratio": statistics.mean(f) / statistics.mean(l)})
            print(f"fasa: {name} done", file=sys.stderr)
    if a.json:
        print(json.dumps({"model": a.model, "threads": a.threads, "llama_cpp_python": llama_version,
                          "results": rows}))
        return
    sd = lambda v: statistics.stdev(v) if len(v) > 1 else 0.0
    print(f"model {a.model}, {a.threads} threads, llama-cpp-python {llama_version}, {a.r} reps\n")
    print("| test | fasa t/s | llama.cpp t/s | fasa / llama.cpp |")
    print("| --- | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['test']} | {statistics.mean(r['fasa']):.2f} ± {sd(r['fasa']):.2f} | "
              f"{statistics.mean(r['llama_cpp']):.2f} ± {sd(r['llama_cpp']):.2f} | {r['ratio']:.2f} |")


if __name__ == "__main__":
    main()
