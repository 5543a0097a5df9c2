#!/usr/bin/env python3
"""Reference goldens for the real-model tests, produced with llama.cpp (llama-cpp-python).

Development-time only: the output JSON is checked in and the tests never import llama_cpp.

  python3 -m pip install llama-cpp-python==0.3.36 numpy
  python3 scripts/dev/make_model_goldens.py MODEL.gguf ~/.cache/fasa/texts/austen_persuasion.txt \
      tests/data/model/smollm2_persuasion_goldens.json
  python3 scripts/dev/make_model_goldens.py GEMMA.gguf ~/.cache/fasa/texts/austen_persuasion.txt \
      tests/data/model/gemma3_persuasion_goldens.json --ctx 2048 --bos-per-chunk \
      --chat-prompt $'<start_of_turn>user\nWhat is the capital of France? Answer in one sentence.<end_of_turn>\n<start_of_turn>model\n'

What it records (llama-perplexity conventions: no BOS for SmolLM2, fresh cache per chunk):
  - the first 4 * 1024 token ids of the text (llama.cpp tokenization, parse_special=False)
  - per chunk and position: the argmax next-token id, its margin over the runner-up (logits), and
    the log-prob of the actual next token
  - the reference perplexity over the second half of each chunk, and its standard error
  - for chunk 0, every 64th position: the top-16 (id, logit) pairs
  - greedy chat generation for "What is the capital of France?" (24 tokens)
"""
import argparse
import hashlib
import json
import sys

import numpy as np
from llama_cpp import Llama

SMOLLM2_CHAT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
                "Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
                "<|im_start|>assistant\n")


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("text")
    ap.add_argument("out")
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--bos-per-chunk", action="store_true",
                    help="every chunk starts with BOS, as llama-perplexity does for add_bos models")
    ap.add_argument("--chat-prompt", default=SMOLLM2_CHAT)
    args = ap.parse_args()
    model_path, text_path, out_path = args.model, args.text, args.out
    N_CTX, N_CHUNKS = args.ctx, args.chunks
    llm = Llama(model_path=model_path, n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=512, logits_all=True,
                n_threads=2, verbose=False, seed=0)
    text = open(text_path, encoding="utf-8").read()
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    assert len(tokens) >= N_CTX * N_CHUNKS
    tokens = tokens[: N_CTX * N_CHUNKS]
    if args.bos_per_chunk:
        for c in range(N_CHUNKS):
            tokens[c * N_CTX] = llm.token_bos()
    chunks = []
    nll_sum, nll2_sum, count = 0.0, 0.0, 0
    for c in range(N_CHUNKS):
        toks = tokens[c * N_CTX:(c + 1) * N_CTX]
        llm.reset()
        llm.eval(toks)
        logits = np.array(llm.scores[:N_CTX], dtype=np.float32)  # [n_ctx, n_vocab]
        argmax, margin, next_lp = [], [], []
        for r0 in range(0, N_CTX, 128):  # in float64, 128 rows at a time (big vocabularies)
            rows = logits[r0:r0 + 128].astype(np.float64)
            lp = log_softmax(rows)
            argmax += rows.argmax(axis=-1).astype(int).tolist()
            top2 = np.partition(rows, -2, axis=-1)[:, -2:]
            margin += [round(float(m), 4) for m in (top2.max(axis=-1) - top2.min(axis=-1))]
            next_lp += [float(lp[i - r0, toks[i + 1]]) for i in range(r0, min(r0 + 128, N_CTX - 1))]
        first = N_CTX // 2
        for i in range(first, N_CTX - 1):
            nll = -next_lp[i]
            nll_sum += nll
            nll2_sum += nll * nll
            count += 1
        entry = {"argmax": argmax, "margin": margin, "next_logprob": next_lp}
        if c == 0:
            top = []
            for i in range(0, N_CTX, 64):
                ids = np.argsort(-logits[i], kind="stable")[:16]
                top.append({"pos": i, "ids": ids.astype(int).tolist(),
                            "logits": [float(logits[i, j]) for j in ids]})
            entry["top16"] = top
        chunks.append(entry)
    mean = nll_sum / count
    var = nll2_sum / count - mean * mean
    se = float(np.sqrt(var / (count - 1))) if var > 0 else 0.0
    ppl = float(np.exp(mean))

    del llm, logits
    llm_gen = Llama(model_path=model_path, n_ctx=512, n_threads=2, verbose=False, seed=0)
    prompt = args.chat_prompt
    ptoks = llm_gen.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    gen = []
    for t in llm_gen.generate(ptoks, temp=0.0, top_k=1):
        gen.append(int(t))
        if len(gen) >= 24 or t in (llm_gen.token_eos(), llm_gen._model.token_eot()):
            break
    out = {
        "model_sha256": sha256_of(model_path),
        "reference": "llama-cpp-python " + __import__("llama_cpp").__version__,
        "text": text_path.split("/")[-1],
        "n_ctx": N_CTX,
        "n_chunks": N_CHUNKS,
        "tokens": tokens,
        "ppl": ppl,
        "ppl_se": se * ppl,
        "mean_nll": mean,
        "chunks": chunks,
        "chat_prompt": prompt,
        "chat_prompt_tokens": ptoks,
        "chat_greedy_tokens": gen,
        "chat_greedy_text": llm_gen.detokenize(gen).decode("utf-8", errors="replace"),
    }
    with open(out_path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"ppl {ppl:.4f} +/- {se * ppl:.4f}  greedy: {out['chat_greedy_text']!r}")


if __name__ == "__main__":
    main()
