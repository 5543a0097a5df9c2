"""Session: one sequence's KV cache and attention policy over a model."""

from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from fasa import _check, _fasa
from fasa._model import Model
from fasa._sampling import sampler_args


def _logits(buf: Any) -> np.ndarray:
    return np.frombuffer(buf, dtype=np.float32)  # [n_vocab], writable (owns its bytearray)


class Session:
    """A sequence on `model` with attention policy `policy` (a spec "name:key=value,...", see
    fasa.policies()), a cache of `n_ctx` tokens (0 = min(the model's context, 4096)) of type
    `kv_type` (f16, f32 or q8_0). One Python thread at a time computes on a session (others
    wait); any number of sessions may run at once."""

    def __init__(self, model: Model, policy: str = "full", n_ctx: int = 0, kv_type: str = "f16",
                 prefill_chunk: int = 256) -> None:
        f = "Session"
        self.model: Model = _check.one_of(f, "model", model, Model, "a fasa.Model")
        self.policy: str = _check.policy(f, "policy", policy)
        self._s = _fasa.Session(model._m, policy, _check.integer(f, "n_ctx", n_ctx, 0),
                                _check.text(f, "kv_type", kv_type, "'f16', 'f32' or 'q8_0'"),
                                _check.integer(f, "prefill_chunk", prefill_chunk, 1))

    @classmethod
    def _of(cls, model: Model, policy: str, native: Any) -> "Session":
        s = cls.__new__(cls)
        s.model, s.policy, s._s = model, policy, native
        return s

    def prefill(self, ids: Sequence[int]) -> np.ndarray:
        """Appends the tokens (dense, batched) and returns the logits after the last one:
        a float32 array [n_vocab]."""
        return _logits(self._s.prefill(_check.token_ids("Session.prefill", "ids", ids)))

    def decode(self, token: int) -> np.ndarray:
        """Appends one token with a policy-driven decode step; returns the logits [n_vocab]."""
        return _logits(self._s.decode(_check.integer("Session.decode", "token", token)))

    def sample(
        self,
        temperature: float = 0.0,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        seed: Optional[int] = None,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        repetition_penalty: float = 1.0,
        logit_bias: Optional[Mapping[int, float]] = None,
        history: Optional[Sequence[int]] = None,
    ) -> int:
        """The next token, drawn from the logits after the last token appended with generate's
        sampler: temperature 0 is greedy (ties to the lowest id); else top-k, top-p, min-p, then
        the temperature, from a generator seeded with `seed` (None: a random one). First the
        logit rules: `logit_bias` ({id: bias in [-100, 100]}), and penalties over `history`
        (None: the session's tokens): `presence_penalty` and `frequency_penalty` (OpenAI's, in
        [-2, 2]) count its tokens, `repetition_penalty` (> 0, 1 = off) divides a positive logit
        of any token in it and multiplies a negative one. Appends nothing."""
        f = "Session.sample"
        args = sampler_args(f, self.model.n_vocab, temperature, top_k, top_p, min_p, seed,
                            presence_penalty, frequency_penalty, repetition_penalty, logit_bias)
        seen = self.tokens if history is None else _check.token_ids(f, "history", history)
        return int(_fasa.sample(self._s, args, seen))

    def fork(self, policy: Optional[str] = None) -> "Session":
        """A new session that holds this one's tokens, as if it had prefilled them itself: the
        cache's rows are copied (the KV cache has no shared pages) and the policy (`policy`, or
        None for this session's own) builds its state from them. Afterwards the two are
        independent. For full attention, and for a session that has only prefilled, the fork is
        bit for bit a fresh session that prefilled the same tokens. A policy that learns from
        the prefill queries (snapkv, pyramidkv, h2o) forks only from a session of the same
        policy that has not decoded yet (FasaError otherwise)."""
        spec = "" if policy is None else _check.policy("Session.fork", "policy", policy)
        return Session._of(self.model, policy or self.policy, self._s.fork(spec))

    @property
    def tokens(self) -> List[int]:
        """The token ids in the cache, in order (n_past of them)."""
        return list(self._s.tokens)

    @property
    def logits(self) -> np.ndarray:
        """The logits after the last token appended, [n_vocab]."""
        return _logits(self._s.logits())

    @property
    def n_past(self) -> int:
        """Tokens in the cache."""
        return int(self._s.n_past)

    @property
    def n_ctx(self) -> int:
        """The cache's capacity in tokens."""
        return int(self._s.n_ctx)

    def reset(self) -> None:
        """Empties the cache (and starts the policy afresh)."""
        self._s.reset()

    def attn_stats(self) -> Dict[str, Any]:
        """What the decode steps read so far: every counter of the engine's AttnStats, and
        global_read_fraction (the share of cached rows the policy-driven layers read)."""
        return dict(self._s.attn_stats())

    def kv_resident_bytes(self) -> int:
        """KV bytes held in RAM: the cache's rows plus the policy's side data."""
        return int(self._s.kv_resident_bytes())

    def __repr__(self) -> str:
        return f"fasa.Session(policy={self.policy!r}, n_ctx={self.n_ctx}, n_past={self.n_past})"
