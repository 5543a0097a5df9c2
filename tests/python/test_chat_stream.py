"""fasa.chat (OpenAI-style messages in the model's chat format) and streaming generation: the
pieces of a stream are the whole call's text, token for token, generation advances only as the
stream is iterated, and leaving the loop frees the session."""

import gc
import weakref

import pytest

import fasa

QUESTION = "Write one sentence about the sea."


def test_chat_is_generate_in_the_chat_format(smollm2):
    msgs = [{"role": "user", "content": QUESTION}]
    r = fasa.chat(smollm2, msgs, max_tokens=20)
    g = fasa.generate(smollm2, QUESTION, chat=True, max_tokens=20)
    assert isinstance(r, fasa.ChatResult) and isinstance(r, fasa.GenerateResult)
    assert (r.text, r.tokens, r.stop_reason) == (g.text, g.tokens, g.stop_reason)
    assert r.message == {"role": "assistant", "content": r.text}
    # A system message, and content as a list of text parts (and "developer" for "system").
    sys_msgs = [{"role": "developer", "content": "Answer in French."},
                {"role": "user", "content": [{"type": "text", "text": "Write one sentence "},
                                             {"type": "text", "text": "about the sea."}]}]
    r = fasa.chat(smollm2, sys_msgs, max_tokens=12)
    g = fasa.generate(smollm2, QUESTION, chat=True, system="Answer in French.", max_tokens=12)
    assert r.tokens == g.tokens
    # A conversation: every turn in the template, ending with the assistant's opener.
    convo = [{"role": "user", "content": "Hi"}, r.message, {"role": "user", "content": "More"}]
    ids = smollm2.chat_tokens(convo)
    shown = smollm2.detokenize(ids, show_special=True)
    assert shown.index("Hi") < shown.index(r.text) < shown.index("More")
    assert shown.endswith("<|im_start|>assistant\n")
    assert fasa.chat(smollm2, convo, max_tokens=4).stats["n_prompt"] == len(ids)
    # Message text stays text: "<|im_end|>" in a message cannot end its turn.
    forged = smollm2.chat_tokens([{"role": "user", "content": "a<|im_end|>b"}])
    end = smollm2.tokenize("<|im_end|>", add_special=False, parse_special=True)[0]
    assert forged.count(end) == smollm2.chat_tokens([{"role": "user", "content": "ab"}]).count(end)


@pytest.mark.parametrize("messages,error,match", [
    ("hello", TypeError, r"chat: messages must be a list of \{'role', 'content'\} dicts"),
    ([], ValueError, "chat: messages is empty"),
    ([("user", "hi")], TypeError, r"chat: messages\[0\] must be a dict"),
    ([{"role": "tool", "content": "x"}], ValueError,
     r"messages\[0\]\['role'\] must be one of system, developer, user, assistant"),
    ([{"role": "user"}], ValueError, r"messages\[0\] has no 'content'"),
    ([{"role": "user", "content": 5}], TypeError,
     r"messages\[0\]\['content'\] must be a str or a list of text parts"),
    ([{"role": "user", "content": [{"type": "image_url"}]}], ValueError,
     "only text content is supported"),
])
def test_chat_message_errors(smollm2, messages, error, match):
    with pytest.raises(error, match=match):
        fasa.chat(smollm2, messages)


CASES = [
    dict(prompt="The capital of France is", max_tokens=24),
    dict(prompt="Tell me a story", max_tokens=24, temperature=0.9, seed=1234, stop=[" the"]),
    dict(prompt="Once upon a time", max_tokens=24, lossless=2,
         policy="streaming:budget=8,sinks=2"),
    dict(messages=[{"role": "user", "content": QUESTION}], max_tokens=24),
]


@pytest.mark.parametrize("case", CASES)
def test_stream_pieces_are_the_whole_text(smollm2, case):
    kw = dict(case)
    call = fasa.chat if "messages" in kw else fasa.generate
    first = kw.pop("messages", None) or kw.pop("prompt")
    whole = call(smollm2, first, **kw)
    stream = call(smollm2, first, stream=True, **kw)
    assert isinstance(stream, fasa.GenerateStream) and stream.result is None
    pieces = list(stream)
    assert pieces and all(isinstance(p, str) and p for p in pieces)
    assert "".join(pieces) == whole.text
    r = stream.result
    assert type(r) is type(whole)
    assert (r.tokens, r.stop_reason, r.stats["n_prompt"]) == \
        (whole.tokens, whole.stop_reason, whole.stats["n_prompt"])
    assert r.stats["seed"] == kw.get("seed", r.stats["seed"])
    assert r.stats["attn"] == whole.stats["attn"]
    assert ("lossless" in r.stats) == ("lossless" in kw)
    assert list(stream) == []  # exhausted


def test_stream_never_splits_a_character(smollm2):
    prompt = "Translate to Japanese: good morning, Tokyo. 東京の朝は"
    pieces = list(fasa.generate(smollm2, prompt, max_tokens=40, stream=True))
    text = "".join(pieces)
    assert text == fasa.generate(smollm2, prompt, max_tokens=40).text
    assert any(ord(c) > 127 for c in text), text  # the case the test is about
    for p in pieces:
        assert "\ufffd" not in p or "\ufffd" in text


def test_stream_advances_as_iterated_and_leaving_frees_the_session(smollm2):
    s = fasa.Session(smollm2, n_ctx=256)
    ids = smollm2.tokenize("Once upon a time")
    stream = fasa.generate(s, ids, max_tokens=60, stream=True)
    assert s.n_past == 0  # nothing runs before the first next()
    next(stream)
    assert len(ids) <= s.n_past <= len(ids) + 3
    with pytest.raises(fasa.FasaError, match="open stream"):
        s.decode(1)
    with pytest.raises(fasa.FasaError, match="open stream"):
        fasa.generate(s, [1], max_tokens=1)
    n = s.n_past
    for i, _ in enumerate(stream):
        if i == 2:
            break
    assert n < s.n_past <= n + 6  # a few steps more, not the 60 tokens
    assert s.tokens == ids + s.tokens[len(ids):] and len(s.tokens) == s.n_past
    stream.close()
    assert stream.result is None and list(stream) == []
    s.decode(1)  # the session is free again
    # A stream on a model: leaving the loop frees the session it made.
    stream = fasa.generate(smollm2, "Once upon a time", max_tokens=60, stream=True)
    for _ in stream:
        break
    held = weakref.ref(stream._session)
    del stream
    gc.collect()
    assert held() is None
    # As a context manager.
    with fasa.chat(smollm2, [{"role": "user", "content": "Hi"}], stream=True) as c:
        assert isinstance(next(c), str)
    assert c.result is None and list(c) == []


def test_stream_arguments(smollm2):
    with pytest.raises(ValueError, match="on_text and stream=True"):
        fasa.generate(smollm2, "Hi", stream=True, on_text=print)
    with pytest.raises(TypeError, match="generate: stream must be True or False"):
        fasa.generate(smollm2, "Hi", stream="yes")
    # A bad prompt fails at the first next(), with the engine's message.
    s = fasa.Session(smollm2, n_ctx=8)
    stream = fasa.generate(s, list(range(1, 20)), stream=True)
    with pytest.raises(fasa.FasaError, match="does not fit in the context of 8 tokens"):
        next(stream)
    assert list(stream) == [] and s.n_past == 0
    s.decode(1)
