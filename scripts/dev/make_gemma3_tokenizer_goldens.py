#!/usr/bin/env python3
"""Writes tests/data/tokenizer/gemma3_goldens.json: reference token ids, detokenizations, token
pieces and chat renderings for Gemma 3 270M's SentencePiece-style vocabulary, from llama.cpp
(through llama-cpp-python, vocab_only) and Jinja.

The cases are SmolLM2's (make_tokenizer_goldens.CASES) plus Gemma-specific ones; each is also
tokenized with tokenizer.ggml.add_space_prefix switched to true (a metadata-only copy of the
file), which Gemma 3 does not use but Llama 1/2 vocabularies do.

The GGUF carries no tokenizer.chat_template, so chats are rendered with Gemma 3's own template
(GEMMA3_CHAT_TEMPLATE below: the chat_template of the google/gemma-3-*-it tokenizer_config.json).

Development-time only (never a runtime dependency):
  python3 -m venv ~/.cache/fasa/venv-llamacpp
  ~/.cache/fasa/venv-llamacpp/bin/pip install llama-cpp-python==0.3.36 numpy jinja2
  ~/.cache/fasa/venv-llamacpp/bin/python scripts/dev/make_gemma3_tokenizer_goldens.py [--model PATH]

The model is found like the tests find it: --model, $FASA_MODEL_GEMMA3,
$FASA_HOME/models/gemma3-270m/gemma-3-270m-q4_k_m.gguf (FASA_HOME defaults to ~/.cache/fasa).
"""
import argparse
import ctypes
import hashlib
import json
import os
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from make_tokenizer_goldens import CASES as SMOLLM2_CASES, ids_fnv1a64  # noqa: E402

MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"

# (text, parse_special), tokenized with add_bos=False.
GEMMA_CASES = [
    # spaces: Gemma's user-defined tokens hold runs of 2..31 spaces
    (" Hello", True),
    ("  Hello", True),
    ("Hello  world", True),
    ("a   b    c     d", True),
    (" " * 31, True),
    (" " * 40 + "x", True),
    ("x" + " " * 33, True),
    # newlines and tabs: runs of 1..31 are user-defined tokens too
    ("a\nb", True),
    ("\n" * 35 + "end", True),
    ("\r\n\r\n", True),
    ("\tindented\n\t\tdouble\n" + "\t" * 33 + "deep", True),
    ("a \t b\t \tc", True),
    (" \n \n ", True),
    # emoji and CJK
    ("🦙🦙🦙 llamas", True),
    ("👩🏽‍💻 writes code 🧑‍🚀", True),
    ("中文分词测试，包括标点符号。", True),
    ("日本語の文章とカタカナ、ひらがな。", True),
    ("한국어 문장입니다.", True),
    # characters that are not in the vocabulary (filled in by byte_fallback_case())
    # control-token text, with parse_special on and off
    ("<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", True),
    ("<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", False),
    ("<bos>text<eos>", True),
    ("<bos>text<eos>", False),
    ("<pad><unk><mask>[multimodal]", True),
    ("<pad><unk><mask>[multimodal]", False),
    ("<unused0><unused99> <unused6241>", True),
    ("<unused0><unused99> <unused6241>", False),
    ("<start_of_image>pixels<end_of_image>", False),
    ("<table><tr><td>x</td></tr></table>", False),
    ("<s>strike</s> and <b>bold</b>", True),
    ("<s>strike</s> and <b>bold</b>", False),
    ("<0x41><0x0A> literal byte-token text", True),
    ("<0x41><0x0A> literal byte-token text", False),
    ("\u2581already\u2581escaped \u2581", True),
    ("<start_of_turn", True),
    ("<<start_of_turn>>", True),
    # very long words
    ("Pneumonoultramicroscopicsilicovolcanoconiosis", True),
    ("x" * 500, True),
    ("abc" * 300, True),
    ("supercalifragilisticexpialidocious" * 20, True),
    ("1234567890" * 50, True),
    ("https://example.com/" + "very-long-path-segment/" * 30 + "index.html", True),
    ("漢" * 200, True),
]

# Scripts where a 262k SentencePiece vocabulary still misses characters; the first ones that need
# byte tokens make one case.
BYTE_FALLBACK_CANDIDATES = (
    [0x13000 + i for i in range(0, 0x400, 7)]       # Egyptian hieroglyphs
    + [0x12000 + i for i in range(0, 0x380, 5)]     # cuneiform
    + [0x1D100 + i for i in range(0, 0xE0, 3)]      # musical symbols
    + [0xE000, 0xF8FF, 0xF0000, 0x10FFFD]           # private use
    + [0xE0041, 0xE007F]                            # tag characters
    + [0x10380 + i for i in range(0, 0x20, 2)]      # Ugaritic
    + [0xA66E, 0x2E3B, 0x1F9FF, 0x1FAE8, 0x2EBF0, 0x31EF, 0x11F00]
)
N_BYTE_FALLBACK = 12

# Gemma 3's chat template, as published in google/gemma-3-*-it tokenizer_config.json.
GEMMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate "
    "user/assistant/user/assistant/...\") }}\n"
    "    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n"
    "                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "    {%- else -%}\n"
    "        {{ raise_exception(\"Invalid content type\") }}\n"
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\\n'}}\n"
    "{%- endif -%}\n"
)

CHATS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"}],
    [{"role": "system", "content": "  Padded system prompt.\n"},
     {"role": "user", "content": "  padded user text \n"}],
    [{"role": "system", "content": ""}, {"role": "user", "content": "empty system"}],
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": " Hello! How can I help?\n"},
     {"role": "user", "content": "Tell me a joke about cats.\nMake it short."}],
    [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "One?"},
     {"role": "assistant", "content": "Un."}, {"role": "user", "content": "Two?"}],
    [{"role": "user", "content": "\u00a0\u3000unicode spaces around\u2028"}],
    [{"role": "user", "content": "<start_of_turn> inside text"}],
]

# Texts tokenized with add_bos=True.
BOS_CASES = [("Hello world", True), ("", True), ("<bos>already", True), ("<bos>already", False)]


def find_model(arg):
    cands = [arg, os.environ.get("FASA_MODEL_GEMMA3")]
    home = os.environ.get("FASA_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "fasa")
    cands.append(os.path.join(home, "models", "gemma3-270m", MODEL_FILE))
    for c in cands:
        if c and os.path.exists(c):
            return c
    sys.exit("Gemma 3 GGUF not found; pass --model")


# --- a metadata-only GGUF copy with one boolean changed --------------------------------------

_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
           12: "d"}


def _skip_value(data, off, vtype):
    if vtype == 8:
        (n,) = struct.unpack_from("<Q", data, off)
        return off + 8 + n
    if vtype == 9:
        atype, n = struct.unpack_from("<IQ", data, off)
        off += 12
        if atype in _SCALAR:
            return off + n * struct.calcsize("<" + _SCALAR[atype])
        for _ in range(n):
            off = _skip_value(data, off, atype)
        return off
    return off + struct.calcsize("<" + _SCALAR[vtype])


def write_bool_variant(src, dst, key, value):
    """Copies src's header and metadata (no tensors) to dst with `key` set to bool `value`."""
    with open(src, "rb") as f:
        data = f.read(256 << 20)
    magic, version, _n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF", src
    off = 24
    kvs = []
    for _ in range(n_kv):
        start = off
        (klen,) = struct.unpack_from("<Q", data, off)
        name = data[off + 8:off + 8 + klen].decode()
        off += 8 + klen
        (vtype,) = struct.unpack_from("<I", data, off)
        off = _skip_value(data, off + 4, vtype)
        if name != key:
            kvs.append(data[start:off])
    kb = key.encode()
    kvs.append(struct.pack("<Q", len(kb)) + kb + struct.pack("<I?", 7, value))
    out = struct.pack("<4sIQQ", b"GGUF", version, 0, len(kvs)) + b"".join(kvs)
    out += b"\0" * (-len(out) % 32)
    with open(dst, "wb") as f:
        f.write(out)


# --- llama.cpp through ctypes ----------------------------------------------------------------

class Vocab:
    def __init__(self, llama_cpp, path):
        self.lc = llama_cpp
        self.llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)

    def tokenize(self, text, add_bos, special):
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=special)

    def detokenize(self, ids, special):
        """llama_detokenize(remove_special=False): what a client of the C API gets."""
        arr = (self.lc.llama_token * max(1, len(ids)))(*ids)
        size = 64 + 64 * len(ids)
        buf = ctypes.create_string_buffer(size)
        n = self.lc.llama_detokenize(self.vocab, arr, len(ids), buf, size, False, special)
        assert 0 <= n <= size, n
        return buf.raw[:n]

    def piece(self, token, special):
        buf = ctypes.create_string_buffer(256)
        n = self.lc.llama_token_to_piece(self.vocab, token, buf, 256, 0, special)
        assert 0 <= n <= 256, n
        return buf.raw[:n]

    def n_vocab(self):
        return self.lc.llama_vocab_n_tokens(self.vocab)


def byte_fallback_case(v):
    byte_attr = 32  # LLAMA_TOKEN_ATTR_BYTE
    chars = []
    for cp in BYTE_FALLBACK_CANDIDATES:
        ids = v.tokenize(chr(cp), False, False)
        if any(v.lc.llama_vocab_get_attr(v.vocab, i) & byte_attr for i in ids):
            chars.append(chr(cp))
        if len(chars) == N_BYTE_FALLBACK:
            break
    if len(chars) < 4:
        sys.exit("too few characters need byte fallback: %r" % chars)
    return "bytes: " + " ".join(chars) + " " + "".join(chars[:3]) + "x"


def tokenize_cases(v, cases, pieces):
    out = []
    for text, special in cases:
        ids = v.tokenize(text, False, special)
        for i in ids:
            if i not in pieces:
                pieces[i] = v.piece(i, True).hex()
        out.append({
            "text": text,
            "parse_special": special,
            "ids": ids,
            "detok": v.detokenize(ids, False).decode("utf-8"),
            "detok_special": v.detokenize(ids, True).decode("utf-8"),
        })
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--out",
                    default=os.path.join(REPO, "tests/data/tokenizer/gemma3_goldens.json"))
    ap.add_argument("--corpus",
                    default=os.path.join(os.environ.get("FASA_HOME", os.path.expanduser("~/.cache/fasa")), "texts", "austen_persuasion.txt"))
    args = ap.parse_args()

    import jinja2
    import jinja2.sandbox
    import llama_cpp

    model = find_model(args.model)
    v = Vocab(llama_cpp, model)
    lc, vocab = llama_cpp, v.vocab
    cases_in = list(SMOLLM2_CASES) + GEMMA_CASES + [(byte_fallback_case(v), True)]

    pieces = {}
    cases = tokenize_cases(v, cases_in, pieces)
    bos_cases = [{"text": t, "parse_special": sp, "ids": v.tokenize(t, True, sp)}
                 for t, sp in BOS_CASES]

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gemma3-space-prefix.gguf")
        write_bool_variant(model, path, "tokenizer.ggml.add_space_prefix", True)
        sp = Vocab(llama_cpp, path)
        prefix_cases = tokenize_cases(sp, cases_in, {})
        for c in prefix_cases:
            c["ids_add_bos"] = sp.tokenize(c["text"], True, c["parse_special"])
            c["detok_add_bos"] = sp.detokenize(c["ids_add_bos"], False).decode("utf-8")
        del sp

    env = jinja2.sandbox.ImmutableSandboxedEnvironment()
    tmpl = env.from_string(GEMMA3_CHAT_TEMPLATE)
    bos_text = v.piece(lc.llama_vocab_bos(vocab), True).decode()
    chats = []
    for messages in CHATS:
        for gen in (True, False):
            try:
                text = tmpl.render(messages=messages, add_generation_prompt=gen,
                                   bos_token=bos_text)
            except jinja2.TemplateError as e:
                sys.exit("the template rejects %r: %s" % (messages, e))
            assert text.startswith(bos_text), text
            body = text[len(bos_text):]  # fasa's tokenizer adds BOS; the renderer does not
            ids = v.tokenize(body, True, True)
            assert ids == v.tokenize(text, False, True), messages
            chats.append({"messages": messages, "add_generation_prompt": gen,
                          "jinja_text": text, "text": body, "ids": ids})

    n_vocab = v.n_vocab()
    eog = [i for i in range(n_vocab) if lc.llama_vocab_is_eog(vocab, i)]
    attrs = {}
    for i in range(n_vocab):
        a = lc.llama_vocab_get_attr(vocab, i)
        attrs[a] = attrs.get(a, 0) + 1

    corpus = None
    if args.corpus and os.path.exists(args.corpus):
        with open(args.corpus, "rb") as f:
            data = f.read()
        ids = v.llm.tokenize(data, add_bos=False, special=False)
        corpus = {"file": os.path.basename(args.corpus),
                  "file_sha256": hashlib.sha256(data).hexdigest(),
                  "n_tokens": len(ids), "ids_fnv1a64_int32le": ids_fnv1a64(ids),
                  "first_ids": ids[:64], "last_ids": ids[-64:]}

    out = {
        "generator": "scripts/dev/make_gemma3_tokenizer_goldens.py",
        "reference": "llama.cpp via llama-cpp-python %s; Jinja2 %s" % (llama_cpp.__version__,
                                                                       jinja2.__version__),
        "model": os.path.basename(model),
        "n_vocab": n_vocab,
        "bos_id": lc.llama_vocab_bos(vocab),
        "eos_id": lc.llama_vocab_eos(vocab),
        "pad_id": lc.llama_vocab_pad(vocab),
        "add_bos": bool(lc.llama_vocab_get_add_bos(vocab)),
        "eog_ids": eog,
        "attr_counts": {str(k): n for k, n in sorted(attrs.items())},
        "n_smollm2_cases": len(SMOLLM2_CASES),
        "cases": cases,
        "bos_cases": bos_cases,
        "space_prefix_cases": prefix_cases,
        "pieces_hex": {str(k): p for k, p in sorted(pieces.items())},
        "chat_template": GEMMA3_CHAT_TEMPLATE,
        "chats": chats,
        "corpus": corpus,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote %s: %d cases (%d from SmolLM2), %d chats, %d pieces, eog %s"
          % (args.out, len(cases), len(SMOLLM2_CASES), len(chats), len(pieces), eog))


if __name__ == "__main__":
    main()
