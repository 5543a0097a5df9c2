#!/usr/bin/env python3
"""Random-weight GGUF files of the paper's model families (docs/MODELS.md "Random-weight family
files"), written with the `gguf` package's GGUFWriter.

Each file carries the metadata keys, tensor names and tensor types that llama.cpp's
convert_hf_to_gguf.py (default outtype: F16 matrices, F32 norms / biases / RoPE factors) writes
for the real model, with the real head_dim, GQA ratio, RoPE base and RoPE scaling settings, but
2 layers, small widths, a small vocabulary and a low trained/original context. Weights are small
integers times a power of two, exact in F16 and drawn from splitmix64 seeded by (family seed,
tensor name), so the C++ twin (tests/support/family_model.cpp, `write_family_model`) writes the
same bytes: tests/model/family_golden_test.cpp checks that against the sha256 recorded here.

Development-time only (PyPI `gguf`, `numpy`; versions used: gguf 0.19.0, numpy 2.4.6):
  python3 scripts/dev/make_family_models.py OUT_DIR [--seed 1] [--family NAME ...]
"""
import argparse
import hashlib
import math
import os
import sys

import numpy as np
import gguf

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# One entry per family: the real model's settings, sizes cut down (docs/MODELS.md lists the
# differences). head_dim_key: the converter writes attention.key_length/value_length (the HF
# config has head_dim). vocab: "gpt2" (byte-level BPE) or "llama" (SentencePiece).
FAMILIES = {
    "llama3": dict(
        base="Llama-3.1-8B-Instruct", arch="llama", n_layer=2, d_model=512, n_head=4, n_kv=1,
        head_dim=128, head_dim_key=False, d_ff=1024, ctx=8192, rope_base=500000.0, eps=1e-5,
        tied=False, vocab="gpt2", pre="llama-bpe", n_vocab=512,
        rope=dict(type="llama3", factor=8.0, low=1.0, high=4.0, orig=512)),
    "llama3.2": dict(
        base="Llama-3.2-3B-Instruct", arch="llama", n_layer=2, d_model=384, n_head=3, n_kv=1,
        head_dim=128, head_dim_key=True, d_ff=1024, ctx=8192, rope_base=500000.0, eps=1e-5,
        tied=True, vocab="gpt2", pre="llama-bpe", n_vocab=512,
        rope=dict(type="llama3", factor=32.0, low=1.0, high=4.0, orig=256)),
    "mistral": dict(
        base="Mistral-7B-Instruct-v0.3", arch="llama", n_layer=2, d_model=512, n_head=4, n_kv=1,
        head_dim=128, head_dim_key=False, d_ff=1024, ctx=8192, rope_base=1000000.0, eps=1e-5,
        tied=False, vocab="llama", pre="default", n_vocab=512, rope=None),
    "qwen2.5-yarn": dict(
        base="Qwen2.5-7B-Instruct", arch="qwen2", n_layer=2, d_model=896, n_head=7, n_kv=1,
        head_dim=128, head_dim_key=False, d_ff=1024, ctx=2048, rope_base=1000000.0, eps=1e-6,
        tied=False, vocab="gpt2", pre="qwen2", n_vocab=512,
        rope=dict(type="yarn", factor=4.0, orig=2048)),
    "deepseek-r1-qwen": dict(
        base="DeepSeek-R1-Distill-Qwen-7B", arch="qwen2", n_layer=2, d_model=896, n_head=7,
        n_kv=1, head_dim=128, head_dim_key=False, d_ff=1024, ctx=8192, rope_base=10000.0,
        eps=1e-6, tied=False, vocab="gpt2", pre="deepseek-r1-qwen", n_vocab=512, rope=None),
    "qwen3": dict(
        base="Qwen3-8B", arch="qwen3", n_layer=2, d_model=256, n_head=4, n_kv=1, head_dim=128,
        head_dim_key=True, d_ff=768, ctx=8192, rope_base=1000000.0, eps=1e-6, tied=False,
        vocab="gpt2", pre="qwen2", n_vocab=512, rope=None),
    "phi3": dict(
        base="Phi-3.5-mini-instruct", arch="phi3", n_layer=2, d_model=384, n_head=4, n_kv=4,
        head_dim=96, head_dim_key=False, d_ff=768, ctx=8192, rope_base=10000.0, eps=1e-5,
        tied=False, vocab="llama", pre="default", n_vocab=512,
        rope=dict(type="longrope", orig=256), sliding_window=262144),
}

# Special tokens (text, type) appended after the ordinary tokens, in the real vocabulary's order;
# ids, add_bos/add_eos as the converter writes them for the real model.
CONTROL, USER_DEFINED, NORMAL, UNUSED, BYTE, UNKNOWN = 3, 4, 1, 5, 6, 2
LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                   "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                   "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                   "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
                 "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
                 "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
                 "<|image_pad|>", "<|video_pad|>"]
QWEN_ADDED = ["<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
              "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"]
QWEN3_ADDED = QWEN_ADDED + ["<tool_response>", "</tool_response>", "<think>", "</think>"]
DEEPSEEK_SPECIALS = ["<｜end▁of▁sentence｜>", "<|im_start|>", "<|im_end|>",
                     "<｜begin▁of▁sentence｜>", "<|object_ref_start|>", "<|object_ref_end|>",
                     "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
                     "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>",
                     "<|video_pad|>"]
DEEPSEEK_ADDED = ["<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
                  "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<｜User｜>",
                  "<｜Assistant｜>", "<think>", "</think>", "<｜tool▁calls▁begin｜>",
                  "<｜tool▁calls▁end｜>"]
MISTRAL_CONTROL = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]",
                   "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]"]
PHI3_ADDED = ["<|endoftext|>", "<|assistant|>", "<|placeholder1|>", "<|placeholder2|>",
              "<|placeholder3|>", "<|placeholder4|>", "<|system|>", "<|end|>",
              "<|placeholder5|>", "<|placeholder6|>", "<|user|>"]
MERGES = ["Ġ t", "Ġ a", "h e", "i n", "r e", "o n", "Ġt he", "e r", "Ġ s", "a t", "Ġ w", "Ġ o",
          "e n", "Ġ c", "i t", "i s"]
PIECES = ["▁t", "▁a", "he", "in", "re", "on", "▁the", "er", "▁s", "at", "▁w", "▁o", "en", "▁c",
          "it", "is"]


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def tensor_seed(family_seed, name):
    h = 0xCBF29CE484222325  # FNV-1a 64 of the name
    for b in name.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & MASK
    return mix((family_seed ^ h) & MASK)


def draws(seed, n):
    """splitmix64: the i-th draw is mix(seed + (i + 1) * GAMMA), as uint64."""
    i = np.arange(1, n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + i * np.uint64(GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def ints(seed, n, r):
    """n integers in [-r, r]: (draw >> 32) mod (2r + 1) - r."""
    return ((draws(seed, n) >> np.uint64(32)) % np.uint64(2 * r + 1)).astype(np.int64) - r


def shift_for(fan_in):
    """Matrix entries are k * 2^-s, k in [-127, 127]: std ~ 1/sqrt(fan_in) within a factor 1.5."""
    return 6 + ((fan_in - 1).bit_length() + 1) // 2


def matrix(fseed, name, ne, extra_gain_log2=0):
    """F16 [ne[1], ne[0]] with entries k * 2^-(shift(ne[0]) - extra_gain_log2), exact in F16."""
    s = shift_for(ne[0]) - extra_gain_log2
    k = ints(tensor_seed(fseed, name), ne[0] * ne[1], 127)
    return (k.astype(np.float64) * 2.0 ** -s).astype(np.float16).reshape(ne[1], ne[0])


def norm(fseed, name, n):
    """F32 [n]: 1 + k/256, k in [-31, 31]."""
    k = ints(tensor_seed(fseed, name), n, 31)
    return (1.0 + k.astype(np.float64) / 256.0).astype(np.float32)


def bias(fseed, name, n):
    """F32 [n]: k/64, k in [-31, 31]."""
    k = ints(tensor_seed(fseed, name), n, 31)
    return (k.astype(np.float64) / 64.0).astype(np.float32)


def llama3_rope_factors(head_dim, base, factor, low, high, orig):
    """As convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors, in float64, then F32."""
    out = []
    low_wavelen = orig / low
    high_wavelen = orig / high
    for i in range(0, head_dim, 2):
        freq = 1.0 / math.pow(base, i / head_dim)
        wavelen = 2.0 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (orig / wavelen - low) / (high - low)
            out.append(1.0 / ((1.0 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def longrope_factors(n):
    """Phi-3-style LongRoPE factors [n] (the real lists are not reproduced: shapes alike, values
    made up): short rising 1 -> 2, long rising 1 -> 33 over the dimension pairs, both exact."""
    short = [1.0 + (i * i) / ((n - 1) * (n - 1)) for i in range(n)]
    long = [1.0 + 32.0 * (i * i) / ((n - 1) * (n - 1)) for i in range(n)]
    return np.array(long, dtype=np.float32), np.array(short, dtype=np.float32)


def byte_unicode_order():
    """GPT-2's byte -> character map, in the order the real vocabularies list the 256 bytes."""
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def vocab(f, family):
    """(tokens, types, scores or None, merges or None, special ids and flags)."""
    n = f["n_vocab"]
    if f["vocab"] == "gpt2":
        toks = byte_unicode_order() + [m.replace(" ", "") for m in MERGES]
        types = [NORMAL] * len(toks)
        if family in ("llama3", "llama3.2"):
            specials, added = LLAMA3_SPECIALS, []
        elif family == "qwen3":
            specials, added = QWEN_SPECIALS, QWEN3_ADDED
        elif family == "deepseek-r1-qwen":
            specials, added = DEEPSEEK_SPECIALS, DEEPSEEK_ADDED
        else:
            specials, added = QWEN_SPECIALS, QWEN_ADDED
        first = len(toks)
        toks += specials + added
        types += [CONTROL] * len(specials) + [USER_DEFINED] * len(added)
        # The real Qwen/DeepSeek vocabularies mark <think> etc. as added, not special.
        ids = {t: first + i for i, t in enumerate(specials + added)}
        while len(toks) < n:
            toks.append(f"[PAD{len(toks)}]")
            types.append(UNUSED)
        if family in ("llama3", "llama3.2"):
            sp = dict(bos=ids["<|begin_of_text|>"], eos=ids["<|eot_id|>"], add_bos=True,
                      add_eos=False)
        elif family == "deepseek-r1-qwen":
            sp = dict(bos=ids["<｜begin▁of▁sentence｜>"], eos=ids["<｜end▁of▁sentence｜>"],
                      pad=ids["<｜end▁of▁sentence｜>"], add_bos=True, add_eos=False)
        else:  # Qwen2.5, Qwen3: bos = <|endoftext|> (config.json), no BOS added
            sp = dict(bos=ids["<|endoftext|>"], eos=ids["<|im_end|>"], pad=ids["<|endoftext|>"],
                      add_bos=False)
        return toks[:n], types[:n], None, MERGES, sp
    # SentencePiece ("llama"): Mistral v0.3 (control tokens first, then bytes, then pieces),
    # Phi-3 (<unk> <s> </s>, bytes, pieces, then its added tokens after the pieces).
    if family == "mistral":
        toks = list(MISTRAL_CONTROL)
        types = [UNKNOWN] + [CONTROL] * (len(toks) - 1)
    else:
        toks = ["<unk>", "<s>", "</s>"]
        types = [UNKNOWN, CONTROL, CONTROL]
    toks += [f"<0x{b:02X}>" for b in range(256)]
    types += [BYTE] * 256
    scores = [0.0] * len(toks)
    for i, p in enumerate(PIECES):
        toks.append(p)
        types.append(NORMAL)
        scores.append(-float(i + 1))
    if family == "phi3":
        first = n - len(PHI3_ADDED)
        while len(toks) < first:
            toks.append(f"[PAD{len(toks)}]")
            types.append(UNUSED)
            scores.append(-10000.0)
        ids = {t: first + i for i, t in enumerate(PHI3_ADDED)}
        for t in PHI3_ADDED:
            toks.append(t)
            types.append(CONTROL if t in ("<|endoftext|>",) else USER_DEFINED)
            scores.append(-1000.0)
        sp = dict(bos=1, eos=ids["<|endoftext|>"], unk=0, pad=ids["<|endoftext|>"], add_bos=False,
                  add_eos=False)
    else:
        while len(toks) < n:
            toks.append(f"[PAD{len(toks)}]")
            types.append(UNUSED)
            scores.append(-10000.0)
        sp = dict(bos=1, eos=2, unk=0, add_bos=True, add_eos=False)
    return toks, types, scores, None, sp


TEMPLATE_FILES = {"llama3": "llama3.1", "llama3.2": "llama3.2", "mistral": "mistral-v0.3",
                  "qwen2.5-yarn": "qwen2.5", "deepseek-r1-qwen": "deepseek-r1-distill-qwen",
                  "qwen3": "qwen3", "phi3": "phi3.5"}


def chat_template(family):
    """The real template, from the files the C++ generator and the chat-format tests read."""
    path = os.path.join(REPO, "tests/data/tokenizer/families/templates",
                        TEMPLATE_FILES[family] + ".jinja")
    return open(path, encoding="utf-8").read()


def tensors(f, fseed):
    """[(name, array)] in the order the file lists them."""
    a = f["arch"]
    d, hd, nh, nkv, ff, nv = f["d_model"], f["head_dim"], f["n_head"], f["n_kv"], f["d_ff"], f["n_vocab"]
    out = []
    rope = f["rope"]
    if rope and rope["type"] == "llama3":
        out.append(("rope_freqs.weight", llama3_rope_factors(
            hd, f["rope_base"], rope["factor"], rope["low"], rope["high"], rope["orig"])))
    if rope and rope["type"] == "longrope":
        lf, sf = longrope_factors(hd // 2)
        out.append(("rope_factors_long.weight", lf))
        out.append(("rope_factors_short.weight", sf))
    out.append(("token_embd.weight", matrix(fseed, "token_embd.weight", [d, nv], 2)))
    for l in range(f["n_layer"]):
        p = f"blk.{l}."
        out.append((p + "attn_norm.weight", norm(fseed, p + "attn_norm.weight", d)))
        if a == "phi3":
            out.append((p + "attn_qkv.weight", matrix(fseed, p + "attn_qkv.weight", [d, (nh + 2 * nkv) * hd])))
        else:
            out.append((p + "attn_q.weight", matrix(fseed, p + "attn_q.weight", [d, nh * hd])))
            out.append((p + "attn_k.weight", matrix(fseed, p + "attn_k.weight", [d, nkv * hd])))
            out.append((p + "attn_v.weight", matrix(fseed, p + "attn_v.weight", [d, nkv * hd])))
        if a == "qwen2":
            out.append((p + "attn_q.bias", bias(fseed, p + "attn_q.bias", nh * hd)))
            out.append((p + "attn_k.bias", bias(fseed, p + "attn_k.bias", nkv * hd)))
            out.append((p + "attn_v.bias", bias(fseed, p + "attn_v.bias", nkv * hd)))
        if a == "qwen3":
            out.append((p + "attn_q_norm.weight", norm(fseed, p + "attn_q_norm.weight", hd)))
            out.append((p + "attn_k_norm.weight", norm(fseed, p + "attn_k_norm.weight", hd)))
        out.append((p + "attn_output.weight", matrix(fseed, p + "attn_output.weight", [nh * hd, d])))
        out.append((p + "ffn_norm.weight", norm(fseed, p + "ffn_norm.weight", d)))
        if a == "phi3":  # rows [0, d_ff) are the gate, [d_ff, 2 d_ff) the up projection
            out.append((p + "ffn_up.weight", matrix(fseed, p + "ffn_up.weight", [d, 2 * ff])))
        else:
            out.append((p + "ffn_gate.weight", matrix(fseed, p + "ffn_gate.weight", [d, ff])))
            out.append((p + "ffn_up.weight", matrix(fseed, p + "ffn_up.weight", [d, ff])))
        out.append((p + "ffn_down.weight", matrix(fseed, p + "ffn_down.weight", [ff, d])))
    out.append(("output_norm.weight", norm(fseed, "output_norm.weight", d)))
    if not f["tied"]:
        out.append(("output.weight", matrix(fseed, "output.weight", [d, nv], 2)))
    return out


def write(family, seed, path):
    f = FAMILIES[family]
    a = f["arch"]
    w = gguf.GGUFWriter(path, a)
    w.add_string("general.type", "model")
    w.add_string("general.name", f["base"] + " (fasa random-weight family file)")
    rope = f["rope"]
    if a == "phi3":  # Phi3MiniModel.set_gguf_parameters, in its order
        w.add_uint32(f"{a}.context_length", f["ctx"])
        w.add_uint32(f"{a}.rope.scaling.original_context_length", rope["orig"])
        w.add_uint32(f"{a}.embedding_length", f["d_model"])
        w.add_uint32(f"{a}.feed_forward_length", f["d_ff"])
        w.add_uint32(f"{a}.block_count", f["n_layer"])
        w.add_uint32(f"{a}.attention.head_count", f["n_head"])
        w.add_uint32(f"{a}.attention.head_count_kv", f["n_kv"])
        w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", f["eps"])
        w.add_uint32(f"{a}.rope.dimension_count", f["head_dim"])
        w.add_float32(f"{a}.rope.freq_base", f["rope_base"])
        w.add_uint32("general.file_type", 1)
        w.add_uint32(f"{a}.attention.sliding_window", f["sliding_window"])
        scale = f["ctx"] / rope["orig"]
        w.add_float32(f"{a}.rope.scaling.attn_factor",
                      math.sqrt(1 + math.log(scale) / math.log(rope["orig"])))
    else:  # TextModel.set_gguf_parameters (+ LlamaModel's vocab_size, rope.dimension_count)
        w.add_uint32(f"{a}.block_count", f["n_layer"])
        w.add_uint32(f"{a}.context_length", f["ctx"])
        w.add_uint32(f"{a}.embedding_length", f["d_model"])
        w.add_uint32(f"{a}.feed_forward_length", f["d_ff"])
        w.add_uint32(f"{a}.attention.head_count", f["n_head"])
        w.add_uint32(f"{a}.attention.head_count_kv", f["n_kv"])
        if rope and rope["type"] == "yarn":
            w.add_string(f"{a}.rope.scaling.type", "yarn")
            w.add_float32(f"{a}.rope.scaling.factor", rope["factor"])
            w.add_uint32(f"{a}.rope.scaling.original_context_length", rope["orig"])
        w.add_float32(f"{a}.rope.freq_base", f["rope_base"])
        w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", f["eps"])
        if f["head_dim_key"]:
            w.add_uint32(f"{a}.attention.key_length", f["head_dim"])
            w.add_uint32(f"{a}.attention.value_length", f["head_dim"])
        w.add_uint32("general.file_type", 1)
        if a == "llama":
            w.add_uint32(f"{a}.vocab_size", f["n_vocab"])
            w.add_uint32(f"{a}.rope.dimension_count", f["head_dim"])
    toks, types, scores, merges, sp = vocab(f, family)
    w.add_string("tokenizer.ggml.model", f["vocab"])
    w.add_string("tokenizer.ggml.pre", f["pre"])
    w.add_array("tokenizer.ggml.tokens", toks)
    if scores is not None:
        w.add_array("tokenizer.ggml.scores", [float(s) for s in scores])
    w.add_array("tokenizer.ggml.token_type", [int(t) for t in types])
    if merges is not None:
        w.add_array("tokenizer.ggml.merges", merges)
    for k, key in (("bos", "bos"), ("eos", "eos"), ("unk", "unknown"), ("pad", "padding")):
        if k in sp:
            w.add_uint32(f"tokenizer.ggml.{key}_token_id", sp[k])
    for k in ("add_bos", "add_eos"):
        if k in sp:
            w.add_bool(f"tokenizer.ggml.{k}_token", sp[k])
    w.add_string("tokenizer.chat_template", chat_template(family))
    w.add_uint32("general.quantization_version", 2)
    fseed = mix(seed & MASK)
    for name, arr in tensors(f, fseed):
        w.add_tensor(name, np.ascontiguousarray(arr))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES))
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for family in args.family or list(FAMILIES):
        path = os.path.join(args.out_dir, family + ".gguf")
        write(family, args.seed, path)
        print(f"{path} {os.path.getsize(path)} bytes sha256 {sha256_file(path)}")


if __name__ == "__main__":
    main()
