"""GenerateResult and ChatResult: what generate and chat return (and a stream's `result`)."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Type, TypeVar


@dataclass
class GenerateResult:
    """One generation: the emitted text, the generated ids (an end-of-generation token is not
    among them), why it stopped ("eos", "stop", "length", "context"), and its statistics
    (n_prompt, prefill_ms, decode_ms, tokens per second, n_ctx, seed, attn: the decode steps'
    reads)."""

    text: str
    tokens: List[int]
    stop_reason: str
    stats: Dict[str, Any] = field(default_factory=dict)


@dataclass
class ChatResult(GenerateResult):
    """A GenerateResult of chat: `message` is the reply as a message to append to the
    conversation for the next turn."""

    @property
    def message(self) -> Dict[str, str]:
        """{"role": "assistant", "content": text}."""
        return {"role": "assistant", "content": self.text}


R = TypeVar("R", bound=GenerateResult)


def make_result(cls: Type[R], r: Dict[str, Any], n_ctx: int, seed: int) -> R:
    """The result of the extension's outcome dict (python/src/stepper.h)."""
    n_gen = len(r["tokens"])
    stats = {
        "n_prompt": r["n_prompt"],
        "n_generated": n_gen,
        "prefill_ms": r["prefill_ms"],
        "decode_ms": r["decode_ms"],
        "prefill_tokens_per_s": r["n_prompt"] * 1000.0 / max(r["prefill_ms"], 1e-9),
        "decode_tokens_per_s": n_gen * 1000.0 / max(r["decode_ms"], 1e-9) if n_gen else 0.0,
        "n_ctx": n_ctx,
        "seed": seed,
        "attn": r["attn"],
    }
    if "lossless" in r:
        stats["lossless"] = r["lossless"]
    return cls(r["text"], list(r["tokens"]), r["stop_reason"], stats)
