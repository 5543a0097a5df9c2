"""fasa: the fasa inference engine from Python.

Load a GGUF model (a path, or the name of a model `fasa pull` put in the cache), run sessions,
generate text, calibrate FASA, and evaluate perplexity and long-context tasks. Results are plain
Python objects and numpy arrays; the engine runs with the GIL released.

    import fasa
    model = fasa.Model("smollm2-135m")
    print(fasa.generate(model, "The capital of France is", max_tokens=16).text)
"""

from importlib.metadata import PackageNotFoundError, version

from fasa._calibrate import calibrate
from fasa._eval import eval_ppl, eval_tasks
from fasa._fasa import FasaError
from fasa._generate import GenerateResult, generate
from fasa._model import Model, num_threads, set_threads
from fasa._policy import parse_policy, policies, policy_help
from fasa._session import Session

try:
    __version__ = version("fasa")
except PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "unknown"

__all__ = [
    "FasaError",
    "GenerateResult",
    "Model",
    "Session",
    "calibrate",
    "eval_ppl",
    "eval_tasks",
    "generate",
    "num_threads",
    "parse_policy",
    "policies",
    "policy_help",
    "set_threads",
]
