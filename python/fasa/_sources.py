"""Texts and files given to the engine: a path (read as bytes) or the text itself."""

import os
from typing import Any, Union

from fasa import _fasa
from fasa._check import shown

TextOrPath = Union[str, os.PathLike[str]]


def read_source(text_or_path: TextOrPath, what: str, func: str) -> Any:
    """A _fasa.Source: a path-like object, or a str naming an existing file, is that file's bytes
    (labelled with the path, as the CLI's results are); any other str is the text itself."""
    if isinstance(text_or_path, os.PathLike) or (
        isinstance(text_or_path, str) and "\n" not in text_or_path and os.path.isfile(text_or_path)
    ):
        path = os.fspath(text_or_path)
        with open(path, "rb") as f:
            return _fasa.Source(f.read(), path, True)
    if isinstance(text_or_path, str):
        return _fasa.Source(text_or_path.encode("utf-8"), f"<{what}>", False)
    raise TypeError(f"{func}: the {what} must be a str (the {what} itself, or a file's path) or "
                    f"a path (got {shown(text_or_path)})")
