"""eval_ppl and eval_tasks: what `fasa eval ppl --json` and `fasa eval tasks --json` print."""

import json
import os

from fasa import _fasa
from fasa._model import Model, set_threads
from fasa._sources import read_source


def _model(m):
    return m if isinstance(m, Model) else Model(m)


def eval_ppl(
    model,
    text_or_path,
    n_ctx=512,
    chunks=0,
    decode=0,
    batch=512,
    policy="full",
    compare=(),
    kv_type="f16",
    threads=None,
):
    """Perplexity over consecutive chunks of `n_ctx` tokens of a text (a path, or the text):
    the second half of each chunk scored, or with `decode` D its last D tokens as policy-driven
    decode steps. `chunks` 0 = every whole chunk. Returns the dict `fasa eval ppl --json`
    prints (ppl, ppl_se, mean_nll, chunk_ppl, n_scored, ...); with `compare` specs,
    {"results": [one per policy]}."""
    m = _model(model)
    if threads is not None:
        set_threads(threads)
    src = read_source(text_or_path, "text")
    out = _fasa.eval_ppl(
        m._m, src, int(n_ctx), int(chunks), int(decode), int(batch), kv_type, policy, list(compare)
    )
    return json.loads(out)


def _tasks_source(tasks):
    if isinstance(tasks, (str, os.PathLike)):
        return read_source(tasks, "tasks")
    lines = "".join(json.dumps(t) + "\n" for t in tasks)
    return _fasa.Source(lines.encode("utf-8"), "<tasks>", False)


def eval_tasks(
    model,
    tasks,
    policies=("full",),
    n_ctx=0,
    jobs=1,
    kv_type="f16",
    chat=False,
    lossless="off",
    threads=None,
    question_under_policy=False,
):
    """Greedy generation on long-context tasks under each policy spec in `policies`, scored.
    `tasks`: a JSONL task file (src/fasa/eval/tasks.h: id, task, prompt, answers,
    max_new_tokens, metric), or a list of task dicts. Returns the dict `fasa eval tasks --json`
    prints: "results" (per policy: score, mean_of_kinds, partial, by_task, ...) and "items"
    (per task and policy: output, score). `question_under_policy`: prefill each task's context
    densely and run its "question" (the prompt's tail) under each policy, as `fasa eval tasks
    --question-under-policy` does; every task then needs a "question"."""
    m = _model(model)
    if threads is not None:
        set_threads(threads)
    src = _tasks_source(tasks)
    out = _fasa.eval_tasks(
        m._m, src, list(policies), int(n_ctx), int(jobs), kv_type, bool(chat), str(lossless),
        bool(question_under_policy),
    )
    return json.loads(out)
