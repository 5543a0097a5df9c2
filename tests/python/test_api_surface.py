"""The package's surface: readable errors for wrong argument types, type hints a type checker
sees (mypy on a typed client script), an explicit __all__, the py.typed marker, docstrings
that cite only docs that exist, and model names resolved through $FASA_HOME."""

import ast
import inspect
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import fasa
from conftest import REPO, SMOLLM2, TEXT


def calls(model):
    s = fasa.Session(model, n_ctx=32)
    s.prefill([1, 2])
    return {
        "prompt int": (lambda: fasa.generate(model, 123), TypeError,
                       r"generate: prompt must be a str or a list of token ids \(got int 123\)"),
        "prompt ids": (lambda: fasa.generate(model, [1, "2"]), TypeError,
                       r"generate: prompt\[1\] must be an int token id \(got str '2'\)"),
        "max_tokens": (lambda: fasa.generate(model, "x", max_tokens="ten"), TypeError,
                       r"generate: max_tokens must be an int \(got str 'ten'\)"),
        "max_tokens range": (lambda: fasa.generate(model, "x", max_tokens=-2), ValueError,
                             r"generate: max_tokens must be >= -1 \(got -2\)"),
        "policy": (lambda: fasa.generate(model, "x", policy=5), TypeError,
                   r"generate: policy must be a policy spec str such as 'full'.* \(got int 5\)"),
        "temperature": (lambda: fasa.generate(model, "x", temperature="hot"), TypeError,
                        r"generate: temperature must be a number \(got str 'hot'\)"),
        "stop": (lambda: fasa.generate(model, "x", stop=5), TypeError,
                 r"generate: stop must be a str or a list of str \(got int 5\)"),
        "seed": (lambda: fasa.generate(model, "x", seed=-1), ValueError,
                 r"generate: seed must be >= 0"),
        "chat flag": (lambda: fasa.generate(model, "x", chat="yes"), TypeError,
                      r"generate: chat must be True or False"),
        "on_text": (lambda: fasa.generate(model, "x", on_text="print"), TypeError,
                    r"generate: on_text must be a callable or None"),
        "lossless": (lambda: fasa.generate(model, "x", lossless=2.5), TypeError,
                     r"generate: lossless must be 'off', 'auto' or an int K"),
        "lossless penalties": (lambda: fasa.generate(model, "x", lossless=2,
                                                     repetition_penalty=1.2), fasa.FasaError,
                               "lossless decoding cannot be combined with penalties"),
        "target": (lambda: fasa.generate("smollm2-135m", "x"), TypeError,
                   "generate: expected a fasa.Model or fasa.Session, got str"),
        "chat target": (lambda: fasa.chat(None, []), TypeError,
                        "chat: expected a fasa.Model or fasa.Session, got NoneType"),
        "n_ctx": (lambda: fasa.Session(model, n_ctx="big"), TypeError,
                  r"Session: n_ctx must be an int \(got str 'big'\)"),
        "session model": (lambda: fasa.Session("smollm2-135m"), TypeError,
                          r"Session: model must be a fasa.Model"),
        "session policy": (lambda: fasa.Session(model, policy=None), TypeError,
                           "Session: policy must be a policy spec str"),
        "decode": (lambda: s.decode("a"), TypeError,
                   r"Session.decode: token must be an int \(got str 'a'\)"),
        "prefill": (lambda: s.prefill("text"), TypeError,
                    r"Session.prefill: ids must be a list of token ids \(got str 'text'\)"),
        "tokenize": (lambda: model.tokenize(5), TypeError, "Model.tokenize: text must be a str"),
        "model": (lambda: fasa.Model(5), TypeError,
                  r"Model: path_or_name must be a str or a path \(got int 5\)"),
        "eval_ppl text": (lambda: fasa.eval_ppl(model, 5), TypeError,
                          r"eval_ppl: the text must be a str .* or a path \(got int 5\)"),
        "eval_ppl n_ctx": (lambda: fasa.eval_ppl(model, TEXT, n_ctx=1.5), TypeError,
                           r"eval_ppl: n_ctx must be an int \(got float 1.5\)"),
        "eval_ppl compare": (lambda: fasa.eval_ppl(model, TEXT, compare=[3]), TypeError,
                             r"eval_ppl: compare\[0\] must be a str"),
        "eval_tasks": (lambda: fasa.eval_tasks(model, 5), TypeError,
                       "eval_tasks: tasks must be a JSONL file's path or a list of task dicts"),
        "eval_tasks jobs": (lambda: fasa.eval_tasks(model, [], jobs=0), ValueError,
                            r"eval_tasks: jobs must be >= 1 \(got 0\)"),
        "calibrate out": (lambda: fasa.calibrate(model, TEXT, 5), TypeError,
                          r"calibrate: out_path must be a str or a path \(got int 5\)"),
        "calibrate model": (lambda: fasa.calibrate([], TEXT, "x.json"), TypeError,
                            "calibrate: model must be a fasa.Model, a path or a model name"),
        "bench": (lambda: fasa.bench(model, n_prompt="16"), TypeError,
                  r"bench: n_prompt\[0\] must be an int|bench: n_prompt must be an int"),
        "parse_policy": (lambda: fasa.parse_policy(5), TypeError,
                         "parse_policy: spec must be a policy spec str"),
        "set_threads": (lambda: fasa.set_threads("2"), TypeError,
                        "set_threads: n must be an int"),
        "logit_bias": (lambda: fasa.generate(model, "x", logit_bias=[1]), TypeError,
                       r"generate: logit_bias must be a dict \{token id: bias\}"),
        "logit_bias value": (lambda: fasa.generate(model, "x", logit_bias={1: 500}),
                             ValueError, r"logit_bias\[1\] must be in \[-100, 100\]"),
    }


def test_wrong_arguments_name_the_argument(smollm2):
    for name, (call, error, match) in calls(smollm2).items():
        with pytest.raises(error, match=match):
            call()


PUBLIC = [n for n in fasa.__all__ if n != "FasaError"]


def test_all_and_type_hints():
    tree = ast.parse((Path(fasa.__file__)).read_text(encoding="utf-8"))
    api = next(n.value for n in tree.body if isinstance(n, ast.Assign)
               and getattr(n.targets[0], "id", "") == "_API")
    typed = {a.asname for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert sorted(fasa.__all__) == sorted(ast.literal_eval(api)) == sorted(typed - {None})
    for name in PUBLIC:
        obj = getattr(fasa, name)
        members = [obj]
        if inspect.isclass(obj):
            members = [m for _, m in inspect.getmembers(obj, inspect.isfunction)
                       if not m.__name__.startswith("_") or m.__name__ == "__init__"
                       and "__init__" in obj.__dict__]
        for f in members:
            hints = typing.get_type_hints(f)
            params = [p for p in inspect.signature(f).parameters if p not in ("self", "cls")]
            assert "return" in hints and set(params) <= set(hints), f"{name}.{f.__name__}"
    assert (Path(fasa.__file__).parent / "py.typed").is_file()


CLIENT = '''
from typing import Any, Dict, List, Optional

import fasa

def main() -> None:
    model = fasa.Model(fasa.model_path("smollm2-135m"))
    r: fasa.GenerateResult = fasa.generate(model, "Hi", max_tokens=4)
    text: str = r.text
    reply: fasa.ChatResult = fasa.chat(model, [{"role": "user", "content": "Hi"}])
    msg: Dict[str, str] = reply.message
    stream: fasa.GenerateStream = fasa.generate(model, [1, 2], stream=True)
    for piece in stream:
        print(piece.upper())
    done: Optional[fasa.GenerateResult] = stream.result
    s = fasa.Session(model, policy="full", n_ctx=64)
    first: int = s.sample(temperature=0.7, seed=1)
    fork: fasa.Session = s.fork()
    ids: List[int] = fork.tokens
    names: List[str] = fasa.policies()
    summaries: Dict[str, str] = fasa.policies(summaries=True)

    def show(p: fasa.Progress) -> None:
        print(p.phase, p.done, p.total, p.elapsed, p.eta)

    ppl: Dict[str, Any] = fasa.eval_ppl(model, "some text", progress=show)
    fasa.calibrate(model, "text", "out.json", progress=show)
    try:
        fasa.parse_policy("x")
    except fasa.FasaError as e:
        print(e, text, msg, done, first, ids, names, summaries, ppl)
'''

BAD_CLIENT = '''
from typing import Any, Dict, List, Optional

import fasa
n: int = fasa.generate(fasa.Model("m"), "Hi").text
fasa.generate(fasa.Model("m"), "Hi", max_tokens="ten")
'''


def mypy(tmp_path, code):
    try:
        import mypy  # noqa: F401  (tests/python/requirements.txt pins it)
    except ImportError:
        if os.environ.get("FASA_REQUIRE_MODEL") == "1":
            raise
        pytest.skip("no mypy in this venv (scripts/python_package.sh --deps installs it)")
    f = tmp_path / "client.py"
    f.write_text(code, encoding="utf-8")
    # The client, and the installed package's API modules themselves (strict: every function
    # annotated, no Any leaking out).
    api = sorted({f"fasa.{p.stem}" for p in Path(fasa.__file__).parent.glob("_*.py")}
                 | {"fasa"})
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                           "--cache-dir", str(tmp_path / "cache"),
                           *[a for m in ["client", *api] for a in ("-m", m)]],
                          capture_output=True, text=True, cwd=tmp_path)


def test_mypy_checks_a_client(tmp_path):
    good = mypy(tmp_path, CLIENT)
    assert good.returncode == 0, good.stdout + good.stderr
    bad = mypy(tmp_path, BAD_CLIENT)
    assert bad.returncode == 1
    assert 'Incompatible types in assignment (expression has type "str"' in bad.stdout
    assert 'No overload variant of "generate" matches' in bad.stdout


def test_docstrings_cite_existing_docs():
    cited = set()
    for f in (REPO / "python").rglob("*"):
        if f.is_file() and f.suffix in (".py", ".pyi", ".cpp", ".h", ".md", ".toml"):
            cited |= set(re.findall(r"docs/[\w./-]+?\.md", f.read_text(encoding="utf-8")))
    assert "docs/PYTHON.md" in cited
    missing = sorted(d for d in cited if not (REPO / d).is_file())
    assert not missing, f"python/ cites docs that do not exist: {missing}"
    assert "docs/POLICIES.md" in (fasa.generate.__doc__ or "")


def test_model_names_resolve_through_fasa_home(smollm2):
    assert fasa.model_path("smollm2-135m") == str(SMOLLM2) == smollm2.path
    assert fasa.model_path(SMOLLM2) == str(SMOLLM2)
    with pytest.raises(fasa.FasaError, match="no-such-model"):
        fasa.model_path("no-such-model")
