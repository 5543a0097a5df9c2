"""fasa: the fasa inference engine from Python.

Load a GGUF model (a path, or the name of a model `fasa pull` put in the cache, $FASA_HOME),
run sessions, generate text or chat, calibrate FASA, evaluate perplexity and long-context
tasks, and measure speed as `fasa bench` does. Results are plain Python objects and numpy
arrays; the engine runs with the GIL released, and Ctrl-C stops it.

    import fasa
    model = fasa.Model("smollm2-135m")
    print(fasa.generate(model, "The capital of France is", max_tokens=16).text)
    for piece in fasa.chat(model, [{"role": "user", "content": "Hi!"}], stream=True):
        print(piece, end="", flush=True)

The engine's API is loaded on first use (PEP 562), so that the pure-Python submodules, such as
`fasa.cluster` (sweeps on a Ray cluster, driving the `fasa` CLI), import without the compiled
extension `fasa._fasa`. Type checkers see every name through the imports below.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, List

if TYPE_CHECKING:
    from fasa._bench import bench as bench
    from fasa._calibrate import calibrate as calibrate
    from fasa._chat import chat as chat
    from fasa._eval import eval_ppl as eval_ppl
    from fasa._eval import eval_tasks as eval_tasks
    from fasa._fasa import FasaError as FasaError
    from fasa._generate import generate as generate
    from fasa._model import Model as Model
    from fasa._model import model_path as model_path
    from fasa._model import num_threads as num_threads
    from fasa._model import set_threads as set_threads
    from fasa._policy import parse_policy as parse_policy
    from fasa._policy import policies as policies
    from fasa._policy import policy_help as policy_help
    from fasa._progress import Progress as Progress
    from fasa._result import ChatResult as ChatResult
    from fasa._result import GenerateResult as GenerateResult
    from fasa._session import Session as Session
    from fasa._stream import GenerateStream as GenerateStream

try:
    __version__ = version("fasa")
except PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "unknown"

# Each public name of the engine's API -> the submodule that defines it.
_API = {
    "ChatResult": "fasa._result",
    "FasaError": "fasa._fasa",
    "GenerateResult": "fasa._result",
    "GenerateStream": "fasa._stream",
    "Model": "fasa._model",
    "Progress": "fasa._progress",
    "Session": "fasa._session",
    "bench": "fasa._bench",
    "calibrate": "fasa._calibrate",
    "chat": "fasa._chat",
    "eval_ppl": "fasa._eval",
    "eval_tasks": "fasa._eval",
    "generate": "fasa._generate",
    "model_path": "fasa._model",
    "num_threads": "fasa._model",
    "parse_policy": "fasa._policy",
    "policies": "fasa._policy",
    "policy_help": "fasa._policy",
    "set_threads": "fasa._model",
}

__all__ = [
    "ChatResult",
    "FasaError",
    "GenerateResult",
    "GenerateStream",
    "Model",
    "Progress",
    "Session",
    "bench",
    "calibrate",
    "chat",
    "eval_ppl",
    "eval_tasks",
    "generate",
    "model_path",
    "num_threads",
    "parse_policy",
    "policies",
    "policy_help",
    "set_threads",
]


def __getattr__(name: str) -> Any:
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


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_API))
