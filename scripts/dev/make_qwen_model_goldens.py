#!/usr/bin/env python3
"""Reference logits goldens for Qwen2.5-Coder-1.5B-Instruct Q4_K_M (`fasa pull qwen2.5-coder-1.5b`),
teacher-forced on Persuasion with llama.cpp (llama-cpp-python), written to
tests/data/model/qwen2.5-coder-1.5b_persuasion_goldens.json.

Development-time only: the output JSON is checked in and the tests never import llama_cpp.

  python3 -m pip install llama-cpp-python==0.3.36 numpy
  python3 scripts/dev/make_qwen_model_goldens.py MODEL.gguf \
      ~/.cache/fasa/texts/austen_persuasion.txt \
      tests/data/model/qwen2.5-coder-1.5b_persuasion_goldens.json [--n-ctx 2048] [--n-chunks 4]

Runtime: 12 min 42 s on the development machine (2 shared cores; 112-171 s per chunk), about
3.4 GB of RAM (the logits of one chunk are 2048 x 151936 floats).

Conventions (those of llama-perplexity): the text is tokenized once by llama.cpp with
add_special=True and parse_special=False -- this model's tokenizer.ggml.add_bos_token is false,
so no BOS is added and token 0 of chunk 0 is the first text token; the first n_chunks * n_ctx
tokens are cut into n_chunks chunks of n_ctx tokens; each chunk is evaluated from an empty KV
cache (positions 0 .. n_ctx-1, one llama_decode of n_ctx tokens in ubatches of 512, 2 threads,
CPU, default rope settings from the GGUF) with the logits of every position kept.

Format (one JSON object; floats rounded as noted; "pos" is the position inside a chunk):
  model, model_sha256, reference   file name, sha256 of the GGUF, llama-cpp-python version
  text, text_sha256                corpus file name and sha256
  n_ctx, n_chunks, n_vocab, add_bos
  tokens        [n_chunks * n_ctx] int: the token ids; chunk c is tokens[c*n_ctx:(c+1)*n_ctx]
  chunks        [n_chunks] objects:
    argmax        [n_ctx] int: argmax of the logits at pos (the predicted next token;
                  ties go to the lowest id)
    margin        [n_ctx] float (4 decimals): logit of the argmax minus the runner-up logit
                  (small margins flag positions where an argmax mismatch is not an error)
    next_logprob  [n_ctx - 1] float (5 decimals): log-softmax at pos of the actual token at pos+1
    ppl           perplexity of the chunk over pos n_ctx/2 .. n_ctx-2 (predicting the second half,
                  as llama-perplexity scores it)
    ppl_all       perplexity of the chunk over every pos 0 .. n_ctx-2
    top16         (chunk 0 only) every 128th pos: {"pos", "ids": 16 ids by descending logit,
                  "logits": their logits (4 decimals)}
  ppl, ppl_se, mean_nll   over the second halves of all chunks (llama-perplexity's final
                          estimate), standard error of ppl
  chat_prompt, chat_prompt_tokens, chat_greedy_tokens, chat_greedy_text:
                greedy (top_k = 1) generation of 24 tokens for "What is the capital of France?"
                in the model's ChatML template with its default system prompt
  timing_s      seconds llama.cpp took per chunk on the development machine (information only)
"""
import argparse
import hashlib
import json
import os
import time

import numpy as np
from llama_cpp import Llama

SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def log_softmax_rows(logits):
    """float64 log-softmax of a float32 [n, vocab] array, row block by row block."""
    out = np.empty(logits.shape, dtype=np.float64)
    for i in range(0, logits.shape[0], 256):
        x = logits[i:i + 256].astype(np.float64)
        m = x.max(axis=-1, keepdims=True)
        out[i:i + 256] = x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("text")
    ap.add_argument("out")
    ap.add_argument("--n-ctx", type=int, default=2048)
    ap.add_argument("--n-chunks", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    n_ctx, n_chunks = args.n_ctx, args.n_chunks

    llm = Llama(model_path=args.model, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=512,
                logits_all=True, n_threads=args.threads, n_threads_batch=args.threads,
                verbose=False, seed=0)
    with open(args.text, "rb") as f:
        text_bytes = f.read()
    tokens = llm.tokenize(text_bytes, add_bos=True, special=False)
    add_bos = tokens[0] == llm.token_bos()
    assert len(tokens) >= n_ctx * n_chunks
    tokens = tokens[: n_ctx * n_chunks]
    n_vocab = llm.n_vocab()

    chunks, timing = [], []
    nll_sum, nll2_sum, count = 0.0, 0.0, 0
    for c in range(n_chunks):
        toks = tokens[c * n_ctx:(c + 1) * n_ctx]
        llm.reset()
        t0 = time.time()
        llm.eval(toks)
        timing.append(round(time.time() - t0, 1))
        logits = np.array(llm.scores[:n_ctx], dtype=np.float32)  # [n_ctx, n_vocab]
        lp = log_softmax_rows(logits)
        argmax = logits.argmax(axis=-1).astype(int).tolist()
        top2 = np.partition(logits, n_vocab - 2, axis=-1)[:, -2:].astype(np.float64)
        margin = [round(float(m), 4) for m in (top2[:, 1] - top2[:, 0])]
        next_lp = [float(lp[i, toks[i + 1]]) for i in range(n_ctx - 1)]
        half = next_lp[n_ctx // 2:]
        for v in half:
            nll_sum += -v
            nll2_sum += v * v
            count += 1
        entry = {"argmax": argmax, "margin": margin,
                 "next_logprob": [round(v, 5) for v in next_lp],
                 "ppl": float(np.exp(-np.mean(half))),
                 "ppl_all": float(np.exp(-np.mean(next_lp)))}
        if c == 0:
            top = []
            for i in range(0, n_ctx, 128):
                ids = np.argsort(-logits[i], kind="stable")[:16]
                top.append({"pos": i, "ids": ids.astype(int).tolist(),
                            "logits": [round(float(logits[i, j]), 4) for j in ids]})
            entry["top16"] = top
        chunks.append(entry)
        print(f"chunk {c}: {timing[-1]} s, ppl {entry['ppl']:.4f} (all {entry['ppl_all']:.4f})",
              flush=True)
        del logits, lp
    mean = nll_sum / count
    var = nll2_sum / count - mean * mean
    se = float(np.sqrt(var / (count - 1))) if var > 0 else 0.0
    ppl = float(np.exp(mean))
    del llm

    llm_gen = Llama(model_path=args.model, n_ctx=512, n_threads=args.threads, verbose=False,
                    seed=0)
    prompt = ("<|im_start|>system\n" + SYSTEM + "<|im_end|>\n<|im_start|>user\nWhat is the "
              "capital of France?<|im_end|>\n<|im_start|>assistant\n")
    ptoks = llm_gen.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    eog = {llm_gen.token_eos()} | set(llm_gen.tokenize(b"<|endoftext|>", add_bos=False,
                                                       special=True))
    gen = []
    for t in llm_gen.generate(ptoks, temp=0.0, top_k=1):
        gen.append(int(t))
        if len(gen) >= 24 or t in eog:
            break
    out = {
        "model": os.path.basename(args.model),
        "model_sha256": sha256_file(args.model),
        "reference": "llama-cpp-python " + __import__("llama_cpp").__version__,
        "text": os.path.basename(args.text),
        "text_sha256": hashlib.sha256(text_bytes).hexdigest(),
        "n_ctx": n_ctx,
        "n_chunks": n_chunks,
        "n_vocab": n_vocab,
        "add_bos": add_bos,
        "tokens": tokens,
        "ppl": ppl,
        "ppl_se": se * ppl,
        "mean_nll": mean,
        "chunks": chunks,
        "chat_prompt": prompt,
        "chat_prompt_tokens": ptoks,
        "chat_greedy_tokens": gen,
        "chat_greedy_text": llm_gen.detokenize(gen).decode("utf-8", errors="replace"),
        "timing_s": timing,
    }
    with open(args.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"ppl {ppl:.4f} +/- {se * ppl:.4f}  greedy: {out['chat_greedy_text']!r}")


if __name__ == "__main__":
    main()
