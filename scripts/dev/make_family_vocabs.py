#!/usr/bin/env python3
"""Writes tests/data/tokenizer/families/<kind>.json: small synthetic vocabularies of the tokenizer
kinds of the model families the engine supports but whose files the tests cannot download
(Llama 3.x, Qwen 2.5/3, DeepSeek-R1-Distill-Qwen, Mistral v0.3, Phi-3).

Development-time only; plain Python 3, no packages:
  python3 scripts/dev/make_family_vocabs.py [--text ~/.cache/fasa/texts/austen_emma.txt]

Deterministic: the same text gives byte-identical files (sorted counts, ties broken by the pair's
text). The text is only read here; the JSON files are checked in and the tests never need it.

Each file holds what llama.cpp's converter (convert_hf_to_gguf.py, gguf-py SpecialVocab) writes
for that family's tokenizer -- tokenizer.ggml.model/pre, tokens, token_type, merges or scores,
special ids, add_bos_token, the family's real chat template, general.architecture/name -- with a
vocabulary learnt here instead of the real one:
  * byte-level BPE kinds (llama-bpe, qwen2, deepseek-r1-qwen): the 256 byte symbols, then 1100
    merges learnt from the text's words, then merges that make BPE_EXTRA_WORDS single tokens
    (digit groups, contractions in both cases, é ß 中文 emoji), then "orphan" tokens no merge can build (only Llama 3's
    ignore_merges emits them), then the family's special tokens with their real token types;
  * SentencePiece kinds (mistral-v0.3, phi3): <unk> <s> </s>, the family's control tokens,
    <0x00>..<0xFF>, 900 pieces learnt on "▁"-prefixed words (score = -merge order, so merge
    priority follows the score), every prefix of SPM_EXTRA_WORDS, single characters of the text (never ß, 中, 文 or emoji, so
    those go through byte fallback), and "▁▁"/"▁▁▁▁" for indentation.
"""
import argparse
import collections
import json
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(REPO, "tests", "data", "tokenizer", "families")
TEMPLATE_DIR = os.path.join(OUT_DIR, "templates")

N_BPE_MERGES = 1100
N_SPM_MERGES = 900
N_WORDS = 2500  # most frequent distinct words trained on

# Words made single tokens after training (merges appended to reach them), so the vocabularies
# have what the pre-tokenizers disagree on: digit groups (Llama 3 splits 1-3 digits, Qwen one),
# contractions in both cases (Llama 3's and Qwen's are case-insensitive), punctuation with
# newlines, and non-ASCII words (é ß 中文 emoji as byte-level symbols).
BPE_EXTRA_WORDS = [
    "12", "123", "202", "024", "000", "456", "789", "999", "45",
    "'s", "'t", "'re", "'ve", "'ll", "'d", "'m", "'S", "'T", "'RE", "'VE", "'LL", "'D", "'M",
    "\n\n", " \n", ".\n", ".\n\n", ":\n", "\"My", "(x", " (", "  ", "    ",
    " Hello", " world", "Hello", " café", " naïve", " Straße", " groß", "中文", " 中文", "你好",
    "世界", "😀", " 🎉", " don", "DON", " DON", "LL", "AMA",
]
SPM_EXTRA_WORDS = ["▁Hello", "▁world", "▁café", "▁naïve", "▁résumé", "▁code", "▁def", "▁main",
                   "▁return", "▁INST", "INST", "▁don", "▁DON"]

# Tokens no merge builds: only a tokenizer that looks up whole words first (ignore_merges) emits
# them as one token.
BPE_ORPHANS = ["Ġxyzzy", "Ġplugh", "quux"]

BYTE_CHARS = None


def bytes_to_unicode():
    """GPT-2's byte -> printable character table."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def train_merges(word_counts, n_merges):
    """Plain BPE: repeatedly merge the most frequent adjacent pair (ties: smallest pair text).
    word_counts: {tuple of symbols: count}. Returns the merges in order."""
    words = {w: c for w, c in word_counts.items() if len(w) > 1}
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        merges.append(best)
        joined = best[0] + best[1]
        new_words = {}
        for w, c in words.items():
            if best[0] not in w:
                new_words[w] = new_words.get(w, 0) + c
                continue
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == best[0] and w[i + 1] == best[1]:
                    out.append(joined)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            t = tuple(out)
            if len(t) > 1:
                new_words[t] = new_words.get(t, 0) + c
        words = new_words
    return merges


def training_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def apply_merges(symbols, ranks):
    """BPE on one word with the merges so far (lowest rank first, leftmost on ties)."""
    symbols = list(symbols)
    while True:
        best = None
        for i in range(len(symbols) - 1):
            r = ranks.get((symbols[i], symbols[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return symbols
        i = best[1]
        symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]


def add_word_merges(merges, word_symbols):
    """Appends the merges that make `word_symbols` one token after the existing merges ran."""
    ranks = {m: i for i, m in enumerate(merges)}
    symbols = apply_merges(word_symbols, ranks)
    while len(symbols) > 1:
        pair = (symbols[0], symbols[1])
        if pair not in ranks:
            ranks[pair] = len(merges)
            merges.append(pair)
        symbols[0:2] = [symbols[0] + symbols[1]]


def top_words(pieces):
    counts = collections.Counter(pieces)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:N_WORDS]


# A rough byte-level pre-split for training (the real one runs in llama.cpp when tokenizing).
BPE_WORD_RE = re.compile(r"'(?:[sStTmMdD]|[rR][eE]|[vV][eE]|[lL][lL])| ?[^\W\d_]+|\d{1,3}"
                         r"| ?[^\s\w]+|\s+")


def bpe_vocab():
    table = bytes_to_unicode()
    text = training_text(ARGS.text)
    counts = {}
    for word, c in top_words(BPE_WORD_RE.findall(text)):
        sym = tuple(table[b] for b in word.encode("utf-8"))
        counts[sym] = counts.get(sym, 0) + c
    merges = train_merges(counts, N_BPE_MERGES)
    for word in BPE_EXTRA_WORDS:
        add_word_merges(merges, [table[b] for b in word.encode("utf-8")])
    tokens = [table[b] for b in range(256)]
    seen = set(tokens)
    for a, b in merges:
        if a + b not in seen:
            seen.add(a + b)
            tokens.append(a + b)
    for t in BPE_ORPHANS:
        assert t not in seen, t
        tokens.append(t)
    return tokens, [a + " " + b for a, b in merges]


SPM_SPACE = "\u2581"
SPM_WORD_RE = re.compile(r" ?[^ ]+| +")
# Characters that must go through byte fallback (<0xXX> tokens).
SPM_NO_CHAR = set("ß中文国你好世界😀🎉")


def spm_vocab():
    text = training_text(ARGS.text)
    counts = {}
    words = []
    for line in text.split("\n"):
        # SentencePiece sees "▁" for every space; each word keeps the space before it.
        words += SPM_WORD_RE.findall(" " + line)
    for word, c in top_words([w.replace(" ", SPM_SPACE) for w in words]):
        sym = tuple(ch for ch in word)
        if any(ch in SPM_NO_CHAR for ch in sym):
            continue
        counts[sym] = counts.get(sym, 0) + c
    merges = train_merges(counts, N_SPM_MERGES)
    pieces = []
    seen = set()
    for a, b in merges:
        if a + b not in seen:
            seen.add(a + b)
            pieces.append(a + b)
    char_counts = collections.Counter(ch for ch in text if ch not in SPM_NO_CHAR and
                                      ch not in "\n\r" and ch != " ")
    chars = [ch for ch, _ in sorted(char_counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    chars = [SPM_SPACE] + [c for c in chars if c != SPM_SPACE]
    for word in SPM_EXTRA_WORDS:  # every prefix a piece, scored below the learnt ones
        for k in range(2, len(word) + 1):
            if word[:k] not in seen:
                pieces.append(word[:k])
                seen.add(word[:k])
    for extra in (SPM_SPACE * 2, SPM_SPACE * 4):
        if extra not in seen:
            pieces.append(extra)
            seen.add(extra)
    return pieces, [c for c in chars if c not in seen]


NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def kv(key, typ, value):
    return {"key": key, "type": typ, "value": value}


def read_template(name):
    with open(os.path.join(TEMPLATE_DIR, name), encoding="utf-8") as f:
        return f.read()


def make_bpe(kind, arch, name, pre, specials, ids, add_bos, template):
    """specials: [(text, type)] appended after the learnt tokens; ids: {key suffix: text}."""
    tokens, merges = bpe_vocab()
    types = [NORMAL] * len(tokens)
    for text, typ in specials:
        tokens.append(text)
        types.append(typ)
    index = {t: i for i, t in enumerate(tokens)}
    assert len(index) == len(tokens)
    meta = [kv("general.architecture", "string", arch), kv("general.name", "string", name),
            kv("tokenizer.ggml.model", "string", "gpt2"), kv("tokenizer.ggml.pre", "string", pre)]
    for key, text in ids.items():
        meta.append(kv("tokenizer.ggml.%s_token_id" % key, "u32", index[text]))
    meta.append(kv("tokenizer.ggml.add_bos_token", "bool", add_bos))
    meta.append(kv("tokenizer.ggml.add_eos_token", "bool", False))
    meta.append(kv("tokenizer.chat_template", "string", read_template(template)))
    return {"kind": kind, "generator": "scripts/dev/make_family_vocabs.py", "metadata": meta,
            "tokens": tokens, "token_type": types, "merges": merges}


def make_spm(kind, arch, name, head, tail, ids, add_bos, template):
    """head: [(text, type)] before the byte tokens (after <unk> <s> </s>); tail: after the
    pieces, with score -1000 (how the converter scores added tokens)."""
    pieces, chars = spm_vocab()
    tokens = ["<unk>", "<s>", "</s>"]
    types = [UNKNOWN, CONTROL, CONTROL]
    scores = [0.0, 0.0, 0.0]
    for text, typ in head:
        tokens.append(text)
        types.append(typ)
        scores.append(0.0)
    for b in range(256):
        tokens.append("<0x%02X>" % b)
        types.append(BYTE)
        scores.append(0.0)
    for i, p in enumerate(pieces):
        tokens.append(p)
        types.append(NORMAL)
        scores.append(float(-i))
    for i, c in enumerate(chars):
        tokens.append(c)
        types.append(NORMAL)
        scores.append(float(-len(pieces) - i))
    for text, typ in tail:
        tokens.append(text)
        types.append(typ)
        scores.append(-1000.0)
    index = {t: i for i, t in enumerate(tokens)}
    assert len(index) == len(tokens)
    meta = [kv("general.architecture", "string", arch), kv("general.name", "string", name),
            kv("tokenizer.ggml.model", "string", "llama"),
            kv("tokenizer.ggml.pre", "string", "default")]
    for key, text in ids.items():
        meta.append(kv("tokenizer.ggml.%s_token_id" % key, "u32", index[text]))
    meta.append(kv("tokenizer.ggml.add_bos_token", "bool", add_bos))
    meta.append(kv("tokenizer.ggml.add_eos_token", "bool", False))
    meta.append(kv("tokenizer.chat_template", "string", read_template(template)))
    return {"kind": kind, "generator": "scripts/dev/make_family_vocabs.py", "metadata": meta,
            "tokens": tokens, "token_type": types, "scores": scores}


def families():
    llama3_specials = [("<|begin_of_text|>", CONTROL), ("<|end_of_text|>", CONTROL),
                       ("<|reserved_special_token_0|>", CONTROL),
                       ("<|reserved_special_token_1|>", CONTROL),
                       ("<|finetune_right_pad_id|>", CONTROL),
                       ("<|reserved_special_token_2|>", CONTROL),
                       ("<|start_header_id|>", CONTROL), ("<|end_header_id|>", CONTROL),
                       ("<|eom_id|>", CONTROL), ("<|eot_id|>", CONTROL),
                       ("<|python_tag|>", CONTROL)]
    # Qwen2.5/Qwen3 added tokens: "special": true ones are CONTROL, the others (tool call and
    # think tags) USER_DEFINED.
    qwen_specials = [("<|endoftext|>", CONTROL), ("<|im_start|>", CONTROL),
                     ("<|im_end|>", CONTROL), ("<|object_ref_start|>", CONTROL),
                     ("<|object_ref_end|>", CONTROL), ("<|vision_pad|>", CONTROL),
                     ("<tool_call>", USER_DEFINED), ("</tool_call>", USER_DEFINED),
                     ("<|fim_prefix|>", USER_DEFINED), ("<|fim_middle|>", USER_DEFINED),
                     ("<|fim_suffix|>", USER_DEFINED), ("<|fim_pad|>", USER_DEFINED),
                     ("<|repo_name|>", USER_DEFINED), ("<|file_sep|>", USER_DEFINED),
                     ("<tool_response>", USER_DEFINED), ("</tool_response>", USER_DEFINED),
                     ("<think>", USER_DEFINED), ("</think>", USER_DEFINED)]
    # DeepSeek-R1-Distill-Qwen: Qwen2.5's vocabulary with its first added tokens renamed; the
    # sentence tokens are special (CONTROL), User/Assistant and the think tags are not.
    bos, eos = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
    r1_specials = [(eos, CONTROL), ("<｜User｜>", USER_DEFINED),
                   ("<｜Assistant｜>", USER_DEFINED), (bos, CONTROL),
                   ("<|EOT|>", USER_DEFINED), ("<think>", USER_DEFINED),
                   ("</think>", USER_DEFINED), ("<|quad_start|>", CONTROL),
                   ("<|fim_prefix|>", USER_DEFINED), ("<|fim_suffix|>", USER_DEFINED),
                   ("<|fim_middle|>", USER_DEFINED)]
    mistral_head = [("[INST]", CONTROL), ("[/INST]", CONTROL), ("[TOOL_CALLS]", CONTROL),
                    ("[AVAILABLE_TOOLS]", CONTROL), ("[/AVAILABLE_TOOLS]", CONTROL),
                    ("[TOOL_RESULTS]", CONTROL), ("[/TOOL_RESULTS]", CONTROL)] + \
                   [("[control_%d]" % i, CONTROL) for i in range(8, 16)]
    phi3_tail = [("<|endoftext|>", CONTROL), ("<|assistant|>", CONTROL),
                 ("<|placeholder1|>", CONTROL), ("<|placeholder2|>", CONTROL),
                 ("<|placeholder3|>", CONTROL), ("<|placeholder4|>", CONTROL),
                 ("<|system|>", CONTROL), ("<|end|>", CONTROL), ("<|placeholder5|>", CONTROL),
                 ("<|placeholder6|>", CONTROL), ("<|user|>", CONTROL)]
    out = {
        "llama-bpe": make_bpe("llama-bpe", "llama", "Llama 3.1 8B Instruct", "llama-bpe",
                              llama3_specials,
                              {"bos": "<|begin_of_text|>", "eos": "<|eot_id|>"}, True,
                              "llama3.1.jinja"),
        "qwen2": make_bpe("qwen2", "qwen3", "Qwen3 0.6B", "qwen2", qwen_specials,
                          {"bos": "<|endoftext|>", "eos": "<|im_end|>",
                           "padding": "<|endoftext|>"}, False, "qwen3.jinja"),
        "deepseek-r1-qwen": make_bpe("deepseek-r1-qwen", "qwen2",
                                     "DeepSeek R1 Distill Qwen 1.5B", "deepseek-r1-qwen",
                                     r1_specials, {"bos": bos, "eos": eos, "padding": eos}, True,
                                     "deepseek-r1-distill-qwen.jinja"),
        "mistral-v0.3": make_spm("mistral-v0.3", "llama", "Mistral 7B Instruct v0.3",
                                 mistral_head, [], {"bos": "<s>", "eos": "</s>", "unknown": "<unk>"},
                                 True, "mistral-v0.3.jinja"),
        # Phi-3's added tokens (<unk> <s> </s> included) are "special", so CONTROL. general.name
        # matters: llama.cpp strips the whitespace after Phi-3's special tokens when the name
        # says "phi3" or "phi-3" (microsoft's own Phi-3-mini-4k-instruct GGUF: "Phi3").
        "phi3": make_spm("phi3", "phi3", "Phi3", [], phi3_tail,
                         {"bos": "<s>", "eos": "<|endoftext|>", "unknown": "<unk>",
                          "padding": "<|endoftext|>"}, False, "phi3.5.jinja"),
    }
    out["phi3"]["token_type"][0] = CONTROL  # listed in tokenizer.json's added_tokens as special
    return out


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--text", default=os.path.expanduser("~/.cache/fasa/texts/austen_emma.txt"))
    ARGS = p.parse_args()
    os.makedirs(OUT_DIR, exist_ok=True)
    for kind, doc in families().items():
        path = os.path.join(OUT_DIR, kind + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=0)
            f.write("\n")
        print("%s: %d tokens, %d bytes" % (path, len(doc["tokens"]), os.path.getsize(path)))


if __name__ == "__main__":
    main()
