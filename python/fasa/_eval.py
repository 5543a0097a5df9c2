"""eval_ppl and eval_tasks: what `fasa eval ppl --json` and `fasa eval tasks --json` print."""

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from fasa import _check, _fasa
from fasa._model import Model, set_threads
from fasa._progress import ProgressFn, reporter
from fasa._sources import TextOrPath, read_source

ModelArg = Union[Model, str, os.PathLike[str]]


def _model(m: ModelArg, func: str = "") -> Model:
    if isinstance(m, Model):
        return m
    if not isinstance(m, (str, os.PathLike)):
        raise TypeError(f"{func}: model must be a fasa.Model, a path or a model name "
                        f"(got {_check.shown(m)})")
    return Model(m)


def _specs(func: str, name: str, value: Union[str, Sequence[str]]) -> List[str]:
    return [_check.policy(func, f"{name}[{i}]", p) for i, p in
            enumerate(_check.strings(func, name, value))]


def eval_ppl(
    model: ModelArg,
    text_or_path: TextOrPath,
    n_ctx: int = 512,
    chunks: int = 0,
    decode: int = 0,
    batch: int = 512,
    policy: str = "full",
    compare: Union[str, Sequence[str]] = (),
    kv_type: str = "f16",
    threads: Optional[int] = None,
    progress: Optional[ProgressFn] = None,
) -> Dict[str, Any]:
    """Perplexity over consecutive chunks of `n_ctx` tokens of a text (a path, or the text):
    the second half of each chunk scored, or with `decode` D its last D tokens as policy-driven
    decode steps. `chunks` 0 = every whole chunk. Returns the dict `fasa eval ppl --json`
    prints (ppl, ppl_se, mean_nll, chunk_ppl, n_scored, ...); with `compare` specs,
    {"results": [one per policy]}. `progress(p)` gets a fasa.Progress after each chunk
    (phase "chunk"); Ctrl-C stops the evaluation and raises KeyboardInterrupt."""
    f = "eval_ppl"
    m = _model(model, f)
    if threads is not None:
        set_threads(threads)
    src = read_source(text_or_path, "text", f)
    out = _fasa.eval_ppl(
        m._m, src, _check.integer(f, "n_ctx", n_ctx), _check.integer(f, "chunks", chunks, 0),
        _check.integer(f, "decode", decode, 0), _check.integer(f, "batch", batch),
        _check.text(f, "kv_type", kv_type), _check.policy(f, "policy", policy),
        _specs(f, "compare", compare), reporter(f, progress))
    return dict(json.loads(out))


def _tasks_source(tasks: Union[str, os.PathLike[str], Sequence[Mapping[str, Any]]]) -> Any:
    if isinstance(tasks, (str, os.PathLike)):
        return read_source(tasks, "tasks", "eval_tasks")
    if not isinstance(tasks, Sequence) or not all(isinstance(t, Mapping) for t in tasks):
        raise TypeError("eval_tasks: tasks must be a JSONL file's path or a list of task dicts "
                        f"(got {_check.shown(tasks)})")
    lines = "".join(json.dumps(t) + "\n" for t in tasks)
    return _fasa.Source(lines.encode("utf-8"), "<tasks>", False)


def eval_tasks(
    model: ModelArg,
    tasks: Union[str, os.PathLike[str], Sequence[Mapping[str, Any]]],
    policies: Union[str, Sequence[str]] = ("full",),
    n_ctx: int = 0,
    jobs: int = 1,
    kv_type: str = "f16",
    chat: bool = False,
    lossless: Union[str, int] = "off",
    threads: Optional[int] = None,
    question_under_policy: bool = False,
    progress: Optional[ProgressFn] = None,
) -> Dict[str, Any]:
    """Greedy generation on long-context tasks under each policy spec in `policies`, scored.
    `tasks`: a JSONL task file (src/fasa/eval/tasks.h: id, task, prompt, answers,
    max_new_tokens, metric), or a list of task dicts. Returns the dict `fasa eval tasks --json`
    prints: "results" (per policy: score, mean_of_kinds, partial, by_task, ...) and "items"
    (per task and policy: output, score). `question_under_policy`: prefill each task's context
    densely and run its "question" (the prompt's tail) under each policy, as `fasa eval tasks
    --question-under-policy` does; every task then needs a "question". `progress(p)` gets a
    fasa.Progress after each (task, policy) generation (phase "generation"); Ctrl-C stops the
    run and raises KeyboardInterrupt."""
    f = "eval_tasks"
    m = _model(model, f)
    if threads is not None:
        set_threads(threads)
    src = _tasks_source(tasks)
    out = _fasa.eval_tasks(
        m._m, src, _specs(f, "policies", policies), _check.integer(f, "n_ctx", n_ctx, 0),
        _check.integer(f, "jobs", jobs, 1), _check.text(f, "kv_type", kv_type),
        _check.flag(f, "chat", chat), _check.lossless(f, lossless),
        _check.flag(f, "question_under_policy", question_under_policy), reporter(f, progress))
    return dict(json.loads(out))
