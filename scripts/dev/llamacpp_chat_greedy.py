#!/usr/bin/env python3
"""Greedy SmolLM2 chat answers from llama.cpp (llama-cpp-python), for comparing with
`fasa run --chat --temp 0`. Usage: llamacpp_chat_greedy.py "question" ["question" ...]
(model: $FASA_HOME or ~/.cache/fasa, smollm2-135m; dev-time only)."""
import os
import llama_cpp, sys
m = llama_cpp.Llama(model_path=os.path.join(os.environ.get("FASA_HOME", os.path.expanduser("~/.cache/fasa")), "models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"), n_ctx=256, n_threads=2, verbose=False, n_batch=512)
for p in sys.argv[1:]:
    prompt = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\n" + p + "<|im_end|>\n<|im_start|>assistant\n"
    toks = m.tokenize(prompt.encode(), add_bos=False, special=True)
    m.reset()
    out = []
    for t in m.generate(toks, temp=0.0, top_k=1):
        if t == m.token_eos() or len(out) >= 20: break
        out.append(t)
    print(repr(p), "->", repr(m.detokenize(out).decode(errors="replace")))
