"""bench: prompt-processing and generation speed, as `fasa bench` measures it."""

import json

from fasa import _fasa
from fasa._model import Model, set_threads
from fasa._sources import read_source


def _counts(value):
    """An int or a sequence of ints -> a list of ints."""
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


def bench(
    model,
    n_prompt=512,
    n_gen=128,
    depth=0,
    batch=1,
    repetitions=3,
    policies=("full",),
    threads=None,
    kv_type="f16",
    depth_fill="prefill",
    warmup=True,
    lossless="off",
    text=None,
    bandwidth=False,
    bandwidth_bytes=1 << 30,
):
    """Speed in llama-bench's conventions, as `fasa bench` measures it: at every context depth
    in `depth`, a prompt-processing test ("ppN") per count in `n_prompt`, then a generation test
    ("tgN", or "tgNxB" for B sequences decoding together) per count in `n_gen` and size in
    `batch` (each an int or a list; 0 skips), each under every policy spec in `policies`,
    alternating `repetitions` times. `depth_fill` "synthetic" stores random K/V rows instead of
    prefilling the depth; `text` (a path, or the text) makes the depth's context of its tokens;
    `bandwidth` measures the read bandwidth first (the roofline of generation rows).
    Returns a list of dicts, one per (depth, test, policy) in that order, each the object
    `fasa bench --json` prints (tokens_per_s, stddev, samples, kv_bytes_read_per_token, ...);
    with no test (n_prompt=0, n_gen=0, bandwidth=True) one dict of the bandwidth alone."""
    m = model if isinstance(model, Model) else Model(model)
    if threads is not None:
        set_threads(threads)
    if isinstance(policies, str):
        policies = [policies]
    src = None if text is None else read_source(text, "text")
    out = _fasa.bench(
        m._m, _counts(n_prompt), _counts(n_gen), _counts(batch), _counts(depth),
        [str(p) for p in policies], int(repetitions), kv_type, depth_fill, bool(warmup),
        str(lossless), src, bool(bandwidth), int(bandwidth_bytes),
    )
    return json.loads(out)
