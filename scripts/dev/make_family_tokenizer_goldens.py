#!/usr/bin/env python3
"""Writes tests/data/tokenizer/families/<kind>_goldens.json: llama.cpp's token ids for ~30
discriminating strings per synthetic family vocabulary (tests/data/tokenizer/families/<kind>.json,
made by make_family_vocabs.py), and its detokenizations, and Jinja's renderings of each family's
real chat template for a few conversations.

Development-time only (never a runtime dependency); versions used for the checked-in files:
llama-cpp-python 0.3.36 (llama.cpp vendored), gguf (see "gguf_version" in the output), Jinja2.
  /work/devenv/bin/pip install llama-cpp-python==0.3.36 gguf jinja2
  /work/devenv/bin/python scripts/dev/make_family_tokenizer_goldens.py

For each kind it writes a vocab-only GGUF with the `gguf` package: the vocabulary JSON's metadata
(the keys llama.cpp's converter writes for that family) and arrays, plus the few architecture
hyperparameters llama.cpp's loader reads even with vocab_only (they do not affect the tokenizer;
the C++ test leaves them out). Then Llama(path, vocab_only=True).tokenize(text, add_bos, special)
for every string in three modes -- (add_bos=False, special=True), (False, False), (True, True) --
and the detokenization of the first mode's ids: llama_token_to_piece per token, concatenated,
the first with lstrip=1 when the vocabulary adds a space prefix (SentencePiece). That is
llama_detokenize(remove_special=False) without its clean_spaces pass (a llama-bpe-only
clean-up of " ." and " 's" that llama.cpp's generation path does not use); "detok_llama" keeps
llama_detokenize's own output for reference.
"""
import ctypes
import hashlib
import json
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIR = os.path.join(REPO, "tests", "data", "tokenizer", "families")
KINDS = ["llama-bpe", "qwen2", "deepseek-r1-qwen", "mistral-v0.3", "phi3"]

COMMON = [
    "",
    " ",
    "Hello world",
    " Hello world",
    "  Hello  world  ",
    "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition,"
    " seemed to unite some of the best blessings of existence.",
    "I'll DON'T we're YOU'VE 'LLAMA she'd I'M it's o'clock",
    "1234567 2024-01-31 3.14159 1,000,000 99999 0123456789",
    "line one\nline two\n\nline four\r\nend\n",
    "Sentence.\n\nNext:\n  indented\n",
    "    indented code\n        more code\n\tdef main():\n\t\treturn 0",
    "café naïve résumé Straße groß Ærø",
    "中文 中国 你好世界",
    "emoji 😀 🎉👍🏽",
    "\"My dear (x) [y] {z} <a|b> ~!@#$%^&*",
    "trailing spaces   ",
    "   \n   \n\t\n",
    "xyzzy plugh quux xyzzyx",
    "a" * 40,
    "Zero\u200bwidth\u00a0nbsp\u3000here",
    "Control \x01\x02 chars \x7f",
]

FAMILY = {
    "llama-bpe": [
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>",
        "text<|eot_id|>more<|eom_id|> <|python_tag|>x",
        "<|begin_of_text|>",
        "partial <|eot_id <|start_header_id|",
        "<|reserved_special_token_0|> reserved",
    ],
    "qwen2": [
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n",
        "<think>\nreasoning here\n</think>\n\nThe answer.",
        "<tool_call>\n{\"name\": \"f\"}\n</tool_call>",
        "<|endoftext|>text<|im_end|>more <|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>",
        "partial <|im_start <|im_end|",
        "<|object_ref_start|>the cat<|object_ref_end|><|vision_pad|>",
    ],
    "deepseek-r1-qwen": [
        "<｜begin▁of▁sentence｜>You are helpful.<｜User｜>Hi<｜Assistant｜><think>\n",
        "<｜User｜>What is 2+2?<｜Assistant｜>4<｜end▁of▁sentence｜><｜User｜>Why?",
        "<think>\nreasoning here\n</think>\n\nThe answer.",
        "<|EOT|> and <|quad_start|> and <|fim_prefix|>x<|fim_suffix|>",
        "partial <｜User <｜Assistant｜",
        "<｜end▁of▁sentence｜>",
    ],
    "mistral-v0.3": [
        "[INST] Hello[/INST] Hi there</s>[INST] How are you?[/INST]",
        "<s>[INST] You are helpful.\n\nHello[/INST]",
        "[INST]Hello[/INST]",
        "[TOOL_CALLS] [AVAILABLE_TOOLS] [/AVAILABLE_TOOLS][control_8]",
        "partial [INST [/INST",
        "</s> <s> <unk>",
    ],
    "phi3": [
        "<|user|>\nHello<|end|>\n<|assistant|>\n",
        "<|system|>\nBe brief.<|end|>\n<|user|>\n  two spaces<|end|>\n<|assistant|>\n",
        "<|endoftext|> after endoftext <s> after s </s> after /s",
        "<|user|>   \n\n  text after whitespace",
        "partial <|user <|end|",
        "<|placeholder1|>x<|assistant|>",
    ],
}

# Conversations rendered with each family's real template (add_generation_prompt=True).
CHATS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"}],
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": " Hello! How can I help? "},
     {"role": "user", "content": "Tell me a joke about cats.\nMake it short."}],
    [{"role": "system", "content": "Think first."}, {"role": "user", "content": "2+2?"},
     {"role": "assistant", "content": "<think>\nAdd them.\n</think>\n\nIt is 4."},
     {"role": "user", "content": "And 3+3?"}],
]

HPARAMS = {  # read by llama.cpp's loader even for vocab_only; irrelevant to the tokenizer
    "context_length": 4096, "embedding_length": 64, "block_count": 1,
    "feed_forward_length": 128, "attention.head_count": 4, "attention.head_count_kv": 4,
    "attention.layer_norm_rms_epsilon": 1e-5, "rope.dimension_count": 16,
}


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_gguf(vocab, path):
    import gguf
    meta = {m["key"]: m for m in vocab["metadata"]}
    arch = meta["general.architecture"]["value"]
    w = gguf.GGUFWriter(path, arch=arch)
    for m in vocab["metadata"]:
        if m["key"] == "general.architecture":
            continue
        {"string": w.add_string, "u32": w.add_uint32, "bool": w.add_bool}[m["type"]](
            m["key"], m["value"])
    for k, v in HPARAMS.items():
        key = "%s.%s" % (arch, k)
        if isinstance(v, float):
            w.add_float32(key, v)
        else:
            w.add_uint32(key, v)
    w.add_token_list(vocab["tokens"])
    w.add_token_types(vocab["token_type"])
    if "merges" in vocab:
        w.add_token_merges(vocab["merges"])
    if "scores" in vocab:
        w.add_token_scores(vocab["scores"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def detok(llama_cpp, vocab, ids, special, add_space_prefix):
    out = b""
    buf = ctypes.create_string_buffer(256)
    for i, t in enumerate(ids):
        lstrip = 1 if (i == 0 and add_space_prefix) else 0
        n = llama_cpp.llama_token_to_piece(vocab, t, buf, len(buf), lstrip, special)
        assert 0 <= n <= len(buf)
        out += buf.raw[:n]
    return out


def detok_llama(llama_cpp, vocab, ids, special):
    arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
    buf = ctypes.create_string_buffer(1 << 16)
    n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, len(buf), False, special)
    assert n >= 0
    return buf.raw[:n]


def render(template, messages, bos, eos):
    import jinja2
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True,
                             extensions=["jinja2.ext.loopcontrols"])

    def raise_exception(msg):
        raise jinja2.TemplateError(msg)
    env.globals["raise_exception"] = raise_exception
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False)
    return env.from_string(template).render(messages=messages, add_generation_prompt=True,
                                            bos_token=bos, eos_token=eos, enable_thinking=True,
                                            date_string="26 Jul 2024")


def main():
    import gguf
    import jinja2
    import llama_cpp
    from importlib.metadata import version
    for kind in KINDS:
        vpath = os.path.join(DIR, kind + ".json")
        with open(vpath, encoding="utf-8") as f:
            vocab = json.load(f)
        spm = "scores" in vocab
        meta = {m["key"]: m["value"] for m in vocab["metadata"]}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, kind + ".gguf")
            write_gguf(vocab, path)
            llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
            lv = llama_cpp.llama_model_get_vocab(llm.model)
            cases = []
            for text in COMMON + FAMILY[kind]:
                b = text.encode("utf-8")
                ids = llm.tokenize(b, add_bos=False, special=True)
                case = {
                    "text": text,
                    "ids_special": ids,
                    "ids_plain": llm.tokenize(b, add_bos=False, special=False),
                    "ids_bos": llm.tokenize(b, add_bos=True, special=True),
                    "detok_hex": detok(llama_cpp, lv, ids, False, spm).hex(),
                    "detok_special_hex": detok(llama_cpp, lv, ids, True, spm).hex(),
                    "detok_llama_hex": detok_llama(llama_cpp, lv, ids, False).hex(),
                }
                cases.append(case)
            bos = vocab["tokens"][meta["tokenizer.ggml.bos_token_id"]]
            eos = vocab["tokens"][meta["tokenizer.ggml.eos_token_id"]]
            chats = []
            for msgs in CHATS:
                try:
                    text = render(meta["tokenizer.chat_template"], msgs, bos, eos)
                except jinja2.TemplateError as e:
                    chats.append({"messages": msgs, "error": str(e)})
                    continue
                chats.append({"messages": msgs, "jinja": text,
                              "ids": llm.tokenize(text.encode("utf-8"), add_bos=False,
                                                  special=True)})
            gguf_sha = sha256(path)
            del llm
            variant = None
            if kind == "phi3":  # the same file under a name without "phi3": no stripping
                name = "Phi 3.5 Mini Instruct"
                for m in vocab["metadata"]:
                    if m["key"] == "general.name":
                        m["value"] = name
                vpath2 = os.path.join(tmp, kind + "-renamed.gguf")
                write_gguf(vocab, vpath2)
                llm2 = llama_cpp.Llama(model_path=vpath2, vocab_only=True, verbose=False)
                variant = {"general.name": name, "cases": [
                    {"text": t, "ids_special": llm2.tokenize(t.encode("utf-8"), add_bos=False,
                                                             special=True)}
                    for t in FAMILY[kind]]}
                del llm2
        out = {
            "generator": "scripts/dev/make_family_tokenizer_goldens.py",
            "reference": "llama.cpp via llama-cpp-python %s; gguf %s; Jinja2 %s" % (
                version("llama-cpp-python"), version("gguf"), jinja2.__version__),
            "vocab": "tests/data/tokenizer/families/%s.json" % kind,
            "vocab_sha256": sha256(vpath),
            "gguf_sha256": gguf_sha,
            "loader_hparams": HPARAMS,
            "n_vocab": len(vocab["tokens"]),
            "cases": cases,
            "chats": chats,
        }
        if variant:
            out["name_variant"] = variant
        opath = os.path.join(DIR, kind + "_goldens.json")
        with open(opath, "w", encoding="utf-8") as f:
            json.dump(out, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print("%s: %d cases, %d chats, %d bytes" % (opath, len(cases), len(chats),
                                                    os.path.getsize(opath)))


if __name__ == "__main__":
    sys.exit(main())
