"""lm-eval's `local-completions` model against `fasa serve`, on small local tasks in lm-eval's own
YAML format, gives the scores `fasa eval tasks` computes for the same items:

- a generate_until task: lm-eval's `exact_match` (ignore_case, after the `remove_whitespace`
  filter: the text stripped) against fasa's `exact` metric (lower-cased, stripped, inner white
  space runs folded). The two coincide when an output holds no run of inner white space; the
  test checks the generated texts are equal, byte for byte, and then each item's score.
- a multiple_choice task: lm-eval's `acc` and `acc_norm` (log-likelihood per character)
  against fasa's `choice` metric (acc, acc_norm), item by item, and each choice's
  log-likelihood within a tolerance (the server scores a prompt in chunks of 32 tokens, fasa
  eval prefills the context then continues per choice: float sums in another order).

With `local-chat-completions --apply_chat_template` (generation only: chat models give no
log-likelihoods), the server applies the model's chat format, and the answers equal `fasa eval
tasks --chat`'s.

Both read the same JSONL files: lm-eval through `dataset_path: json` (no download), fasa
directly. lm-eval tokenizes through the server (tokenizer_backend=remote: /tokenizer_info,
/tokenize), so nothing is fetched from Hugging Face.

    run_lmeval_test.sh build/fasa
"""

import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from fasa_server import MODEL, Server  # noqa: E402

FASA = None  # the binary, from argv
LM_EVAL_TIMEOUT_S = 240

SHOT = "Q: What is the capital of Germany?\nA: Berlin\n"  # one worked example: short answers
GEN_ITEMS = [  # (prompt, answer): simple factual and copy questions, written for this test
    (SHOT + "Q: What is the capital of France?\nA:", "Paris"),
    (SHOT + "Q: What is the capital of Italy?\nA:", "Rome"),
    (SHOT + "Q: What is the capital of Japan?\nA:", "Tokyo"),
    (SHOT + "Q: What color is fresh snow?\nA:", "White"),
    (SHOT + "Q: How many legs does a dog have?\nA:", "Four"),
    ("Copy the word.\nWord: lamp\nCopy: lamp\nWord: orange\nCopy:", "orange"),
    ("Copy the word.\nWord: lamp\nCopy: lamp\nWord: table\nCopy:", "table"),
    ("Count on: 1, 2, 3, 4,", "5"),
]

MC_ITEMS = [  # (prompt, choices, gold); one prompt ends in a space (lm-eval moves it)
    ("Q: What is the capital of France?\nA:", [" Paris", " London", " Madrid"], 0),
    ("Q: What color is grass?\nA:", [" green", " purple", " orange"], 0),
    ("Q: How many days are in a week?\nA:", [" five", " seven", " ten"], 1),
    ("Q: Which animal says meow?\nA:", [" a dog", " a cat", " a cow"], 1),
    ("Q: What do bees make?\nA:", [" honey", " milk", " bread"], 0),
    ("Q: What is frozen water called?\nA:", [" steam", " ice", " sand"], 1),
    ("Q: Which of these is the largest animal?\nA:", [" an ant", " a mouse", " a whale"], 2),
    ("The opposite of hot is ", ["cold", "tall", "blue"], 0),
]

GEN_YAML = """task: fasa_gen
dataset_path: json
dataset_kwargs:
  data_files:
    test: {path}
test_split: test
output_type: generate_until
doc_to_text: prompt
doc_to_target: "{{{{answers[0]}}}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: {max_new}
  do_sample: false
  temperature: 0
filter_list:
  - name: strip
    filter:
      - function: remove_whitespace
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
"""

MC_YAML = """task: fasa_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: {path}
test_split: test
output_type: multiple_choice
doc_to_text: prompt
doc_to_choice: choices
doc_to_target: gold
target_delimiter: ""
metric_list:
  - metric: acc
  - metric: acc_norm
"""

MAX_NEW = 8


def write_tasks(d):
    """The fasa JSONL files (one per task) and lm-eval's YAML files reading them."""
    gen = [{"id": f"g{i}", "task": "fasa_gen", "prompt": p, "answers": [a],
            "max_new_tokens": MAX_NEW, "metric": "exact", "stop": ["\n"]}
           for i, (p, a) in enumerate(GEN_ITEMS)]
    mc = [{"id": f"m{i}", "task": "fasa_mc", "prompt": p, "choices": c, "gold": g,
           "metric": "choice"} for i, (p, c, g) in enumerate(MC_ITEMS)]
    paths = {}
    for name, items in (("gen", gen), ("mc", mc)):
        paths[name] = os.path.join(d, f"{name}.jsonl")
        with open(paths[name], "w") as f:
            f.writelines(json.dumps(x) + "\n" for x in items)
    yaml_dir = os.path.join(d, "yaml")
    os.makedirs(yaml_dir)
    with open(os.path.join(yaml_dir, "fasa_gen.yaml"), "w") as f:
        f.write(GEN_YAML.format(path=paths["gen"], max_new=MAX_NEW))
    with open(os.path.join(yaml_dir, "fasa_mc.yaml"), "w") as f:
        f.write(MC_YAML.format(path=paths["mc"]))
    both = os.path.join(d, "all.jsonl")
    with open(both, "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in gen + mc)
    return yaml_dir, both


def lm_eval_command(port, yaml_dir, out_dir, tasks=("fasa_gen", "fasa_mc"), chat=False):
    """The commands docs/SERVER.md shows, with this test's port and directories: completions
    with the server's tokenizer, or (chat) chat completions with --apply_chat_template."""
    bin_dir = os.path.dirname(sys.executable)
    if chat:
        model = ["--model", "local-chat-completions", "--model_args",
                 f"base_url=http://127.0.0.1:{port}/v1/chat/completions,model={MODEL},"
                 "num_concurrent=1,max_retries=1", "--apply_chat_template"]
    else:
        model = ["--model", "local-completions", "--model_args",
                 f"base_url=http://127.0.0.1:{port}/v1/completions,model={MODEL},"
                 "tokenizer_backend=remote,num_concurrent=1,max_retries=1"]
    return [os.path.join(bin_dir, "lm_eval"), *model,
            "--include_path", yaml_dir, "--tasks", ",".join(tasks),
            "--output_path", out_dir, "--log_samples"]


def run_lm_eval(port, yaml_dir, d, tasks=("fasa_gen", "fasa_mc"), chat=False):
    out_dir = os.path.join(d, "lm_eval_chat" if chat else "lm_eval_out")
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               HF_HOME=os.path.join(d, "hf"), HF_DATASETS_CACHE=os.path.join(d, "hf", "ds"))
    p = subprocess.run(lm_eval_command(port, yaml_dir, out_dir, tasks, chat),
                       capture_output=True, text=True, env=env, timeout=LM_EVAL_TIMEOUT_S)
    if p.returncode != 0:
        raise RuntimeError(f"lm_eval exited with {p.returncode}:\n{p.stderr[-4000:]}")
    results = glob.glob(os.path.join(out_dir, "**", "results_*.json"), recursive=True)
    if len(results) != 1:
        raise RuntimeError(f"expected one results file under {out_dir}, found {results}")
    with open(results[0]) as f:
        agg = json.load(f)["results"]
    samples = {}
    for task in tasks:
        files = glob.glob(os.path.join(out_dir, "**", f"samples_{task}_*.jsonl"), recursive=True)
        if len(files) != 1:
            raise RuntimeError(f"expected one samples file of {task}, found {files}")
        with open(files[0]) as f:
            samples[task] = {s["doc"]["id"]: s for s in map(json.loads, f)}
    return agg, samples


def run_fasa_eval(tasks_file, extra=()):
    cmd = [FASA, "eval", "tasks", "-m", MODEL, "--tasks", tasks_file, "--policy", "full",
           "--json", "-t", "1", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"fasa eval tasks exited with {p.returncode}:\n{p.stderr}")
    out = json.loads(p.stdout)
    return out, {it["id"]: it for it in out["items"]}


class LmEvalTest(unittest.TestCase):
    def test_lm_eval_scores_equal_fasa_eval(self):
        with tempfile.TemporaryDirectory() as d:
            yaml_dir, both = write_tasks(d)
            t0 = time.time()
            with Server(FASA, "--ctx", "512", "--parallel", "1") as srv:
                agg, samples = run_lm_eval(srv.port, yaml_dir, d)
            t1 = time.time()
            fasa, items = run_fasa_eval(both)
            print(f"lm_eval {t1 - t0:.1f} s, fasa eval tasks {time.time() - t1:.1f} s",
                  file=sys.stderr)

        # Provenance of fasa's side.
        for key in ("model_sha256", "tasks_sha256"):
            self.assertRegex(str(fasa.get(key, "")), r"^[0-9a-f]{64}$", key)

        gen, mc = samples["fasa_gen"], samples["fasa_mc"]
        self.assertEqual(sorted(gen), sorted(f"g{i}" for i in range(len(GEN_ITEMS))))
        self.assertEqual(sorted(mc), sorted(f"m{i}" for i in range(len(MC_ITEMS))))

        # generate_until: the same text, then the same score.
        for gid, s in gen.items():
            self.assertEqual(s["resps"][0][0], items[gid]["output"], gid)
            self.assertEqual(float(s["exact_match"]), items[gid]["score"], gid)
        by_task = fasa["results"][0]["by_task"]
        self.assertAlmostEqual(agg["fasa_gen"]["exact_match,strip"], by_task["fasa_gen"], 12)

        # multiple_choice: each choice's log-likelihood, then acc and acc_norm.
        worst = 0.0
        for mid, s in mc.items():
            lls = [float(r[0]) for r in s["filtered_resps"]]
            mine = items[mid]["choice_logprobs"]
            self.assertEqual(len(lls), len(mine), mid)
            for a, b in zip(lls, mine):
                worst = max(worst, abs(a - b))
                self.assertAlmostEqual(a, b, delta=1e-2 + 1e-3 * abs(b), msg=mid)
            self.assertEqual(float(s["acc"]), items[mid]["score"], mid)
            self.assertEqual(float(s["acc_norm"]), items[mid]["acc_norm"], mid)
        print(f"largest log-likelihood difference {worst:.2e}", file=sys.stderr)
        self.assertAlmostEqual(agg["fasa_mc"]["acc,none"], by_task["fasa_mc"], 12)
        self.assertAlmostEqual(agg["fasa_mc"]["acc_norm,none"],
                               fasa["results"][0]["acc_norm_by_task"]["fasa_mc"], 12)
        # Not a vacuous comparison: the scores are neither all 0 nor all 1 somewhere.
        scores = [it["score"] for it in items.values()]
        self.assertTrue(0 < sum(scores) < len(scores), scores)

    def test_chat_completions_equal_fasa_eval_chat(self):
        """local-chat-completions with --apply_chat_template: lm-eval sends each prompt as a user
        message and the server applies the model's chat format, so the answers equal `fasa eval
        tasks --chat`'s."""
        with tempfile.TemporaryDirectory() as d:
            yaml_dir, _ = write_tasks(d)
            gen_file = os.path.join(d, "gen.jsonl")
            with Server(FASA, "--ctx", "512", "--parallel", "1") as srv:
                _, samples = run_lm_eval(srv.port, yaml_dir, d, tasks=("fasa_gen",), chat=True)
            _, items = run_fasa_eval(gen_file, extra=("--chat",))
        gen = samples["fasa_gen"]
        self.assertEqual(sorted(gen), sorted(items))
        for gid, s in gen.items():
            self.assertEqual(s["resps"][0][0], items[gid]["output"], gid)
            self.assertEqual(float(s["exact_match"]), items[gid]["score"], gid)
        # Not vacuous: some answers are right and some wrong.
        scores = [it["score"] for it in items.values()]
        self.assertTrue(0 < sum(scores) < len(scores), scores)


if __name__ == "__main__":
    FASA = os.path.abspath(sys.argv.pop(1))
    unittest.main()
