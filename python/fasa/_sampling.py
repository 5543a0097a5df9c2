"""The sampling arguments generate, chat and Session.sample share, checked, as the dict the
extension takes (python/src/bind_sample.cpp)."""

import secrets
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from fasa import _check


def new_seed() -> int:
    """A random seed (what seed=None draws)."""
    return secrets.randbits(63)


def sampler_args(
    func: str,
    n_vocab: int,
    temperature: float,
    top_k: int,
    top_p: float,
    min_p: float,
    seed: Optional[int],
    presence_penalty: float,
    frequency_penalty: float,
    repetition_penalty: float,
    logit_bias: Optional[Mapping[Any, float]],
) -> Dict[str, Any]:
    """The sampler's and the logit rules' arguments (the engine checks the sampler's ranges);
    seed None draws one."""
    return {
        "temperature": _check.real(func, "temperature", temperature),
        "top_k": _check.integer(func, "top_k", top_k),
        "top_p": _check.real(func, "top_p", top_p),
        "min_p": _check.real(func, "min_p", min_p),
        "seed": new_seed() if seed is None else _check.integer(func, "seed", seed, 0),
        "presence_penalty": _check.real(func, "presence_penalty", presence_penalty, -2.0, 2.0),
        "frequency_penalty": _check.real(func, "frequency_penalty", frequency_penalty, -2.0,
                                         2.0),
        "repetition_penalty": _check.real(func, "repetition_penalty", repetition_penalty, 0.0,
                                          10.0, open_lo=True),
        "logit_bias": _check.logit_bias(func, logit_bias, n_vocab),
    }


def generate_args(
    func: str,
    n_vocab: int,
    max_tokens: int,
    stop: Union[str, Sequence[str]],
    **sampler: Any,
) -> Dict[str, Any]:
    """sampler_args, and the generation's length and stop strings."""
    args = sampler_args(func, n_vocab, **sampler)
    args["max_tokens"] = _check.integer(func, "max_tokens", max_tokens, -1)
    args["stop"] = _check.strings(func, "stop", stop)
    return args
