#!/usr/bin/env python3
"""llama.cpp goldens for the random-weight family files (scripts/dev/make_family_models.py),
checked in as tests/data/model/families/<family>.json and read by
tests/model/family_golden_test.cpp.

Development-time only: the tests never import llama_cpp. Versions used: llama-cpp-python 0.3.36
(llama.cpp vendored inside), gguf and numpy from PyPI (exact versions recorded in every file).

  python3 scripts/dev/make_family_goldens.py OUT_DIR [--family NAME ...] [--seed 1]

Per family it writes the Python file, then runs llama.cpp on it (CPU, 2 threads, F16 KV cache,
flash attention off, n_batch = n_ubatch = 512) once per run: phi3 twice (n_ctx = its original
context, 256: short LongRoPE factors; n_ctx = 8192 > 256: long factors), every other family once
with n_ctx = 8192 (past every scaled family's original context). Each run records:
  - the fed token sequence (n_ctx ids: (splitmix64 draw >> 32) mod n_vocab, no BOS) and, at 16
    positions spread to the end, the top-16 (id, logit) pairs and the whole row's argmax and its
    margin over the runner-up;
  - 64 greedy tokens after an 8-token prompt (fresh context, one token per decode), with each
    step's margin.
And per file: its sha256 and size, each tensor's data sha256, the metadata keys in file order.
"""
import argparse
import hashlib
import importlib.metadata as md
import json
import os
import sys

import numpy as np
from llama_cpp import Llama

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_family_models as fm  # noqa: E402

N_SAMPLES, TOP_K, N_GREEDY, N_PROMPT = 16, 16, 64, 8


def stream(seed, n, n_vocab):
    return [int(x) for x in ((fm.draws(seed, n) >> np.uint64(32)) % np.uint64(n_vocab))]


def tensor_hashes(path):
    import gguf
    r = gguf.GGUFReader(path)
    keys = [f.name for f in r.fields.values()]
    # GGUFReader adds GGUF.version etc. as pseudo-fields; keep real keys only.
    keys = [k for k in keys if not k.startswith("GGUF.")]
    return keys, {t.name: hashlib.sha256(bytes(t.data.tobytes())).hexdigest() for t in r.tensors}


def run(path, n_ctx, n_vocab):
    llm = Llama(model_path=path, n_ctx=n_ctx, n_batch=512, n_ubatch=512, logits_all=True,
                n_threads=2, n_threads_batch=2, n_gpu_layers=0, flash_attn=False, verbose=False,
                seed=0)
    assert llm.n_vocab() == n_vocab, (llm.n_vocab(), n_vocab)
    tokens = stream(0xF00D, n_ctx, n_vocab)
    llm.reset()
    llm.eval(tokens)
    samples = []
    for k in range(N_SAMPLES):
        pos = (k + 1) * n_ctx // N_SAMPLES - 1
        row = np.array(llm.scores[pos], dtype=np.float32)
        order = np.argsort(-row, kind="stable")
        samples.append(dict(pos=pos, ids=[int(i) for i in order[:TOP_K]],
                            logits=[round(float(row[i]), 5) for i in order[:TOP_K]],
                            argmax=int(order[0]),
                            margin=round(float(row[order[0]] - row[order[1]]), 5)))
    prompt = stream(0xBEEF, N_PROMPT, n_vocab)
    llm.reset()
    llm.eval(prompt)
    greedy, margins = [], []
    for _ in range(N_GREEDY):
        row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        order = np.argsort(-row, kind="stable")
        greedy.append(int(order[0]))
        margins.append(round(float(row[order[0]] - row[order[1]]), 5))
        llm.eval([int(order[0])])
    del llm
    return dict(n_ctx=n_ctx, tokens=tokens, samples=samples, greedy_prompt=prompt,
                greedy=greedy, greedy_margins=margins)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--family", action="append", choices=sorted(fm.FAMILIES))
    ap.add_argument("--model-dir", default="/tmp/fasa_family_models")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    os.makedirs(args.model_dir, exist_ok=True)
    versions = {p: md.version(p) for p in ("llama_cpp_python", "gguf", "numpy")}
    for family in args.family or list(fm.FAMILIES):
        f = fm.FAMILIES[family]
        path = os.path.join(args.model_dir, family + ".gguf")
        fm.write(family, args.seed, path)
        keys, hashes = tensor_hashes(path)
        ctxs = [f["rope"]["orig"], 8192] if family == "phi3" else [8192]
        out = dict(family=family, base_model=f["base"], seed=args.seed, versions=versions,
                   file_sha256=fm.sha256_file(path), file_bytes=os.path.getsize(path),
                   n_vocab=f["n_vocab"], metadata_keys=keys, tensor_sha256=hashes,
                   runs=[run(path, n, f["n_vocab"]) for n in ctxs])
        dst = os.path.join(args.out_dir, family + ".json")
        with open(dst, "w") as fh:
            json.dump(out, fh, separators=(",", ":"))
            fh.write("\n")
        print(f"{dst}: {os.path.getsize(dst)} bytes; runs n_ctx {ctxs}; greedy margins min "
              f"{min(min(r['greedy_margins']) for r in out['runs']):.4f}; sample margins min "
              f"{min(s['margin'] for r in out['runs'] for s in r['samples']):.4f}")


if __name__ == "__main__":
    main()
