#!/usr/bin/env python3
"""bench/compare_llamacpp.py without building llama.cpp (ctest: Bench.CompareLlamacpp).

- The llama-bench JSONL parser on a recorded llama-bench run (tests/data/bench/, from the smoke
  run of docs/notebook/speed/data/yardstick_smoke/) and on broken output.
- The whole driver against two stand-ins written here: a `fasa` and an `llama-bench` that print
  rows in the recorded formats with fixed tokens/s and log their command lines. Checked: the
  three engines alternate with the order rotated per repetition, the options each gets, the
  means / better setting / ratio in the JSONL objects and the markdown table, the provenance.
- Every bad input is one `error:` line and exit status 1 or 2, never a traceback: missing model,
  missing fasa, missing llama-bench, an unknown option, a driver-owned option in --fasa-args,
  a failing llama-bench, bad -d.

- bench/compare_llamacpp.sh: with a ready llama-bench (FASA_LLAMA_BENCH) it stamps it and runs
  the driver; a source folder without llama-bench and a failing build (a CMakeLists that stops)
  end in one error, the latter with the tail of the build log and its path.

  python3 tests/bench/compare_llamacpp_test.py [REPO_ROOT]
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
DRIVER = os.path.join(ROOT, "bench", "compare_llamacpp.py")
SCRIPT = os.path.join(ROOT, "bench", "compare_llamacpp.sh")
DATA = os.path.join(ROOT, "tests", "data", "bench")
LLAMA_SAMPLE = os.path.join(DATA, "llama_bench_smollm2.jsonl")
FASA_SAMPLE = os.path.join(DATA, "fasa_bench_smollm2.jsonl")

spec = importlib.util.spec_from_file_location("compare_llamacpp", DRIVER)
drv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(drv)

# The stand-ins' tokens/s: (engine, test) -> value, same at every depth.
SPEED = {("fasa", "pp64"): 90.0, ("fasa", "tg16"): 60.0,
         ("fa0", "pp64"): 100.0, ("fa0", "tg16"): 50.0,
         ("fa1", "pp64"): 120.0, ("fa1", "tg16"): 40.0}

# A stand-in llama-bench: the recorded row of each test, with our depth, fa and speed.
FAKE_LLAMA = textwrap.dedent("""\
    #!/usr/bin/env python3
    import json, os, sys
    speed = json.loads(os.environ["FAKE_SPEED"])
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(json.dumps(["llama-bench"] + sys.argv[1:]) + "\\n")
    if os.environ.get("FAKE_LLAMA_FAIL"):
        print("llama_model_load: error loading model: bad magic", file=sys.stderr)
        sys.exit(1)
    if sys.argv[1:] == ["--version"]:
        print("version: 9 (fake)", file=sys.stderr); sys.exit(0)
    arg = lambda k: sys.argv[sys.argv.index(k) + 1]
    fa, depth = arg("-fa"), int(arg("-d"))
    rows = [json.loads(l) for l in open(os.environ["FAKE_LLAMA_SAMPLE"]) if l.strip()]
    for want in [("pp", int(v)) for v in arg("-p").split(",") if int(v)] + \\
                [("tg", int(v)) for v in arg("-n").split(",") if int(v)]:
        row = next(r for r in rows if (r["n_prompt"] if want[0] == "pp" else r["n_gen"]) > 0)
        row = dict(row, n_prompt=want[1] if want[0] == "pp" else 0,
                   n_gen=want[1] if want[0] == "tg" else 0, n_depth=depth, flash_attn=int(fa))
        ts = speed["fa" + fa + "/" + want[0] + str(want[1])]
        row.update(avg_ts=ts, stddev_ts=0.0, samples_ts=[ts])
        print(json.dumps(row))
    """)

# A stand-in fasa: `--version`, and `bench` printing the recorded row format.
FAKE_FASA = textwrap.dedent("""\
    #!/usr/bin/env python3
    import json, os, sys
    if sys.argv[1:] == ["--version"]:
        print("dev (fake123)"); sys.exit(0)
    speed = json.loads(os.environ["FAKE_SPEED"])
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(json.dumps(["fasa"] + sys.argv[1:]) + "\\n")
    arg = lambda k: sys.argv[sys.argv.index(k) + 1]
    depth = int(arg("-d"))
    policies = arg("--policy").split(",") if "--policy" in sys.argv else ["full"]
    rows = [json.loads(l) for l in open(os.environ["FAKE_FASA_SAMPLE"]) if l.strip()]
    for policy in policies:
        for test in [f"pp{v}" for v in arg("-p").split(",") if int(v)] + \\
                    [f"tg{v}" for v in arg("-n").split(",") if int(v)]:
            row = next(r for r in rows if r["test"][:2] == test[:2])
            ts = speed["fasa/" + test] * (2 if policy != "full" else 1)
            amx = "off" if os.environ.get("FASA_NO_AMX") else "on"
            row = dict(row, policy=policy, test=test, depth=depth, n_tokens=int(test[2:]),
                       tokens_per_s=ts, stddev=0.0, samples=[ts], depth_fill=arg("--depth-fill"),
                       kernels="avx512, AMX " + amx)
            print(json.dumps(row))
    """)


class Parsers(unittest.TestCase):
    def test_recorded_llama_bench_jsonl(self):
        with open(LLAMA_SAMPLE) as f:
            rows = drv.parse_llama_jsonl(f.read())
        # llama-bench -m smollm2 -t 2 -r 1 -d 0,512 -p 64 -n 16 -fa 0 -o jsonl (a busy machine)
        recorded = {("pp64", 0): 8.150001, ("tg16", 0): 4.09481, ("pp64", 512): 10.719755,
                    ("tg16", 512): 3.878317}
        self.assertEqual(sorted(rows), sorted(recorded))
        for (test, depth), row in rows.items():
            self.assertEqual(row["test"], test)
            self.assertEqual(row["n_depth"], depth)
            self.assertEqual(row["avg_ts"], recorded[(test, depth)])
            self.assertAlmostEqual(row["avg_ts"], row["samples_ts"][0], places=4)  # -r 1

    def test_recorded_fasa_jsonl(self):
        with open(FASA_SAMPLE) as f:
            rows = drv.parse_fasa_jsonl(f.read())
        self.assertEqual(sorted(rows), [("full", "pp64", 0), ("full", "pp64", 512),
                                        ("full", "tg16", 0), ("full", "tg16", 512)])

    def test_broken_llama_output_is_one_error(self):
        with open(LLAMA_SAMPLE) as f:
            lines = f.read().splitlines()
        cases = {"not JSON": lines[0] + "\n" + lines[1][: len(lines[1]) // 2],
                 "without 'avg_ts'": json.dumps({k: v for k, v in json.loads(lines[0]).items()
                                                 if k != "avg_ts"}),
                 "bad avg_ts": json.dumps(dict(json.loads(lines[0]), avg_ts=0)),
                 "two rows": lines[0] + "\n" + lines[0],
                 "neither ppN nor tgN": json.dumps(dict(json.loads(lines[0]), n_prompt=8,
                                                        n_gen=8))}
        for needle, text in cases.items():
            with self.assertRaises(drv.BenchError) as cm:
                drv.parse_llama_jsonl(text)
            self.assertIn(needle, str(cm.exception))

    def test_summary_picks_better_setting(self):
        rep = lambda f, a, b: {"fasa": {"tokens_per_s": f}, "fa0": {"avg_ts": a},
                               "fa1": {"avg_ts": b}}
        s = drv.summarize("m.gguf", "full", "tg16", 0, [rep(10, 8, 9), rep(12, 10, 11)])
        self.assertEqual(s["llama_better"], "fa1")
        self.assertAlmostEqual(s["ratio_fasa_over_better"], 11 / 10)
        self.assertAlmostEqual(s["fasa_tokens_per_s"]["sd"], 2 ** 0.5)
        s = drv.summarize("m.gguf", "full", "tg16", 0, [rep(10, 9, 8)])
        self.assertEqual(s["llama_better"], "fa0")
        self.assertAlmostEqual(s["ratio_fasa_over_better"], 10 / 9)


class Driver(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.fasa, self.llama = os.path.join(d, "fasa"), os.path.join(d, "llama-bench")
        for path, text in ((self.fasa, FAKE_FASA), (self.llama, FAKE_LLAMA)):
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        self.model = os.path.join(d, "m.gguf")
        with open(self.model, "wb") as f:
            f.write(b"GGUF fake")
        self.stamp = os.path.join(d, "stamp.json")
        with open(self.stamp, "w") as f:
            json.dump({"version": "version: 0 (unknown)\nbuilt with GNU", "cmake_flags": "-DX=1",
                       "sdist_sha256": "abc"}, f)
        self.log = os.path.join(d, "calls.jsonl")
        self.env = dict(os.environ, FAKE_LOG=self.log, FAKE_LLAMA_SAMPLE=LLAMA_SAMPLE,
                        FAKE_FASA_SAMPLE=FASA_SAMPLE,
                        FAKE_SPEED=json.dumps({f"{e}/{t}": v for (e, t), v in SPEED.items()}))

    def tearDown(self):
        self.tmp.cleanup()

    def run_driver(self, *args, env=None):
        return subprocess.run([sys.executable, DRIVER, *args], capture_output=True, text=True,
                              env=env or self.env)

    def base_args(self):
        return ["--fasa", self.fasa, "--llama-bench", self.llama, "--stamp", self.stamp,
                "-m", self.model, "-t", "2", "-p", "64", "-n", "16"]

    def calls(self):
        with open(self.log) as f:
            return [json.loads(l) for l in f]

    def test_alternates_and_summarizes(self):
        jsonl = os.path.join(self.tmp.name, "out.jsonl")
        md = os.path.join(self.tmp.name, "out.md")
        r = self.run_driver(*self.base_args(), "-d", "0,512", "-r", "3", "--jsonl", jsonl,
                            "--md", md)
        self.assertEqual(r.returncode, 0, r.stderr)
        calls = self.calls()
        engine = lambda c: "fasa" if c[0] == "fasa" else "fa" + c[c.index("-fa") + 1]
        # 2 depths x 3 reps x 3 engines; rep r starts with engine r (rotation)
        self.assertEqual([engine(c) for c in calls],
                         ["fasa", "fa0", "fa1", "fa0", "fa1", "fasa", "fa1", "fasa", "fa0"] * 2)
        for i, c in enumerate(calls):
            depth = "0" if i < 9 else "512"
            self.assertEqual(c[c.index("-d") + 1], depth)
            self.assertEqual(c[c.index("-t") + 1], "2")
            self.assertEqual(c[c.index("-r") + 1], "1")
            if c[0] == "fasa":
                self.assertEqual(c[c.index("--depth-fill") + 1], "prefill")  # the fair default
                self.assertIn("--json", c)
            else:
                self.assertEqual(c[c.index("-o") + 1], "jsonl")
        with open(jsonl) as f:
            rows = [json.loads(l) for l in f]
        self.assertEqual([(o["test"], o["depth"]) for o in rows],
                         [("pp64", 0), ("tg16", 0), ("pp64", 512), ("tg16", 512)])
        for o in rows:
            t = o["test"]
            self.assertEqual(o["fasa_tokens_per_s"]["samples"], [SPEED[("fasa", t)]] * 3)
            self.assertEqual(o["llama_fa0_tokens_per_s"]["mean"], SPEED[("fa0", t)])
            self.assertEqual(o["llama_fa1_tokens_per_s"]["mean"], SPEED[("fa1", t)])
            better = max(("fa0", "fa1"), key=lambda e: SPEED[(e, t)])
            self.assertEqual(o["llama_better"], better)
            self.assertAlmostEqual(o["ratio_fasa_over_better"],
                                   SPEED[("fasa", t)] / SPEED[(better, t)])
            self.assertEqual(len(o["repetitions"]), 3)
            self.assertEqual(o["repetitions"][1]["order"], ["fa0", "fa1", "fasa"])
            self.assertEqual(o["fasa_version"], "dev (fake123)")
            self.assertEqual(o["llama_cpp"]["cmake_flags"], "-DX=1")
            self.assertEqual(len(o["model_sha256"]), 64)
            for k in ("load_before", "load_after"):
                self.assertEqual(len(o[k]["loadavg"]), 3)
            self.assertEqual(o["threads"], 2)
            self.assertIn("date", o)
        with open(md) as f:
            table = f.read()
        self.assertIn("| m.gguf | full | avx512, AMX on | pp64 | 0 | 90.00 ± 0.00 | "
                      "100.00 ± 0.00 | 120.00 ± 0.00 | fa1 | 0.75 |", table)
        self.assertIn("| m.gguf | full | avx512, AMX on | tg16 | 512 | 60.00 ± 0.00 | "
                      "50.00 ± 0.00 | 40.00 ± 0.00 | fa0 | 1.20 |", table)
        for o in rows:
            self.assertEqual(o["fasa_kernels"], "avx512, AMX on")
        self.assertIn("version: 0 (unknown)", table)

    def test_fasa_args_give_one_row_per_policy(self):
        r = self.run_driver(*self.base_args(), "-r", "1", "--fasa-args",
                            "--policy full,fasa --budget 0.1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("| m.gguf | full | avx512, AMX on | pp64 | 0 | 90.00", r.stdout)
        self.assertIn("| m.gguf | fasa | avx512, AMX on | pp64 | 0 | 180.00", r.stdout)

        fasa_call = [c for c in self.calls() if c[0] == "fasa"][0]
        self.assertEqual(fasa_call[-4:], ["--policy", "full,fasa", "--budget", "0.1"])

    def test_table_names_the_kernel_path_fasa_took(self):
        r = self.run_driver(*self.base_args(), "-r", "1", env=dict(self.env, FASA_NO_AMX="1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("| m.gguf | full | avx512, AMX off | pp64 | 0 |", r.stdout)

    def expect_error(self, r, needle, code=1):
        self.assertEqual(r.returncode, code, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        lines = r.stderr.strip().splitlines()
        errs = [l for l in lines if "error:" in l]
        self.assertEqual(len(errs), 1, r.stderr)
        self.assertIn(needle, r.stderr)

    def test_bad_inputs_are_one_clear_error(self):
        args = self.base_args()
        swap = lambda flag, value: [value if i > 0 and args[i - 1] == flag else a
                                    for i, a in enumerate(args)]
        self.expect_error(self.run_driver(*swap("-m", "/nonexistent/x.gguf")),
                          "model not found: /nonexistent/x.gguf")
        self.expect_error(self.run_driver(*swap("--fasa", "/nonexistent/fasa")),
                          "fasa binary not found: /nonexistent/fasa")
        self.expect_error(self.run_driver(*swap("--llama-bench", "/nonexistent/lb")),
                          "llama-bench binary not found")
        self.expect_error(self.run_driver(*args, "--frobnicate"),
                          "unrecognized arguments: --frobnicate", code=2)
        self.expect_error(self.run_driver(*args, "--fasa-args", "-t 4"),
                          "--fasa-args may not set -t")
        self.expect_error(self.run_driver(*args, "--llama-args", "-fa 1"),
                          "--llama-args may not set -fa")
        self.expect_error(self.run_driver(*args, "-d", "0,x"), "-d '0,x'")
        self.expect_error(self.run_driver(*args, "-p", "0", "-n", "0"), "nothing to measure")
        self.expect_error(self.run_driver(*args, "-r", "1",
                                          env=dict(self.env, FAKE_LLAMA_FAIL="1")),
                          "llama-bench -fa 0 failed (exit 1)")
        self.assertIn("bad magic", self.run_driver(*args, "-r", "1", env=dict(
            self.env, FAKE_LLAMA_FAIL="1")).stderr)  # the tool's own reason is shown

    def test_script_with_ready_llama_bench(self):
        home = os.path.join(self.tmp.name, "home")
        env = dict(self.env, FASA_HOME=home, FASA_LLAMA_BENCH=self.llama)
        r = subprocess.run([SCRIPT, "--fasa", self.fasa, "-m", self.model, "-p", "64", "-n",
                            "16", "-r", "1"], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("llama-bench (version: 9 (fake))", r.stdout)
        with open(os.path.join(home, "llamacpp-bench", "stamp-external.json")) as f:
            self.assertEqual(json.load(f)["version"], "version: 9 (fake)")

    def test_script_errors(self):
        home = os.path.join(self.tmp.name, "home")
        src = os.path.join(self.tmp.name, "src")
        r = subprocess.run([SCRIPT, "-m", self.model], capture_output=True, text=True,
                           env=dict(self.env, FASA_HOME=home, FASA_LLAMACPP_ISA="sse2"))
        self.expect_error(r, "FASA_LLAMACPP_ISA=sse2: use avx512 or avx2")
        r = subprocess.run([SCRIPT, "-m", self.model], capture_output=True, text=True,
                           env=dict(self.env, FASA_HOME=home, FASA_LLAMACPP_SRC=src))
        self.expect_error(r, "vendor/llama.cpp has no tools/llama-bench")
        if not shutil.which("cmake"):
            self.fail("cmake not found (bench/compare_llamacpp.sh needs it)")
        bench_dir = os.path.join(src, "vendor", "llama.cpp", "tools", "llama-bench")
        os.makedirs(bench_dir)
        open(os.path.join(bench_dir, "llama-bench.cpp"), "w").close()
        with open(os.path.join(src, "vendor", "llama.cpp", "CMakeLists.txt"), "w") as f:
            f.write('cmake_minimum_required(VERSION 3.14)\nproject(x NONE)\n'
                    'message(FATAL_ERROR "the stand-in refuses")\n')
        r = subprocess.run([SCRIPT, "-m", self.model], capture_output=True, text=True,
                           env=dict(self.env, FASA_HOME=home, FASA_LLAMACPP_SRC=src))
        self.expect_error(r, "llama-bench build failed; full log: " + home)
        self.assertIn("the stand-in refuses", r.stderr)  # the log's tail


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
