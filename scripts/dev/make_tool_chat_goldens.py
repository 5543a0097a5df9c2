#!/usr/bin/env python3
"""Writes tests/data/tokenizer/tool_chat_goldens.json: Jinja's renderings of the real chat
templates that define tool syntax (tests/data/tokenizer/families/templates: Qwen 2.5, Qwen 2.5
Coder (the template of qwen2.5-coder-1.5b-instruct-q4_k_m.gguf), Llama 3.1, Llama 3.2, Mistral
v0.3) for conversations with tools, tool calls and tool results, as Hugging
Face's apply_chat_template renders them (its `tojson` filter: json.dumps with ensure_ascii=False,
keys unsorted; trim_blocks and lstrip_blocks; no strftime_now, so Llama 3.2 dates as 3.1 does).
A conversation a template refuses is recorded with its error. Also `tojson`'s own text for a few
values, one line and with indent 4 ("tojson").

Development-time only (never a runtime dependency): Jinja2 (3.1.6 for the checked-in file).
  python3 scripts/dev/make_tool_chat_goldens.py
"""
import hashlib
import json
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATES = os.path.join(REPO, "tests", "data", "tokenizer", "families", "templates")
OUT = os.path.join(REPO, "tests", "data", "tokenizer", "tool_chat_goldens.json")

# template file -> (bos_token, eos_token)
KINDS = {
    "qwen2.5.jinja": ("<|endoftext|>", "<|im_end|>"),
    "qwen2.5-coder.jinja": ("<|endoftext|>", "<|im_end|>"),
    "llama3.1.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3.2.jinja": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistral-v0.3.jinja": ("<s>", "</s>"),
}

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web for a query (é ü 中文).",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "limit": {"type": "integer", "default": 5},
        "score": {"type": "number", "default": 0.5}, "exact": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}}, "opts": {}},
        "required": ["query"]}, "strict": False}}


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


PARIS = call("abcDEF123", "get_weather", {"city": "Paris", "unit": "celsius"})
ROME = call("xyzXYZ789", "get_weather", {"city": "Rome"})
FIND = call("qrsQRS456", "search", {"query": "fasa \"sparse\" attention", "limit": 3,
                                    "tags": ["a", "b"], "opts": {}})

CHATS = [
    {"tools": [WEATHER], "messages": [
        {"role": "user", "content": "What is the weather in Paris?"}]},
    {"tools": [WEATHER, SEARCH], "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"}]},
    {"tools": [WEATHER], "messages": [
        {"role": "system", "content": " Be brief. "},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [PARIS]},
        {"role": "tool", "tool_call_id": "abcDEF123", "content": "22 degrees, sunny"}]},
    {"tools": [WEATHER, SEARCH], "messages": [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [PARIS, ROME]},
        {"role": "tool", "tool_call_id": "abcDEF123", "content": "22"},
        {"role": "tool", "tool_call_id": "xyzXYZ789", "content": "{\"temp\": 25}"},
        {"role": "assistant", "content": "Paris 22, Rome 25."},
        {"role": "user", "content": "Thanks. Now search fasa."}]},
    {"tools": [SEARCH], "messages": [
        {"role": "user", "content": "Find fasa.\n"},
        {"role": "assistant", "content": "Let me search.", "tool_calls": [FIND]},
        {"role": "tool", "tool_call_id": "qrsQRS456", "content": "line 1\nline \"2\""}]},
    {"tools": None, "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [PARIS]},
        {"role": "tool", "tool_call_id": "abcDEF123", "content": "22"},
        {"role": "user", "content": "And tomorrow?"}]},
    {"tools": [WEATHER], "messages": [
        {"role": "system", "content": "Only a system message."}]},
]


JSON_VALUES = [
    {"a": 1, "b": [1, 2.5, -3e-07, 1e+16, 12345678901234567890], "c": {"d": None, "e": True}},
    {"s": "quote \" backslash \\ tab \t nl \n ctl \u0001 del \u007f é 中 😀 </tag>"},
    [], {}, [[]], [{}], {"x": []}, "just a string", 0.1, 100.0, -0.0, 2.5e-05,
    {"z": 1, "a": 2, "m": {"b": 1, "a": [3, {"q": "r"}]}},
]


def render(template, chat, bos, eos):
    import jinja2
    import jinja2.sandbox
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])

    def raise_exception(msg):
        raise jinja2.TemplateError(msg)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)
    env.globals["raise_exception"] = raise_exception
    env.filters["tojson"] = tojson
    kwargs = {"messages": chat["messages"], "add_generation_prompt": True, "bos_token": bos,
              "eos_token": eos}
    if chat["tools"] is not None:
        kwargs["tools"] = chat["tools"]
    return env.from_string(template).render(**kwargs)


def main():
    import jinja2
    out = {"generator": "scripts/dev/make_tool_chat_goldens.py",
           "reference": "Jinja2 %s, Hugging Face's tojson" % jinja2.__version__, "templates": []}
    for name, (bos, eos) in KINDS.items():
        path = os.path.join(TEMPLATES, name)
        with open(path, encoding="utf-8") as f:
            template = f.read()
        entry = {"template": name, "template_sha256": hashlib.sha256(
            template.encode("utf-8")).hexdigest(), "bos": bos, "chats": []}
        for chat in CHATS:
            case = dict(chat)
            try:
                case["jinja"] = render(template, chat, bos, eos)
            except jinja2.TemplateError as e:
                case["error"] = str(e)
            entry["chats"].append(case)
        out["templates"].append(entry)
    out["tojson"] = [{"value": v, "one_line": json.dumps(v, ensure_ascii=False),
                      "indent4": json.dumps(v, ensure_ascii=False, indent=4)}
                     for v in JSON_VALUES]
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
