"""Session: one sequence's KV cache and attention policy over a model."""

import numpy as np

from fasa import _fasa


def _logits(buf):
    return np.frombuffer(buf, dtype=np.float32)  # [n_vocab], writable (owns its bytearray)


class Session:
    """A sequence on `model` with attention policy `policy` (a spec "name:key=value,...", see
    fasa.policies()), a cache of `n_ctx` tokens (0 = min(the model's context, 4096)) of type
    `kv_type` (f16, f32 or q8_0). One Python thread at a time computes on a session (others
    wait); any number of sessions may run at once."""

    def __init__(self, model, policy="full", n_ctx=0, kv_type="f16", prefill_chunk=256):
        self.model = model
        self.policy = policy
        self._s = _fasa.Session(model._m, policy, int(n_ctx), kv_type, int(prefill_chunk))

    def prefill(self, ids):
        """Appends the tokens (dense, batched) and returns the logits after the last one:
        a float32 array [n_vocab]."""
        return _logits(self._s.prefill([int(i) for i in ids]))

    def decode(self, token):
        """Appends one token with a policy-driven decode step; returns the logits [n_vocab]."""
        return _logits(self._s.decode(int(token)))

    @property
    def logits(self):
        """The logits after the last token appended, [n_vocab]."""
        return _logits(self._s.logits())

    @property
    def n_past(self):
        """Tokens in the cache."""
        return self._s.n_past

    @property
    def n_ctx(self):
        """The cache's capacity in tokens."""
        return self._s.n_ctx

    def reset(self):
        """Empties the cache (and starts the policy afresh)."""
        self._s.reset()

    def attn_stats(self):
        """What the decode steps read so far: every counter of the engine's AttnStats, and
        global_read_fraction (the share of cached rows the policy-driven layers read)."""
        return self._s.attn_stats()

    def kv_resident_bytes(self):
        """KV bytes held in RAM: the cache's rows plus the policy's side data."""
        return self._s.kv_resident_bytes()

    def __repr__(self):
        return f"fasa.Session(policy={self.policy!r}, n_ctx={self.n_ctx}, n_past={self.n_past})"
