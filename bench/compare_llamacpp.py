#!/usr/bin/env python3
"""fasa against llama.cpp's own llama-bench on the same GGUF, threads and depths (development-time
only; standard library only). bench/compare_llamacpp.sh builds llama-bench and calls this with
--llama-bench and --stamp; it can also be run directly with an llama-bench of your own:

  python3 bench/compare_llamacpp.py --fasa ./build/fasa --llama-bench BIN -m MODEL.gguf [-m ...]
      [-t 2] [-p 512] [-n 128] [-d 0,4096,16384] [-r 3] [--fasa-args "--policy fasa --calib C
      --budget 0.1"] [--llama-args "..."] [--depth-fill prefill|synthetic] [--md FILE]
      [--jsonl FILE] [--stamp STAMP.json]

For every model, depth D and repetition, three processes run one after the other, the order
rotated per repetition (fasa, fa0, fa1; then fa0, fa1, fasa; ...) so that neither engine always
goes first on a shared machine:
  fasa bench -m M -t T -r 1 -d D -p P -n N --depth-fill prefill --json [fasa args]
  llama-bench -m M -t T -r 1 -d D -p P -n N -fa 0 -o jsonl [llama args]
  llama-bench ... -fa 1 ...
Each process makes its own depth-D context (a real prefill in both engines by default) and
measures ppP and tgN after it. The ratio is fasa over the better of llama.cpp's two settings
(higher mean). Output: a markdown table (stdout, or --md FILE) and with --jsonl one object per
(model, fasa policy, test, depth) holding every repetition's raw rows and the provenance.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys

PROG = "fasa compare_llamacpp"

# Options the driver sets itself; giving them again in --fasa-args/--llama-args would make the
# engines measure different things, so they are refused there.
FASA_OWNED = {"-m", "--model", "-t", "--threads", "-r", "--reps", "-d", "--depth", "-p",
              "--n-prompt", "-n", "--n-gen", "--json", "--depth-fill"}
LLAMA_OWNED = {"-m", "--model", "-t", "--threads", "-r", "--repetitions", "-d", "--n-depth",
               "-p", "--n-prompt", "-n", "--n-gen", "-fa", "--flash-attn", "-o", "--output",
               "-pg", "-oe", "--output-err"}


# What each JSONL object keeps of llama-bench's own row (all of it is in "repetitions" too).
LLAMA_ROW_FIELDS = ("build_commit", "build_number", "cpu_info", "backends", "n_batch", "n_ubatch",
                    "type_k", "type_v", "repack", "n_threads", "poll", "model_type")


class BenchError(Exception):
    """A problem worth one clear line: bad input, a tool that failed or printed nonsense."""


# ---------------------------------------------------------------------------------------------
# Parsing what the engines print


def json_lines(text, what):
    """Objects of a JSON Lines text (blank lines ignored); a bad line is an error naming `what`."""
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise BenchError(f"{what}: line {i} is not JSON ({e.msg}): {line[:120]!r}") from None
        if not isinstance(obj, dict):
            raise BenchError(f"{what}: line {i} is not a JSON object: {line[:120]!r}")
        rows.append(obj)
    return rows


def llama_test_name(row):
    """llama-bench's test name of one JSONL row: ppN (n_gen 0) or tgN (n_prompt 0)."""
    try:
        n_prompt, n_gen = int(row["n_prompt"]), int(row["n_gen"])
    except (KeyError, TypeError, ValueError):
        raise BenchError(f"llama-bench row without integer n_prompt/n_gen: {row}") from None
    if n_gen == 0 and n_prompt > 0:
        return f"pp{n_prompt}"
    if n_prompt == 0 and n_gen > 0:
        return f"tg{n_gen}"
    raise BenchError(f"llama-bench row is neither ppN nor tgN (n_prompt {n_prompt}, "
                     f"n_gen {n_gen}); -pg is not supported here")


def parse_llama_jsonl(text):
    """{(test, depth): row} of llama-bench `-o jsonl` output; each row keeps all its fields and
    gets "test". avg_ts is the tokens/s (mean over its samples; one sample with -r 1)."""
    out = {}
    for row in json_lines(text, "llama-bench -o jsonl"):
        for field in ("avg_ts", "n_depth", "samples_ts"):
            if field not in row:
                raise BenchError(f"llama-bench row without '{field}': {row}")
        if not isinstance(row["avg_ts"], (int, float)) or row["avg_ts"] <= 0:
            raise BenchError(f"llama-bench row with a bad avg_ts {row['avg_ts']!r}")
        row = dict(row, test=llama_test_name(row))
        key = (row["test"], int(row["n_depth"]))
        if key in out:
            raise BenchError(f"llama-bench printed two rows for {key[0]} @ d{key[1]}")
        out[key] = row
    return out


def parse_fasa_jsonl(text):
    """{(policy, test, depth): row} of `fasa bench --json` output."""
    out = {}
    for row in json_lines(text, "fasa bench --json"):
        for field in ("policy", "test", "depth", "tokens_per_s"):
            if field not in row:
                raise BenchError(f"fasa bench row without '{field}': {row}")
        if not isinstance(row["tokens_per_s"], (int, float)) or row["tokens_per_s"] <= 0:
            raise BenchError(f"fasa bench row with a bad tokens_per_s {row['tokens_per_s']!r}")
        key = (row["policy"], row["test"], int(row["depth"]))
        if key in out:
            raise BenchError(f"fasa bench printed two rows for {key}")
        out[key] = row
    return out


# ---------------------------------------------------------------------------------------------
# Summaries: the JSONL objects and the markdown table


def stats(values):
    return {"mean": statistics.mean(values),
            "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
            "samples": list(values)}


def summarize(model, policy, test, depth, reps):
    """One result object from the repetitions of one (model, policy, test, depth). `reps` is a
    list of {"rep", "order", "fasa": row, "fa0": row, "fa1": row}."""
    fasa = stats([r["fasa"]["tokens_per_s"] for r in reps])
    fa0 = stats([r["fa0"]["avg_ts"] for r in reps])
    fa1 = stats([r["fa1"]["avg_ts"] for r in reps])
    better = "fa1" if fa1["mean"] > fa0["mean"] else "fa0"
    best = fa1 if better == "fa1" else fa0
    # The kernel path fasa took (e.g. "avx512, AMX on"); several if the repetitions differ.
    kernels = " / ".join(sorted({str(r["fasa"].get("kernels", "unknown")) for r in reps}))
    return {"model": model, "fasa_policy": policy, "test": test, "depth": depth,
            "fasa_kernels": kernels, "fasa_tokens_per_s": fasa, "llama_fa0_tokens_per_s": fa0,
            "llama_fa1_tokens_per_s": fa1, "llama_better": better,
            "ratio_fasa_over_better": fasa["mean"] / best["mean"], "repetitions": reps}


def fmt_ts(s):
    return f"{s['mean']:.2f} ± {s['sd']:.2f}"


def markdown_table(results):
    lines = ["| model | fasa policy | fasa kernels | test | depth | fasa t/s | llama.cpp fa 0 "
             "| llama.cpp fa 1 | better | fasa / better |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |"]
    for r in results:
        lines.append(f"| {os.path.basename(r['model'])} | {r['fasa_policy']} | "
                     f"{r.get('fasa_kernels', 'unknown')} | {r['test']} | "
                     f"{r['depth']} | {fmt_ts(r['fasa_tokens_per_s'])} | "
                     f"{fmt_ts(r['llama_fa0_tokens_per_s'])} | "
                     f"{fmt_ts(r['llama_fa1_tokens_per_s'])} | {r['llama_better']} | "
                     f"{r['ratio_fasa_over_better']:.2f} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Running the engines


def run_tool(cmd, what):
    """stdout of cmd; a failure is one error with the command and the tail of its stderr."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise BenchError(f"{what}: cannot run {cmd[0]}: {e.strerror}") from None
    if p.returncode != 0:
        tail = "\n".join(p.stderr.strip().splitlines()[-8:])
        raise BenchError(f"{what} failed (exit {p.returncode}): {shlex.join(cmd)}\n{tail}")
    return p.stdout


def fasa_cmd(a, model, depth):
    return ([a.fasa, "bench", "-m", model, "-t", str(a.threads), "-r", "1", "-d", str(depth),
             "-p", a.p, "-n", a.n, "--depth-fill", a.depth_fill, "--json"] + a.fasa_extra)


def llama_cmd(a, model, depth, fa):
    return ([a.llama_bench, "-m", model, "-t", str(a.threads), "-r", "1", "-d", str(depth),
             "-p", a.p, "-n", a.n, "-fa", str(fa), "-o", "jsonl"] + a.llama_extra)


def tests_of(a):
    """The test names both engines are asked for, in order: ppP..., then tgN...; 0 skips."""
    pp = [f"pp{v}" for v in a.p.split(",") if int(v) > 0]
    tg = [f"tg{v}" for v in a.n.split(",") if int(v) > 0]
    return pp + tg


def measure_model(a, model, log):
    """Yields, per depth, the result objects of one model (every repetition, three engines
    rotated), each carrying the load before and after that depth's runs."""
    engines = ["fasa", "fa0", "fa1"]
    tests = tests_of(a)
    for depth in a.depths:
        before = load_now()
        reps = {}  # (policy, test) -> list of rep records
        for r in range(a.r):
            order = engines[r % 3:] + engines[:r % 3]
            got = {}
            for e in order:
                log(f"{os.path.basename(model)} d{depth} rep {r + 1}/{a.r}: {e}")
                if e == "fasa":
                    got[e] = parse_fasa_jsonl(run_tool(fasa_cmd(a, model, depth), "fasa bench"))
                else:
                    got[e] = parse_llama_jsonl(
                        run_tool(llama_cmd(a, model, depth, e[-1]), f"llama-bench -fa {e[-1]}"))
            policies = sorted({k[0] for k in got["fasa"]}, key=lambda p: (p != "full", p))
            if not policies:
                raise BenchError(f"fasa bench printed no rows for {model} at depth {depth}")
            for test in tests:
                for e in ("fa0", "fa1"):
                    if (test, depth) not in got[e]:
                        raise BenchError(f"llama-bench -fa {e[-1]} printed no {test} @ d{depth}")
                for policy in policies:
                    if (policy, test, depth) not in got["fasa"]:
                        raise BenchError(f"fasa bench printed no {test} @ d{depth} for {policy}")
                    reps.setdefault((policy, test), []).append(
                        {"rep": r, "order": order, "fasa": got["fasa"][(policy, test, depth)],
                         "fa0": got["fa0"][(test, depth)], "fa1": got["fa1"][(test, depth)]})
        after = load_now()
        yield [dict(summarize(model, policy, test, depth, rs), load_before=before,
                    load_after=after) for (policy, test), rs in reps.items()]


# ---------------------------------------------------------------------------------------------
# Provenance


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_now():
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    return {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "uptime_s": up, "loadavg": list(os.getloadavg())}


def fasa_version(fasa):
    p = subprocess.run([fasa, "--version"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else "unknown"


def write_stamp(a):
    """The build record bench/compare_llamacpp.sh keeps next to llama-bench."""
    p = subprocess.run([a.stamp_bin, "--version"], capture_output=True, text=True)
    if p.returncode != 0:
        raise BenchError(f"{a.stamp_bin} --version failed (exit {p.returncode}): "
                         f"{p.stderr.strip()[-400:]}")
    stamp = {"llama_bench": a.stamp_bin, "version": (p.stdout + p.stderr).strip(),
             "sdist": "llama-cpp-python 0.3.36", "sdist_sha256": a.stamp_sha256,
             "cmake_flags": a.stamp_flags,
             "built": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    if a.stamp_src:
        stamp["llama_cpp_dir"] = a.stamp_src
        try:
            with open(os.path.join(a.stamp_src, "ggml", "CMakeLists.txt")) as f:
                v = dict(line.strip()[4:-1].split()[:2] for line in f
                         if line.startswith("set(GGML_VERSION_") and line.count(" ") == 1)
            stamp["ggml_version"] = ".".join(v[f"GGML_VERSION_{k}"]
                                             for k in ("MAJOR", "MINOR", "PATCH"))
        except (OSError, KeyError, ValueError):
            pass
    with open(a.write_stamp, "w") as f:
        json.dump(stamp, f, indent=1)
        f.write("\n")


# ---------------------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        print(f"{PROG}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    ap = Parser(prog="compare_llamacpp.py", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fasa", default="./build/fasa", help="fasa binary (default ./build/fasa)")
    ap.add_argument("--llama-bench", help="llama-bench binary (compare_llamacpp.sh builds it)")
    ap.add_argument("--stamp", help="llama-bench build stamp (JSON) to record")
    ap.add_argument("-m", "--model", action="append", help="GGUF file; repeat for more models")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-p", default="512", help="prompt sizes, comma separated (0 skips)")
    ap.add_argument("-n", default="128", help="generation lengths, comma separated (0 skips)")
    ap.add_argument("-d", default="0", help="depths, comma separated")
    ap.add_argument("-r", type=int, default=3, help="repetitions (one process each)")
    ap.add_argument("--depth-fill", default="prefill", choices=["prefill", "synthetic"],
                    help="fasa's depth context (default prefill, as llama-bench's; synthetic is "
                         "NOT a fair comparison: it skips the prefill llama-bench does)")
    ap.add_argument("--fasa-args", default="", help="more `fasa bench` options (one string)")
    ap.add_argument("--llama-args", default="", help="more llama-bench options (one string)")
    ap.add_argument("--md", help="write the markdown table here instead of stdout")
    ap.add_argument("--jsonl", help="write one JSON object per row here")
    ap.add_argument("--write-stamp", help=argparse.SUPPRESS)
    ap.add_argument("--stamp-bin", help=argparse.SUPPRESS)
    ap.add_argument("--stamp-sha256", help=argparse.SUPPRESS)
    ap.add_argument("--stamp-flags", help=argparse.SUPPRESS)
    ap.add_argument("--stamp-src", help=argparse.SUPPRESS)
    # "--fasa-args '-t 4'" would read as the driver's own -t: glue the value to its flag.
    glued, i = [], 0
    while i < len(argv):
        if argv[i] in ("--fasa-args", "--llama-args") and i + 1 < len(argv):
            glued.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            glued.append(argv[i])
            i += 1
    return ap.parse_args(glued)


def int_list(text, flag, low):
    try:
        vals = [int(v) for v in text.split(",")]
    except ValueError:
        raise BenchError(f"{flag} '{text}': expected comma separated integers") from None
    if any(v < low for v in vals):
        raise BenchError(f"{flag} '{text}': values must be >= {low}")
    return vals


def owned_clash(extra, owned, flag):
    for tok in extra:
        if tok.split("=", 1)[0] in owned:
            raise BenchError(f"{flag} may not set {tok.split('=', 1)[0]}: the driver sets it "
                             f"for both engines alike")


def check_args(a):
    if not a.model:
        raise BenchError("no model: give -m MODEL.gguf")
    for m in a.model:
        if not os.path.isfile(m):
            raise BenchError(f"model not found: {m}")
    fasa = a.fasa if os.sep in a.fasa else shutil.which(a.fasa)
    if not fasa or not os.path.isfile(fasa) or not os.access(fasa, os.X_OK):
        raise BenchError(f"fasa binary not found: {a.fasa} (build it: cmake --build build "
                         "--target fasa, or give --fasa PATH)")
    a.fasa = fasa
    if not a.llama_bench:
        raise BenchError("no llama-bench: run bench/compare_llamacpp.sh (it builds one) or give "
                         "--llama-bench PATH")
    if not os.path.isfile(a.llama_bench) or not os.access(a.llama_bench, os.X_OK):
        raise BenchError(f"llama-bench binary not found: {a.llama_bench}")
    if a.threads < 1:
        raise BenchError(f"-t {a.threads}: need at least 1 thread")
    if a.r < 1:
        raise BenchError(f"-r {a.r}: need at least 1 repetition")
    p, n = int_list(a.p, "-p", 0), int_list(a.n, "-n", 0)
    if not any(p) and not any(n):
        raise BenchError("-p and -n are all 0: nothing to measure")
    a.depths = int_list(a.d, "-d", 0)
    try:
        a.fasa_extra, a.llama_extra = shlex.split(a.fasa_args), shlex.split(a.llama_args)
    except ValueError as e:
        raise BenchError(f"--fasa-args/--llama-args: {e}") from None
    owned_clash(a.fasa_extra, FASA_OWNED, "--fasa-args")
    owned_clash(a.llama_extra, LLAMA_OWNED, "--llama-args")
    a.stamp_data = {}
    if a.stamp:
        try:
            with open(a.stamp) as f:
                a.stamp_data = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise BenchError(f"cannot read the stamp {a.stamp}: {e}") from None


def main(argv):
    a = parse_args(argv)
    if a.write_stamp:
        write_stamp(a)
        return
    check_args(a)
    start = load_now()
    header = {"date": start["time"], "threads": a.threads, "reps": a.r, "p": a.p, "n": a.n,
              "depth_fill": a.depth_fill, "fasa": a.fasa, "fasa_version": fasa_version(a.fasa),
              "fasa_args": a.fasa_extra, "llama_bench": a.llama_bench,
              "llama_args": a.llama_extra, "llama_cpp": a.stamp_data,
              "host": {"machine": platform.machine(), "cpus": os.cpu_count()}}
    log = lambda msg: print(f"{PROG}: {msg}", file=sys.stderr, flush=True)
    jsonl = open(a.jsonl, "w") if a.jsonl else None  # rows written as they come: a run cut
    results = []                                     # short keeps what it measured
    for model in a.model:
        log(f"sha256 of {model}")
        sha = sha256_file(model)
        for group in measure_model(a, model, log):
            results += group
            for r in group:
                if header["fasa_version"] == "unknown":  # a fasa without --version
                    header["fasa_version"] = r["repetitions"][0]["fasa"].get("fasa_version",
                                                                             "unknown")
                first = r["repetitions"][0]["fa0"]
                llama_row = {k: first.get(k) for k in LLAMA_ROW_FIELDS}
                if jsonl:
                    jsonl.write(json.dumps(dict(model=model, model_sha256=sha, **header,
                                                llama_bench_row=llama_row,
                                                **{k: v for k, v in r.items() if k != "model"}))
                                + "\n")
                    jsonl.flush()
    if jsonl:
        jsonl.close()
    end = load_now()
    llama_version = a.stamp_data.get("version", "unstamped").splitlines()[0]
    table = (f"fasa {header['fasa_version']} vs llama-bench ({llama_version}), {a.threads} "
             f"threads, {a.r} reps alternating, fasa depth fill {a.depth_fill}; load average "
             f"{start['loadavg'][0]:.2f} at start, {end['loadavg'][0]:.2f} at end\n\n"
             + markdown_table(results))
    if a.md:
        with open(a.md, "w") as f:
            f.write(table)
    else:
        sys.stdout.write(table)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except BenchError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
