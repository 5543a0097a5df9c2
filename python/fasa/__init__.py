"""fasa: the fasa inference engine from Python.

Load a GGUF model (a path, or the name of a model `fasa pull` put in the cache), run sessions,
generate text, calibrate FASA, evaluate perplexity and long-context tasks, and measure speed as
`fasa bench` does. Results are plain Python objects and numpy arrays; the engine runs with the
GIL released.

    import fasa
    model = fasa.Model("smollm2-135m")
    print(fasa.generate(model, "The capital of France is", max_tokens=16).text)

The engine's API is loaded on first use (PEP 562), so that the pure-Python submodules, such as
`fasa.cluster` (sweeps on a Ray cluster, driving the `fasa` CLI), import without the compiled
extension `fasa._fasa`.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("fasa")
except PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "unknown"

# Each public name of the engine's API -> the submodule that defines it.
_API = {
    "FasaError": "fasa._fasa",
    "GenerateResult": "fasa._generate",
    "Model": "fasa._model",
    "Session": "fasa._session",
    "bench": "fasa._bench",
    "calibrate": "fasa._calibrate",
    "eval_ppl": "fasa._eval",
    "eval_tasks": "fasa._eval",
    "generate": "fasa._generate",
    "num_threads": "fasa._model",
    "parse_policy": "fasa._policy",
    "policies": "fasa._policy",
    "policy_help": "fasa._policy",
    "set_threads": "fasa._model",
}

__all__ = sorted(_API)


def __getattr__(name):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'fasa' has no attribute '{name}'")
    try:
        value = getattr(import_module(module), name)
    except ModuleNotFoundError as e:
        if e.name != "fasa._fasa":
            raise
        raise ImportError(
            f"fasa.{name} needs the compiled extension fasa._fasa, which is not installed here "
            "(pip install ./python builds it; the pure-Python fasa.cluster needs only the fasa "
            "CLI)") from e
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(_API))
