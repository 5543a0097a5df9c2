"""Progress of a long call (calibrate, eval_ppl, eval_tasks), given to a `progress=` callable."""

import time
from typing import Any, Callable, NamedTuple, Optional

from fasa import _check


class Progress(NamedTuple):
    """Where a long call is: `done` of `total` units of its phase ("chunk" for eval_ppl,
    "generation" for eval_tasks, "sample" then "compound set" for calibrate), the seconds since
    the call started, and an estimate of the seconds left in the phase (None until one unit is
    done)."""

    phase: str
    done: int
    total: int
    elapsed: float
    eta: Optional[float]


ProgressFn = Callable[[Progress], Any]


def reporter(func: str, progress: Optional[ProgressFn]) -> Optional[Callable[..., None]]:
    """The callable the extension calls with (phase, done, total[, share of the phase's work
    done]), which calls `progress` with a Progress; None without one."""
    fn = _check.callback(func, "progress", progress)
    if fn is None:
        return None
    t0 = time.monotonic()
    current, start, last = "", t0, t0

    def report(phase: str, done: int, total: int, share: Optional[float] = None) -> None:
        nonlocal current, start, last
        now = time.monotonic()
        if phase != current:  # a new phase began when the last one's last unit ended
            current, start = phase, last
        last = now
        if share is None:
            share = done / total if total > 0 else 1.0
        eta = (now - start) * (1.0 - share) / share if share > 0 else None
        fn(Progress(phase, done, total, now - t0, eta))

    return report
