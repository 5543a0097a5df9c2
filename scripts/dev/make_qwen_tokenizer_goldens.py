#!/usr/bin/env python3
"""Writes tests/data/tokenizer/qwen2.5-coder-1.5b_goldens.json: reference token ids,
detokenizations, chat renderings and a corpus hash for Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF,
`fasa pull qwen2.5-coder-1.5b`; tokenizer.ggml.model = gpt2, tokenizer.ggml.pre = qwen2,
151936 tokens), from llama.cpp (through llama-cpp-python) and Jinja.

Development-time only (never a runtime dependency):
  ~/.cache/fasa/venv-llamacpp/bin/pip install llama-cpp-python==0.3.36 numpy jinja2 gguf
  ~/.cache/fasa/venv-llamacpp/bin/python scripts/dev/make_qwen_tokenizer_goldens.py [--model PATH]

The model is found like the tests find it: --model, $FASA_MODEL_QWEN25_CODER,
$FASA_HOME/models/qwen2.5-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (FASA_HOME defaults
to ~/.cache/fasa).

Contents: the fixed CASES of make_tokenizer_goldens.py plus Qwen-specific ones (FIM, repo and
tool-call tokens, unused [PAD...] tokens, digit runs, CJK), 300 random strings over the
pre-tokenizer-sensitive alphabet of make_tokenizer_goldens.py ("fuzz", ids only), the detokenized
bytes of every token seen ("pieces_hex"), the chat template rendered by Jinja for several
conversations (with the token ids of each rendering), and the ids of the whole of Persuasion
(count, FNV-1a 64 of the int32 little-endian ids, first and last 64).

It also checks (and records under "pre_alias_checked") that llama.cpp tokenizes every case and
fuzz string the same with tokenizer.ggml.pre = deepseek-r1-qwen (the DeepSeek-R1-Distill-Qwen
GGUFs) as with qwen2.
"""
import argparse
import hashlib
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tokenizer_goldens import (CASES, CHATS, fuzz_strings, ids_fnv1a64,  # noqa: E402
                                    write_vocab_variant)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "qwen2.5-coder-1.5b"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"

QWEN_CASES = [
    ("<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n    return c<|fim_middle|>", True),
    ("<|repo_name|>fasa\n<|file_sep|>src/main.cpp\nint main() { return 0; }\n", True),
    ("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Bath\"}}\n</tool_call>",
     True),
    # <tool_call> is USER_DEFINED (type 4): llama.cpp matches it even without parse_special.
    ("<tool_call>x</tool_call> and <|fim_prefix|> as text", False),
    # [PAD151665] ... are UNUSED (type 5); <|vision_pad|> and <|box_start|> are CONTROL.
    ("[PAD151665] <|vision_pad|><|box_start|>(1,2)<|box_end|> [PAD151935]", True),
    ("<|object_ref_start|>the cat<|object_ref_end|><|quad_start|>", True),
    ("1234567890 12345678901234567890 3.141592653589793 1,000,000 2024年1月31日", True),
    ("通义千问是阿里云研发的大语言模型。它能够回答问题、创作文字，还能写代码。", True),
    ("    def __init__(self, n: int = 0) -> None:\n        self.n = n  # 计数\n", True),
    ("import numpy as np\n\n\nclass A:\n\tpass\n\n\n\n# end", True),
    ("SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;", True),
    ("😀😀😀 🤖🧠 ∀x∈ℝ: x²≥0", True),
]

QWEN_CHATS = CHATS[:3] + [
    [{"role": "system", "content": "You are a coding assistant."},
     {"role": "user", "content": "Write hello world in C.\n"},
     {"role": "assistant", "content": "```c\n#include <stdio.h>\nint main(void) { puts(\"hi\"); }"
                                      "\n```"},
     {"role": "user", "content": "Now in Rust."}],
    [{"role": "user", "content": "q1"}, {"role": "assistant", "content": " a1 "},
     {"role": "system", "content": "late system"}, {"role": "user", "content": "q2"}],
    [{"role": "user", "content": "  leading and trailing spaces \n"}],
]


def find_model(arg):
    cands = [arg, os.environ.get("FASA_MODEL_QWEN25_CODER")]
    home = os.environ.get("FASA_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "fasa")
    cands.append(os.path.join(home, "models", NAME, MODEL_FILE))
    for c in cands:
        if c and os.path.exists(c):
            return c
    sys.exit("Qwen2.5-Coder GGUF not found; pass --model (or run: fasa pull %s)" % NAME)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--out",
                    default=os.path.join(REPO, "tests/data/tokenizer/%s_goldens.json" % NAME))
    ap.add_argument("--corpus",
                    default=os.path.join(os.environ.get("FASA_HOME", os.path.expanduser("~/.cache/fasa")), "texts", "austen_persuasion.txt"))
    args = ap.parse_args()

    import gguf
    import jinja2
    import jinja2.sandbox
    import llama_cpp

    model = find_model(args.model)
    llm = llama_cpp.Llama(model_path=model, vocab_only=True, verbose=False)

    pieces = {}

    def piece(i):
        if i not in pieces:
            pieces[i] = llm.detokenize([i], special=True).hex()
        return pieces[i]

    def tokenize(text, special):
        return llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    all_cases = CASES + QWEN_CASES
    cases = []
    for text, special in all_cases:
        ids = tokenize(text, special)
        for i in ids:
            piece(i)
        cases.append({
            "text": text,
            "parse_special": special,
            "ids": ids,
            "detok": llm.detokenize(ids, special=False).decode("utf-8"),
            "detok_special": llm.detokenize(ids, special=True).decode("utf-8"),
        })
    fuzz = [{"text": t, "ids": tokenize(t, True)} for t in fuzz_strings()]
    with_bos = llm.tokenize(b"Hello world", add_bos=True, special=True)

    template = llm.metadata.get("tokenizer.chat_template")
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    tmpl = env.from_string(template)
    chats = []
    for messages in QWEN_CHATS:
        for add_gen in (True, False):
            text = tmpl.render(messages=messages, add_generation_prompt=add_gen)
            chats.append({"messages": messages, "add_generation_prompt": add_gen, "text": text,
                          "ids": tokenize(text, True)})

    # The same vocabulary under tokenizer.ggml.pre = deepseek-r1-qwen must tokenize identically.
    reader = gguf.GGUFReader(model)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "vocab-deepseek-r1-qwen.gguf")
        write_vocab_variant(reader, path, "deepseek-r1-qwen")
        alias = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        n_alias = 0
        for text, special in list(all_cases) + [(f["text"], True) for f in fuzz]:
            a = alias.tokenize(text.encode("utf-8"), add_bos=False, special=special)
            if a != tokenize(text, special):
                sys.exit("deepseek-r1-qwen and qwen2 differ on %r" % text)
            n_alias += 1
        del alias

    corpus = None
    if args.corpus and os.path.exists(args.corpus):
        with open(args.corpus, "rb") as f:
            data = f.read()
        ids = llm.tokenize(data, add_bos=False, special=False)
        corpus = {"file": os.path.basename(args.corpus),
                  "file_sha256": hashlib.sha256(data).hexdigest(),
                  "n_tokens": len(ids), "ids_fnv1a64_int32le": ids_fnv1a64(ids),
                  "first_ids": ids[:64], "last_ids": ids[-64:]}

    with open(model, "rb") as f:
        sha = hashlib.sha256()
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    out = {
        "generator": "scripts/dev/make_qwen_tokenizer_goldens.py",
        "reference": "llama.cpp via llama-cpp-python %s; Jinja2 %s" % (llama_cpp.__version__,
                                                                       jinja2.__version__),
        "model": os.path.basename(model),
        "model_sha256": sha.hexdigest(),
        "n_vocab": llm.n_vocab(),
        "bos_id": llm.token_bos(),
        "eos_id": llm.token_eos(),
        "hello_world_add_bos_ids": with_bos,
        "chat_template": template,
        "cases": cases,
        "fuzz": fuzz,
        "pre_alias_checked": {"pre": "deepseek-r1-qwen", "n_strings": n_alias},
        "pieces_hex": {str(k): v for k, v in sorted(pieces.items())},
        "chats": chats,
        "corpus": corpus,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote %s: %d cases, %d fuzz, %d chats, %d pieces; corpus %s tokens"
          % (args.out, len(cases), len(fuzz), len(chats), len(pieces),
             corpus and corpus["n_tokens"]))


if __name__ == "__main__":
    main()
