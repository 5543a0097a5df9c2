"""The Python package (python/, installed with `pip install ./python`) against the CLI: the same
tokens, generations, perplexities, task scores, bench rows and calibration files, errors with the
engine's messages, and the GIL released while the engine computes. Needs the installed package, the
built CLI ($FASA_CLI, else build/fasa) and SmolLM2 in the cache (a skip, or a failure under
FASA_REQUIRE_MODEL=1)."""

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import fasa

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("FASA_CLI", str(REPO / "build" / "fasa"))
HOME = Path(os.environ.get("FASA_HOME", Path.home() / ".cache" / "fasa"))
SMOLLM2 = HOME / "models" / "smollm2-135m" / "SmolLM2-135M-Instruct.Q4_1.gguf"
# A text every checkout has (English prose, tens of KB).
TEXT = REPO / "tests" / "data" / "text" / "harbour.txt"  # fixed prose: docs edits move no number


@pytest.fixture(scope="module")
def model():
    if not SMOLLM2.exists():
        why = f"no model at {SMOLLM2} (./build/fasa pull smollm2-135m)"
        if os.environ.get("FASA_REQUIRE_MODEL") == "1":
            pytest.fail(why + " and FASA_REQUIRE_MODEL=1")
        pytest.skip(why)
    if not Path(CLI).exists():
        pytest.fail(f"no fasa CLI at {CLI} (build it, or set FASA_CLI)")
    return fasa.Model(str(SMOLLM2))


def cli(*args, ok=True):
    """Runs the CLI; its stdout (or, with ok=False, the finished process)."""
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
    if ok:
        assert p.returncode == 0, p.stderr
        return p.stdout
    return p


def test_tokenize_round_trip_and_cli_ids(model):
    text = "Emma Woodhouse, handsome, clever, and rich — naïve 東京 <|im_end|> 42."
    ids = model.tokenize(text)
    assert all(isinstance(i, int) for i in ids)
    cli_ids = [int(x) for x in cli("tokenize", "-m", str(SMOLLM2), "-p", text, "--bos",
                                   "--no-special").split()]
    assert ids == cli_ids
    assert model.detokenize(model.tokenize(text, add_special=False)) == text
    # Special-token text parsed into one control token (hidden unless asked for).
    special = model.tokenize("<|im_end|>", add_special=False, parse_special=True)
    assert len(special) == 1 and model.is_eog(special[0])
    assert model.detokenize(special) == ""
    assert model.detokenize(special, show_special=True) == "<|im_end|>"


def test_config(model):
    c = model.config
    assert c["arch"] == "llama" and c["n_layers"] == 30 and c["n_vocab"] == model.n_vocab
    assert c["n_heads"] % c["n_kv_heads"] == 0 and c["n_ctx_max"] >= 2048
    assert model.path == str(SMOLLM2)


@pytest.mark.parametrize(
    "policy,chat",
    [("full", False), ("full", True), ("streaming:budget=8,sinks=2", False),
     ("fasa:calib=online,calib_window=4,budget=4,dense_layers=none", False)],
)
def test_greedy_generate_equals_cli_run(model, policy, chat):
    prompt = "Write one sentence about the sea." if chat else "The capital of France is"
    r = fasa.generate(model, prompt, max_tokens=24, temperature=0, policy=policy, chat=chat)
    args = ["run", "-m", str(SMOLLM2), "-p", prompt, "-n", "24", "--temp", "0", "-q",
            "--policy", policy]
    if chat:
        args.append("--chat")
    out = cli(*args)
    assert out.endswith("\n")
    assert r.text == out[:-1]
    assert r.stop_reason in ("length", "eos")
    assert r.stop_reason != "length" or len(r.tokens) == 24
    assert model.detokenize(r.tokens) == r.text
    assert r.stats["n_prompt"] == len(model.prompt_tokens(prompt, chat=chat))


def test_session_prefill_and_decode(model):
    ids = model.tokenize("The capital of France is")
    s = fasa.Session(model, n_ctx=64)
    logits = s.prefill(ids)
    assert isinstance(logits, np.ndarray) and logits.dtype == np.float32
    assert logits.shape == (model.n_vocab,) and np.isfinite(logits).all()
    assert s.n_past == len(ids) and s.n_ctx == 64
    first = fasa.generate(model, ids, max_tokens=1, temperature=0).tokens[0]
    assert int(np.argmax(logits)) == first
    nxt = s.decode(first)
    assert nxt.shape == (model.n_vocab,) and s.n_past == len(ids) + 1
    assert np.array_equal(s.logits, nxt)
    logits[0] = 0.0  # the arrays are the caller's own
    s.reset()
    assert s.n_past == 0
    again = s.prefill(ids)
    assert int(np.argmax(again)) == first
    # The second greedy token of a generation is the decode step's argmax.
    two = fasa.generate(model, ids, max_tokens=2, temperature=0).tokens
    assert two == [first, int(np.argmax(nxt))]


def test_generate_on_session_continues_it(model):
    s = fasa.Session(model, n_ctx=128)
    a = fasa.generate(s, "Once upon a time", max_tokens=8, temperature=0)
    n = s.n_past
    assert n == a.stats["n_prompt"] + len(a.tokens) - 1  # the last sampled token is not appended
    b = fasa.generate(s, [a.tokens[-1]], max_tokens=4, temperature=0)
    assert b.stats["n_prompt"] == 1 and s.n_past == n + len(b.tokens)
    with pytest.raises(ValueError, match="session's own"):
        fasa.generate(s, "x", policy="full")


def test_sampling_is_seeded(model):
    kw = dict(max_tokens=16, temperature=0.9, seed=1234)
    a = fasa.generate(model, "Tell me a story", **kw)
    b = fasa.generate(model, "Tell me a story", **kw)
    assert a.tokens == b.tokens and a.stats["seed"] == 1234
    out = cli("run", "-m", str(SMOLLM2), "-p", "Tell me a story", "-n", "16", "--temp", "0.9",
              "--seed", "1234", "-q")
    assert a.text == out[:-1]


def test_streaming_callback_gets_the_text(model):
    pieces = []
    r = fasa.generate(model, "The capital of France is", max_tokens=12, temperature=0,
                      on_text=pieces.append)
    assert "".join(pieces) == r.text and len(pieces) > 1

    def boom(piece):
        raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        fasa.generate(model, "The capital of France is", max_tokens=12, on_text=boom)


def ppl_fields(j):
    keys = ("policy", "n_ctx", "n_decode", "n_chunks", "n_tokens", "n_scored", "ppl", "ppl_se",
            "mean_nll", "chunk_ppl", "decode_rows_read_fraction", "model_sha256", "text_sha256",
            "fasa_version", "kernels")
    return {k: j[k] for k in keys}


def test_eval_ppl_equals_cli(model):
    py = fasa.eval_ppl(model, TEXT, n_ctx=128, chunks=2)
    out = json.loads(cli("eval", "ppl", "-m", str(SMOLLM2), "--text", str(TEXT), "--ctx", "128",
                         "--chunks", "2", "--json"))
    assert ppl_fields(py) == ppl_fields(out)
    # The same build provenance as the CLI: its release and commit ("0.6.0 (a308dc3)").
    assert py["fasa_version"] == cli("--version").strip()
    assert py["n_chunks"] == 2 and 1.0 < py["ppl"] < 1000.0
    # The text itself gives the same numbers (only the label and the file hash differ).
    same = fasa.eval_ppl(model, TEXT.read_text(encoding="utf-8"), n_ctx=128, chunks=2)
    assert same["ppl"] == py["ppl"] and same["text"] == "<text>" and "text_sha256" not in same


def test_online_calibration_is_recorded(model):
    # No calibration file: FASA calibrates on the text itself, and the result says so.
    r = fasa.eval_ppl(model, str(TEXT), n_ctx=96, chunks=1, decode=16,
                      policy="fasa:calib=online,budget=16")
    assert r["calibration"] == "online" and "calib_sha256" not in r
    # A prompt shorter than CA's top-K still ranks the FCs (K capped at a quarter of its keys):
    # near full attention's perplexity, not the ~20x of an arbitrary FC choice.
    full = fasa.eval_ppl(model, str(TEXT), n_ctx=96, chunks=1, decode=16, policy="full")
    assert 1.0 < r["ppl"] < 2.0 * full["ppl"]


def test_eval_ppl_decode_compare_equals_cli(model):
    py = fasa.eval_ppl(model, str(TEXT), n_ctx=96, chunks=1, decode=16,
                       policy="streaming:budget=16", compare=["full"])
    out = json.loads(cli("eval", "ppl", "-m", str(SMOLLM2), "--text", str(TEXT), "--ctx", "96",
                         "--chunks", "1", "--decode", "16", "--policy", "streaming",
                         "--budget", "16", "--compare", "full", "--json"))
    assert [ppl_fields(j) for j in py["results"]] == [ppl_fields(j) for j in out["results"]]
    assert py["results"][0]["decode_rows_read_fraction"] < 1.0
    for k in ("decode_kv_bytes_read_per_token", "dense_kv_bytes_read_per_token"):
        assert [j[k] for j in py["results"]] == [j[k] for j in out["results"]], k
    assert py["results"][0]["decode_kv_bytes_read_per_token"] < \
        py["results"][1]["decode_kv_bytes_read_per_token"]


TASKS = [
    {"id": "pk1", "task": "passkey", "metric": "contains", "answers": ["71432"],
     "max_new_tokens": 8,
     "prompt": "Remember this. The pass key is 71432. The grass is green. The sky is blue. "
               "What is the pass key? The pass key is"},
    {"id": "cap", "task": "capital", "metric": "exact", "answers": ["Paris"],
     "max_new_tokens": 4, "prompt": "Q: What is the capital of France?\nA:"},
    {"id": "all", "task": "capital", "metric": "all", "answers": ["Paris", "France"],
     "max_new_tokens": 12, "prompt": "Paris is the capital of"},
]


def test_eval_tasks_equals_cli(model, tmp_path):
    f = tmp_path / "tasks.jsonl"
    f.write_text("".join(json.dumps(t) + "\n" for t in TASKS), encoding="utf-8")
    policies = ["full", "streaming:budget=8,sinks=2"]
    py = fasa.eval_tasks(model, f, policies=policies)
    out = json.loads(cli("eval", "tasks", "-m", str(SMOLLM2), "--tasks", str(f), "--compare",
                         policies[1], "--json"))
    drop = ("decode_tokens_per_s",)
    strip = lambda rs: [{k: v for k, v in r.items() if k not in drop} for r in rs]  # noqa: E731
    assert strip(py["results"]) == strip(out["results"])
    assert py["items"] == out["items"]
    for k in ("n_ctx", "chat", "kv_type", "lossless", "tasks_sha256", "model_sha256",
              "fasa_version"):
        assert py[k] == out[k], k
    assert len(py["items"]) == 6 and {r["policy"] for r in py["results"]} == set(policies)
    # Task dicts instead of a file: the same outputs.
    again = fasa.eval_tasks(model, TASKS, policies=policies)
    assert again["items"] == py["items"] and again["tasks_file"] == "<tasks>"
    assert py["protocol"] == out["protocol"] == "dense-prefill"


def test_eval_tasks_question_under_policy_equals_cli(model, tmp_path):
    tasks = [dict(TASKS[0], question="What is the pass key? The pass key is")]
    f = tmp_path / "tasks.jsonl"
    f.write_text(json.dumps(tasks[0]) + "\n", encoding="utf-8")
    policies = ["full", "streaming:budget=8,sinks=2"]
    py = fasa.eval_tasks(model, f, policies=policies, question_under_policy=True)
    out = json.loads(cli("eval", "tasks", "-m", str(SMOLLM2), "--tasks", str(f), "--compare",
                         policies[1], "--question-under-policy", "--json"))
    assert py["items"] == out["items"]
    assert py["protocol"] == out["protocol"] == "question-under-policy"
    assert py["items"][0]["n_question"] > 5
    with pytest.raises(fasa.FasaError, match="has no \"question\""):
        fasa.eval_tasks(model, TASKS, question_under_policy=True)


def test_calibrate_writes_a_file_the_cli_reads(model, tmp_path):
    out = tmp_path / "calib.json"
    r = fasa.calibrate(model, TEXT, out, tokens=64, samples=1, steps=4, k=16, compound=2)
    assert r["path"] == str(out) and r["n_tokens"] > 64
    show = json.loads(cli("calib", "show", str(out), "--json"))
    assert show["k"] == 16 and show["fc_layout"] == "rope"
    assert len(show["covered_layers"]) == model.config["n_layers"]
    text = cli("calib", "show", str(out))
    assert "1 samples x (64 tokens + 4 steps) of harbour.txt" in text
    # The fasa policy takes it, and runs.
    spec = f"fasa:calib={out},budget=16"
    assert fasa.parse_policy(spec, model) == ("fasa", {"calib": str(out), "budget": "16"})
    assert fasa.generate(model, "Hello", max_tokens=4, policy=spec).stats["n_ctx"] > 0


def engine_message(*args):
    p = cli(*args, ok=False)
    assert p.returncode != 0
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("fasa: error: ")
    return line[len("fasa: error: "):]


def test_bench_rows_are_the_cli_json_rows(model):
    policies = ["full", "streaming:budget=8,sinks=2"]
    py = fasa.bench(model, n_prompt=16, n_gen=4, depth=[0, 24], repetitions=1,
                    policies=policies, warmup=False)
    out = [json.loads(line) for line in cli(
        "bench", "-m", str(SMOLLM2), "-p", "16", "-n", "4", "-d", "0,24", "-r", "1", "--policy",
        "full", "--compare", policies[1], "--no-warmup", "--json").splitlines()]
    # The same rows in the same order, each with the same fields in the same order.
    assert [list(r) for r in py] == [list(o) for o in out]
    assert [(r["depth"], r["test"], r["policy"]) for r in py] == [
        (d, t, p) for d in (0, 24) for t in ("pp16", "tg4") for p in policies]
    # What does not depend on the clock is equal: the build, the inputs, the bytes read.
    timeless = ("model", "model_sha256", "fasa_version", "kernels", "kv_type", "reps", "warmup",
                "batch", "n_tokens", "depth_fill", "kv_bytes_read_per_token",
                "dense_kv_bytes_read_per_token", "kv_resident_ram_bytes", "lossless")
    for r, o in zip(py, out):
        assert {k: r[k] for k in timeless if k in o} == {k: o[k] for k in timeless if k in o}
        assert r["tokens_per_s"] > 0 and len(r["samples"]) == 1
    tg = [r for r in py if r["test"] == "tg4" and r["depth"] == 24]
    assert tg[1]["kv_bytes_read_per_token"] < tg[0]["kv_bytes_read_per_token"]
    # Scalars for the lists, a synthetic depth.
    synth = fasa.bench(model, n_prompt=0, n_gen=2, depth=8, repetitions=2, policies="full",
                       depth_fill="synthetic")
    assert [r["test"] for r in synth] == ["tg2"] and len(synth[0]["samples"]) == 2
    assert synth[0]["depth_fill"] == "synthetic"
    # A text's tokens for the depth, lossless decoding: the CLI's drafts, acceptance and tokens.
    args = dict(n_prompt=0, n_gen=8, depth=48, repetitions=1, lossless="2", text=TEXT)
    py = fasa.bench(model, policies=["full", "streaming:budget=16"], **args)
    out = [json.loads(line) for line in cli(
        "bench", "-m", str(SMOLLM2), "-p", "0", "-n", "8", "-d", "48", "-r", "1", "--policy",
        "full,streaming", "--budget", "16", "--lossless", "2", "--text", str(TEXT),
        "--json").splitlines()]
    lossless = ("policy", "lossless_acceptance", "lossless_drafted", "same_tokens_as_full",
                "kv_bytes_read_per_token")
    assert [{k: r.get(k) for k in lossless} for r in py] == \
        [{k: o.get(k) for k in lossless} for o in out]
    assert py[1]["same_tokens_as_full"] is True
    with pytest.raises(fasa.FasaError, match="nothing to measure"):
        fasa.bench(model, n_prompt=0, n_gen=0)
    with pytest.raises(fasa.FasaError, match="-r must be >= 1"):
        fasa.bench(model, repetitions=0)


def test_errors_carry_the_engine_message(model, tmp_path):
    missing = str(tmp_path / "missing.gguf")
    with pytest.raises(fasa.FasaError) as e:
        fasa.Model(missing)
    assert str(e.value) == engine_message("run", "-m", missing, "-p", "x")
    assert isinstance(e.value, ValueError) and isinstance(e.value, RuntimeError)

    with pytest.raises(ValueError) as e:
        fasa.parse_policy("nosuch:budget=8")
    assert str(e.value) == engine_message("run", "-m", str(SMOLLM2), "-p", "x", "--policy",
                                          "nosuch")
    assert "unknown attention policy 'nosuch'" in str(e.value)
    with pytest.raises(ValueError, match="policy 'streaming' has no option 'bogus'"):
        fasa.parse_policy("streaming:budget=8,bogus=1")
    with pytest.raises(ValueError, match="needs a budget"):
        fasa.Session(model, policy="streaming")
    with pytest.raises(fasa.FasaError, match="dense layer 99 does not exist"):
        fasa.parse_policy("fasa:calib=x.json,budget=8,dense_layers=99", model)

    s = fasa.Session(model, n_ctx=8)
    with pytest.raises(fasa.FasaError, match=rf"token id {model.n_vocab} is out of range"):
        s.decode(model.n_vocab)
    with pytest.raises(fasa.FasaError, match="token id -1 is out of range"):
        s.prefill([1, -1])
    with pytest.raises(fasa.FasaError, match="context overflow"):
        s.prefill([1] * 9)
    with pytest.raises(fasa.FasaError, match="out of range"):
        model.detokenize([model.n_vocab + 5])
    with pytest.raises(fasa.FasaError, match="KV cache type|kv"):
        fasa.Session(model, kv_type="f8")
    with pytest.raises(fasa.FasaError, match="the text has 4 tokens, fewer than one chunk of 128"):
        fasa.eval_ppl(model, "too short a text", n_ctx=128)


def test_policies():
    names = fasa.policies()
    assert {"full", "fasa", "streaming", "quest", "h2o"} <= set(names)
    summaries = fasa.policies(summaries=True)
    assert list(summaries) == names and all(summaries.values())
    assert fasa.parse_policy("streaming:budget=0.5,sinks=4") == (
        "streaming", {"budget": "0.5", "sinks": "4"})
    assert "streaming" in fasa.policy_help()


def test_gil_is_released_while_generating(model):
    """A Python thread keeps running while generate computes: with the GIL held for the whole
    call it could not take a single step in between."""
    fasa.set_threads(1)  # a core left for the counting thread
    try:
        steps = []
        running = threading.Event()
        done = threading.Event()

        def count():
            running.set()
            while not done.is_set():
                steps.append(time.monotonic())
                time.sleep(0.001)

        t = threading.Thread(target=count)
        t.start()
        running.wait()
        t0 = time.monotonic()
        r = fasa.generate(model, "Once upon a time", max_tokens=48, temperature=0)
        t1 = time.monotonic()
        done.set()
        t.join()
    finally:
        fasa.set_threads(0)
    during = [x for x in steps if t0 < x < t1]
    assert t1 - t0 > 0.1 and len(r.tokens) > 8
    assert len(during) >= 20, f"{len(during)} steps of the other thread in {t1 - t0:.2f} s"
