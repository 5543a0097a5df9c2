"""calibrate: FASA's offline calibration into a file the fasa policy reads (calib=PATH)."""

import os

from fasa import _fasa
from fasa._eval import _model
from fasa._model import set_threads
from fasa._sources import read_source


def calibrate(
    model,
    text_or_path,
    out_path,
    tokens=1024,
    samples=4,
    steps=32,
    k=256,
    compound=0.25,
    fc_layout="rope",
    threads=None,
):
    """Ranks each head's frequency chunks on a calibration text (a path, or the text) and
    writes the calibration JSON to `out_path` (crash-safely), as `fasa calibrate` does, with its
    defaults: `samples` windows of `tokens` prefilled tokens, each then `steps` decode-step
    queries; top-`k` agreement; compound sets of `compound` FCs (a count, a fraction < 1, or 0
    for none); `fc_layout` rope or adjacent. Returns {"path", "n_tokens"}."""
    m = _model(model)
    if threads is not None:
        set_threads(threads)
    src = read_source(text_or_path, "text")
    name = os.path.basename(src.label) if src.is_file else src.label
    n = _fasa.calibrate(
        m._m,
        src,
        name,
        os.fspath(out_path),
        int(tokens),
        int(samples),
        int(steps),
        int(k),
        float(compound),
        fc_layout,
    )
    return {"path": os.fspath(out_path), "n_tokens": n}
