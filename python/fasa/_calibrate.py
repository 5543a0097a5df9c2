"""calibrate: FASA's offline calibration into a file the fasa policy reads (calib=PATH)."""

import os
from typing import Any, Dict, Optional, Union

from fasa import _check, _fasa
from fasa._eval import ModelArg, _model
from fasa._model import set_threads
from fasa._progress import ProgressFn, reporter
from fasa._sources import TextOrPath, read_source


def calibrate(
    model: ModelArg,
    text_or_path: TextOrPath,
    out_path: Union[str, os.PathLike[str]],
    tokens: int = 1024,
    samples: int = 4,
    steps: int = 32,
    k: int = 256,
    compound: float = 0.25,
    fc_layout: str = "rope",
    threads: Optional[int] = None,
    progress: Optional[ProgressFn] = None,
) -> Dict[str, Any]:
    """Ranks each head's frequency chunks on a calibration text (a path, or the text) and
    writes the calibration JSON to `out_path` (crash-safely), as `fasa calibrate` does, with its
    defaults: `samples` windows of `tokens` prefilled tokens, each then `steps` decode-step
    queries; top-`k` agreement; compound sets of `compound` FCs (a count, a fraction < 1, or 0
    for none); `fc_layout` rope or adjacent. Returns {"path", "n_tokens"}. `progress(p)` gets
    a fasa.Progress after each sample (phase "sample") and each compound-set job ("compound
    set"); Ctrl-C stops the calibration (no file is written) and raises KeyboardInterrupt."""
    f = "calibrate"
    m = _model(model, f)
    out = _check.path(f, "out_path", out_path)
    if threads is not None:
        set_threads(threads)
    src = read_source(text_or_path, "text", f)
    name = os.path.basename(src.label) if src.is_file else src.label
    n = _fasa.calibrate(
        m._m,
        src,
        name,
        out,
        _check.integer(f, "tokens", tokens),
        _check.integer(f, "samples", samples),
        _check.integer(f, "steps", steps),
        _check.integer(f, "k", k),
        _check.real(f, "compound", compound),
        _check.text(f, "fc_layout", fc_layout, "'rope' or 'adjacent'"),
        reporter(f, progress),
    )
    return {"path": out, "n_tokens": int(n)}
