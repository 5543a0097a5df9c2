"""Argument checks of the public API: a wrong type or value is a TypeError or ValueError naming
the function, the argument and what it takes, raised before anything reaches the engine."""

import math
import numbers
import os
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np


def shown(value: Any) -> str:
    """A value as error messages show it: its type, and its repr when short."""
    r = repr(value)
    if len(r) > 40:
        r = r[:37] + "..."
    return f"{type(value).__name__} {r}"


def integer(func: str, name: str, value: Any, minimum: Optional[int] = None) -> int:
    """An int (numpy integers too; not a bool, a float or a str)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{func}: {name} must be an int (got {shown(value)})")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{func}: {name} must be >= {minimum} (got {v})")
    return v


def real(func: str, name: str, value: Any, lo: Optional[float] = None,
         hi: Optional[float] = None, open_lo: bool = False) -> float:
    """A finite number (an int or a float; not a bool or a str), within [lo, hi] ((lo, hi] with
    open_lo) when both are given."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{func}: {name} must be a number (got {shown(value)})")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{func}: {name} must be finite (got {v})")
    if lo is not None and hi is not None and ((v <= lo if open_lo else v < lo) or v > hi):
        bracket = "(" if open_lo else "["
        raise ValueError(f"{func}: {name} must be in {bracket}{lo:g}, {hi:g}] (got {v:g})")
    return v


def flag(func: str, name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{func}: {name} must be True or False (got {shown(value)})")
    return bool(value)


def text(func: str, name: str, value: Any, what: str = "a str") -> str:
    if not isinstance(value, str):
        raise TypeError(f"{func}: {name} must be {what} (got {shown(value)})")
    return value


def optional_text(func: str, name: str, value: Any, what: str = "a str") -> Optional[str]:
    return None if value is None else text(func, name, value, what + " or None")


def policy(func: str, name: str, value: Any) -> str:
    """A policy spec's type (the engine checks its text)."""
    return text(func, name, value,
                "a policy spec str such as 'full' or 'fasa:budget=256' (fasa.policies())")


def path(func: str, name: str, value: Any) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{func}: {name} must be a str or a path (got {shown(value)})")
    return os.fspath(value)


def token_ids(func: str, name: str, value: Any, what: str = "a list of token ids") -> List[int]:
    """A sequence of token ids (a list, a tuple or a numpy array of ints)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise TypeError(f"{func}: {name} must be {what} (got {shown(value)})")
    ids = []
    for i, t in enumerate(value):
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, numbers.Integral):
            raise TypeError(f"{func}: {name}[{i}] must be an int token id (got {shown(t)})")
        ids.append(int(t))
    return ids


def strings(func: str, name: str, value: Any) -> List[str]:
    """One str, or a sequence of them."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Sequence):
        raise TypeError(f"{func}: {name} must be a str or a list of str (got {shown(value)})")
    for i, s in enumerate(value):
        if not isinstance(s, str):
            raise TypeError(f"{func}: {name}[{i}] must be a str (got {shown(s)})")
    return list(value)


def callback(func: str, name: str, value: Any) -> Optional[Callable[..., Any]]:
    if value is None:
        return None
    if not callable(value):
        raise TypeError(f"{func}: {name} must be a callable or None (got {shown(value)})")
    fn: Callable[..., Any] = value
    return fn


def lossless(func: str, value: Any) -> str:
    """off, auto or a draft count K (an int or its text); the engine checks the value."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return str(int(value))
    return text(func, "lossless", value, "'off', 'auto' or an int K")


def logit_bias(func: str, value: Optional[Mapping[Any, Any]], n_vocab: int) -> List[Any]:
    """OpenAI's logit_bias: {token id: bias in [-100, 100]} (ids as ints or their text)."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        raise TypeError(f"{func}: logit_bias must be a dict {{token id: bias}} "
                        f"(got {shown(value)})")
    out = []
    for key, bias in value.items():
        tid = int(key) if isinstance(key, str) and key.strip().lstrip("-").isdigit() else key
        tid = integer(func, f"logit_bias key {key!r}", tid)
        if not 0 <= tid < n_vocab:
            raise ValueError(f"{func}: logit_bias key {key!r} is not a token id in "
                             f"[0, {n_vocab})")
        out.append((tid, real(func, f"logit_bias[{key!r}]", bias, -100.0, 100.0)))
    return out


def one_of(func: str, name: str, value: Any, types: Union[type, Tuple[type, ...]], what: str) -> Any:
    if not isinstance(value, types):
        raise TypeError(f"{func}: {name} must be {what} (got {shown(value)})")
    return value
