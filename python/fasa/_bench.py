"""bench: prompt-processing and generation speed, as `fasa bench` measures it."""

import json
from typing import Any, Dict, List, Optional, Sequence, Union

from fasa import _check, _fasa
from fasa._eval import ModelArg, _model, _specs
from fasa._model import set_threads
from fasa._sources import TextOrPath, read_source

Counts = Union[int, Sequence[int]]


def _counts(name: str, value: Counts) -> List[int]:
    """An int or a sequence of ints -> a list of ints."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_check.integer("bench", f"{name}[{i}]", v) for i, v in enumerate(value)]
    return [_check.integer("bench", name, value)]


def bench(
    model: ModelArg,
    n_prompt: Counts = 512,
    n_gen: Counts = 128,
    depth: Counts = 0,
    batch: Counts = 1,
    repetitions: int = 3,
    policies: Union[str, Sequence[str]] = ("full",),
    threads: Optional[int] = None,
    kv_type: str = "f16",
    depth_fill: str = "prefill",
    warmup: bool = True,
    lossless: Union[str, int] = "off",
    text: Optional[TextOrPath] = None,
    bandwidth: bool = False,
    bandwidth_bytes: int = 1 << 30,
) -> Union[List[Dict[str, Any]], Dict[str, Any]]:
    """Speed in llama-bench's conventions, as `fasa bench` measures it: at every context depth
    in `depth`, a prompt-processing test ("ppN") per count in `n_prompt`, then a generation test
    ("tgN", or "tgNxB" for B sequences decoding together) per count in `n_gen` and size in
    `batch` (each an int or a list; 0 skips), each under every policy spec in `policies`,
    alternating `repetitions` times. `depth_fill` "synthetic" stores random K/V rows instead of
    prefilling the depth; `text` (a path, or the text) makes the depth's context of its tokens;
    `bandwidth` measures the read bandwidth first (the roofline of generation rows).
    Returns a list of dicts, one per (depth, test, policy) in that order, each the object
    `fasa bench --json` prints (tokens_per_s, stddev, samples, kv_bytes_read_per_token, ...);
    with no test (n_prompt=0, n_gen=0, bandwidth=True) one dict of the bandwidth alone.
    Ctrl-C stops it and raises KeyboardInterrupt."""
    f = "bench"
    m = _model(model, f)
    if threads is not None:
        set_threads(threads)
    src = None if text is None else read_source(text, "text", f)
    out = _fasa.bench(
        m._m, _counts("n_prompt", n_prompt), _counts("n_gen", n_gen), _counts("batch", batch),
        _counts("depth", depth), _specs(f, "policies", policies),
        _check.integer(f, "repetitions", repetitions), _check.text(f, "kv_type", kv_type),
        _check.text(f, "depth_fill", depth_fill, "'prefill' or 'synthetic'"),
        _check.flag(f, "warmup", warmup), _check.lossless(f, lossless), src,
        _check.flag(f, "bandwidth", bandwidth), _check.integer(f, "bandwidth_bytes",
                                                                bandwidth_bytes),
    )
    rows: Union[List[Dict[str, Any]], Dict[str, Any]] = json.loads(out)
    return rows
