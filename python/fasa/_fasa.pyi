# The compiled extension (python/src), for type checkers: its functions are the engine's raw
# API, used only by the package's own modules, which type what they return.
from typing import Any

class FasaError(ValueError, RuntimeError):
    """An error the fasa engine reports: bad input, with its message."""

def __getattr__(name: str) -> Any: ...
