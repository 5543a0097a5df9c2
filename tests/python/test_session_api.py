"""Session.tokens, Session.sample (generate's sampler and logit rules on the session's logits)
and Session.fork (one prefilled document, several continuations: each fork is bit for bit a
fresh session that prefilled the same tokens, and the parent is unchanged)."""

import numpy as np
import pytest

import fasa
from conftest import TEXT

DOC = TEXT.read_text(encoding="utf-8")[:600]


def test_tokens_follow_the_cache(smollm2):
    s = fasa.Session(smollm2, n_ctx=256)
    ids = smollm2.tokenize("The capital of France is")
    s.prefill(ids)
    s.decode(42)
    assert s.tokens == ids + [42] and s.n_past == len(ids) + 1
    r = fasa.generate(s, [7, 8], max_tokens=5)
    held = len(r.tokens) - (r.stop_reason != "eos")  # the last sampled token is not appended
    assert s.tokens == ids + [42, 7, 8] + r.tokens[:held]
    before = s.tokens
    lossless = fasa.generate(s, [9], max_tokens=6, lossless=2)
    held = s.n_past - len(before) - 1  # generated tokens in the cache
    assert 0 < held <= len(lossless.tokens)
    assert s.tokens == before + [9] + lossless.tokens[:held] and len(s.tokens) == s.n_past
    s.reset()
    assert s.tokens == []


def penalized(logits, history, presence=0.0, frequency=0.0, repetition=1.0):
    """LogitRules::apply in numpy (the rules the engine documents)."""
    out = logits.astype(np.float32)
    for t in set(history):
        out[t] = out[t] / repetition if out[t] > 0 else out[t] * repetition
        out[t] -= np.float32(presence + frequency * history.count(t))
    return out


def test_sample(smollm2):
    prompt = "Tell me a story"
    s = fasa.Session(smollm2, n_ctx=64)
    with pytest.raises(fasa.FasaError, match="holds no tokens"):
        s.sample()
    logits = s.prefill(smollm2.tokenize(prompt))
    best = int(np.argmax(logits))
    assert s.sample() == best and s.n_past == len(s.tokens)  # greedy; nothing appended
    # Seeded: generate's first token with the same sampler and seed.
    first = fasa.generate(smollm2, prompt, max_tokens=1, temperature=0.9, seed=1234).tokens[0]
    assert s.sample(temperature=0.9, seed=1234) == first
    assert {s.sample(temperature=1.5, top_k=0, top_p=1.0, min_p=0.0, seed=k)
            for k in range(40)} != {first}
    # logit_bias bans the argmax: the runner-up.
    order = np.argsort(-logits, kind="stable")
    assert s.sample(logit_bias={best: -100}) == int(order[1])
    assert s.sample(logit_bias={str(best): -100}) == int(order[1])  # OpenAI's string keys
    # Penalties over the history (default: the session's tokens), as the engine's rules.
    history = [best, best, int(order[1]), int(order[2])]
    for kw in (dict(repetition=3.0), dict(presence=2.0), dict(frequency=1.5, presence=0.5)):
        want = int(np.argmax(penalized(logits, history, **kw)))
        got = s.sample(history=history, repetition_penalty=kw.get("repetition", 1.0),
                       presence_penalty=kw.get("presence", 0.0),
                       frequency_penalty=kw.get("frequency", 0.0))
        assert got == want, kw
    want = int(np.argmax(penalized(logits, s.tokens, repetition=5.0)))
    assert s.sample(repetition_penalty=5.0) == want


def test_sample_errors(smollm2):
    s = fasa.Session(smollm2, n_ctx=16)
    s.prefill([1, 2, 3])
    with pytest.raises(TypeError, match="Session.sample: top_k must be an int"):
        s.sample(top_k=1.5)
    with pytest.raises(ValueError, match=r"presence_penalty must be in \[-2, 2\]"):
        s.sample(presence_penalty=3)
    with pytest.raises(ValueError, match=r"repetition_penalty must be in \(0, 10\]"):
        s.sample(repetition_penalty=0)
    with pytest.raises(ValueError, match="logit_bias key 99999999 is not a token id"):
        s.sample(logit_bias={99999999: 1.0})
    with pytest.raises(TypeError, match="Session.sample: history must be a list of token ids"):
        s.sample(history="abc")
    with pytest.raises(fasa.FasaError, match="top-p must be in"):
        s.sample(temperature=1.0, top_p=-1.0)


@pytest.mark.parametrize("policy", [
    "full", "streaming:budget=16,sinks=2",
    "fasa:calib=online,calib_window=4,budget=8,dense_layers=none"])
def test_fork_is_a_fresh_prefill_bit_for_bit(smollm2, policy):
    doc = smollm2.tokenize(DOC)
    parent = fasa.Session(smollm2, policy=policy, n_ctx=len(doc) + 16)
    before = parent.prefill(doc).copy()
    a, b = parent.fork(), parent.fork()
    assert a.tokens == b.tokens == parent.tokens and a.n_past == len(doc)
    assert a.policy == policy and np.array_equal(a.logits, before)

    def fresh(steps):
        s = fasa.Session(smollm2, policy=policy, n_ctx=len(doc) + 16)
        s.prefill(doc)
        return [s.decode(t) for t in steps][-1], s

    for session, steps in ((a, [11, 12, 13]), (b, [21, 22])):
        got = [session.decode(t) for t in steps][-1]
        want, ref = fresh(steps)
        assert np.array_equal(got, want), policy
        assert session.tokens == ref.tokens == doc + steps
    # The parent is unchanged by its forks' steps.
    assert parent.n_past == len(doc) and np.array_equal(parent.logits, before)
    assert np.array_equal(parent.decode(31), fresh([31])[0])


def test_fork_answers_several_questions(smollm2):
    doc = smollm2.tokenize(DOC)
    parent = fasa.Session(smollm2, n_ctx=len(doc) + 64)
    parent.prefill(doc)
    for q in ("\nQ: Where is the harbour?\nA:", "\nQ: What time is it?\nA:"):
        ids = smollm2.tokenize(q, add_special=False)
        got = fasa.generate(parent.fork(), ids, max_tokens=12)
        own = fasa.Session(smollm2, n_ctx=len(doc) + 64)
        own.prefill(doc)
        assert got.tokens == fasa.generate(own, ids, max_tokens=12).tokens
    assert parent.n_past == len(doc)
    # Under another policy: a fresh session of that policy.
    spec = "streaming:budget=16,sinks=2"
    other = parent.fork(policy=spec)
    own = fasa.Session(smollm2, policy=spec, n_ctx=len(doc) + 64)
    own.prefill(doc)
    assert other.policy == spec
    assert np.array_equal(other.decode(5), own.decode(5))


def test_fork_errors(smollm2):
    s = fasa.Session(smollm2, policy="h2o:budget=16", n_ctx=64)
    s.prefill(smollm2.tokenize("One two three four five six seven"))
    s.fork()  # before any decode step: its prefill statistics come along
    s.decode(5)
    with pytest.raises(fasa.FasaError, match="'h2o': the source session has decoded already"):
        s.fork()
    with pytest.raises(fasa.FasaError, match="learns from the prefill queries"):
        fasa.Session(smollm2, n_ctx=64).fork(policy="snapkv:budget=8")
    with pytest.raises(TypeError, match="Session.fork: policy must be a policy spec str"):
        s.fork(policy=5)
