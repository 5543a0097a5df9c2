"""A task sweep on a real two-node Ray cluster on this machine (python -m fasa.cluster), with the
worker node killed mid-run, gives the single-machine sweep's results bit for bit.

- A small passkey task file (fasa gen-tasks on an Austen text), then the reference: one
  `fasa eval sweep` with no --shard.
- A Ray head (127.0.0.2) and a worker node (127.0.0.3), loopback addresses both, each with its
  own --temp-dir and one CPU, started with the pinned ray of venv-ray and a token of this test
  (RAY_AUTH_TOKEN: no ~/.ray/auth_token is read or written). The nodes get no PYTHONPATH:
  fasa.cluster reaches their workers through Ray's runtime_env py_modules, as on a real cluster.
- The driver sweeps in 2 shards (one per node). Once the shard on the worker node has
  checkpointed a task and still has tasks to run, the test kills that node: SIGKILL to every
  process of it (its raylet, log monitor, agents, Ray workers and the fasa they run: the
  processes that name its temp dir, and all their descendants), as if the machine had died.
  Ray retries the shard on the head, which resumes it from the checkpoint lines the keeper
  actor holds: its shard.json must record resumed_tasks >= 1.
- Then the driver itself is killed (SIGKILL) mid-way through a second sweep, once a shard has a
  task in OUT2/shards; the same command with --resume starts that shard from there (its
  resumed_tasks >= 1) and merges results equal to the reference too.
- The merged results equal the reference: the same files; results.json equal but for the fields
  that describe the run (date, seconds, prefill_seconds, prefills, threads, resumed_tasks, and
  `shards`, which only a merge writes, and each setting's decode_ms_per_token);
  results.md equal after its first paragraph (it prints the seconds) but for its ms/token column;
  every .svg byte for byte.

Bounded: an overall deadline, and the cluster is always stopped by the test itself (only the
processes of its own temp dirs: no `ray stop`, which would stop every Ray on the machine).

    run_ray_test.sh FASA_BINARY
"""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
HOME = os.environ.get("FASA_HOME", os.path.join(os.path.expanduser("~"), ".cache", "fasa"))
MODEL = "smollm2-135m"  # a `fasa pull` name: each node resolves it in its cache
MODEL_FILE = os.path.join(HOME, "models", "smollm2-135m", "SmolLM2-135M-Instruct.Q4_1.gguf")
TEXT = os.path.join(HOME, "texts", "austen_emma.txt")  # scripts/get_texts.sh
DEADLINE_S = 480
HEAD_IP, WORKER_IP = "127.0.0.2", "127.0.0.3"
N_TASKS, SHARDS = 16, 2  # 8 tasks a shard: the kill lands after the first, before the last
SWEEP = ["--policies", "full,streaming", "--budgets", "32,64", "-t", "1"]
RUN_FIELDS = ("date", "seconds", "prefill_seconds", "prefills", "threads", "resumed_tasks")
MERGE_FIELDS = ("shards",)  # what only a merge writes (the number of shards)


def log(msg):
    print(f"ray_test: {msg}", flush=True)


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self, what):
        s = self.end - time.monotonic()
        if s <= 0:
            raise TimeoutError(f"deadline of {DEADLINE_S} s passed while {what}")
        return s


def free_port(ip):
    with socket.socket() as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


def processes():
    """pid -> (ppid, cmdline) of every process."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        out[int(pid)] = (ppid, cmd)
    return out


def node_processes(temp_dir):
    """The processes of the Ray node started with temp_dir: those whose command line names it
    (raylet, log monitor; on the head also the GCS, monitor and dashboard) and all their
    descendants (the agents, the Ray workers, the fasa processes those run)."""
    procs = processes()
    found = {pid for pid, (_, cmd) in procs.items() if temp_dir + "/" in cmd}
    grew = True
    while grew:
        more = {pid for pid, (ppid, _) in procs.items() if ppid in found} - found
        found |= more
        grew = bool(more)
    found.discard(os.getpid())
    return {pid: procs[pid] for pid in found}


def kill_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def live(pids):
    """The pids that still run (not gone, not zombies awaiting their parent)."""
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        if stat[stat.rfind(")") + 2:].split()[0] != "Z":
            out.append(pid)
    return out


def stop_node(temp_dir):
    """SIGTERM to the node's processes, then SIGKILL to what is left after 5 s, and a wait of
    up to 5 s more for them to be gone."""
    kill_all(node_processes(temp_dir), signal.SIGTERM)
    end = time.monotonic() + 5
    while live(node_processes(temp_dir)) and time.monotonic() < end:
        time.sleep(0.2)
    kill_all(node_processes(temp_dir), signal.SIGKILL)
    end = time.monotonic() + 5
    while live(node_processes(temp_dir)) and time.monotonic() < end:
        time.sleep(0.1)


def run(cmd, deadline, what, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=deadline.left(what), **kw)
    if p.returncode != 0:
        raise AssertionError(f"{what} failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n"
                             f"{p.stderr}")
    return p


def sweep_fasa_processes(temp_dir):
    """(pid, shard out dir) of the `fasa eval sweep` processes the node runs."""
    found = []
    for pid, (_, cmd) in node_processes(temp_dir).items():
        args = cmd.split()
        if "eval sweep" in cmd and "-o" in args:
            found.append((pid, args[args.index("-o") + 1]))
    return found


def complete_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def md_without_first_paragraph(text):
    parts = text.split("\n\n")
    first = next(i for i, p in enumerate(parts) if not p.startswith("#"))
    return without_timing_column("\n\n".join(parts[:first] + parts[first + 1:]))


def without_timing_column(md):
    """The ms/token column's cells (timing) blanked in every table that has one."""
    out, col = [], None
    for line in md.split("\n"):
        if not line.startswith("|"):
            col = None
        cells = line.split("|")
        if " ms/token " in cells:
            col = cells.index(" ms/token ")
        elif col is not None and len(cells) > col and line.startswith("| "):
            cells[col] = " - "
            line = "|".join(cells)
        out.append(line)
    return "\n".join(out)


def compare(ref, out):
    files = sorted(os.listdir(ref))
    got = sorted(f for f in os.listdir(out) if f != "shards")
    assert got == files, f"merged files {got} != reference files {files}"
    assert any(f.endswith(".svg") for f in files), files
    for name in files:
        with open(os.path.join(ref, name), "rb") as f:
            a = f.read()
        with open(os.path.join(out, name), "rb") as f:
            b = f.read()
        if name == "results.json":
            ja, jb = json.loads(a), json.loads(b)
            for k in RUN_FIELDS:
                assert k in ja, f"reference results.json lacks {k}"
                ja.pop(k)
                jb.pop(k, None)
            for k in MERGE_FIELDS:
                assert k not in ja and k in jb, f"{k} in the reference, or not in the merge"
                jb.pop(k)
            for r in ja["results"] + jb["results"]:
                r.pop("decode_ms_per_token")  # timing
            assert set(ja) == set(jb), f"results.json keys differ: {set(ja) ^ set(jb)}"
            for k in ja:
                assert ja[k] == jb[k], f"results.json field {k} differs"
            # Bit for bit: every number as the reference wrote it (same text, same double).
            assert json.dumps(ja, sort_keys=True) == json.dumps(jb, sort_keys=True)
        elif name == "results.md":
            ma = md_without_first_paragraph(a.decode("utf-8"))
            mb = md_without_first_paragraph(b.decode("utf-8"))
            assert ma == mb, "results.md differs after its first paragraph"
        else:
            assert a == b, f"{name} differs"
    log(f"merged results equal the reference: {', '.join(files)}")


def main():
    fasa = os.path.abspath(sys.argv[1])
    missing = [p for p in (MODEL_FILE, TEXT) if not os.path.exists(p)]
    if missing:
        why = f"missing {', '.join(missing)} (scripts/setup.sh)"
        if os.environ.get("FASA_REQUIRE_MODEL") == "1":
            log(why + " and FASA_REQUIRE_MODEL=1")
            return 1
        log(why + ": skipped")
        return 77
    deadline = Deadline(DEADLINE_S)
    venv_bin = os.path.dirname(sys.executable)
    tmp = tempfile.mkdtemp(prefix="fasa-ray-", dir="/tmp")  # short: Ray's socket paths
    head_dir, worker_dir = os.path.join(tmp, "head"), os.path.join(tmp, "worker")
    driver = None
    ok = False
    try:
        t0 = time.monotonic()
        run([fasa, "gen-tasks", "-m", MODEL, "--kind", "passkey", "--haystack", TEXT, "--ctx",
             "256", "--n", str(N_TASKS), "--seed", "1", "-o", "T.jsonl"], deadline, "gen-tasks",
            cwd=tmp)
        run([fasa, "eval", "sweep", "-m", MODEL, "--tasks", "T.jsonl", *SWEEP, "-o", "REF"],
            deadline, "the reference sweep", cwd=tmp)
        log(f"reference sweep: {time.monotonic() - t0:.1f} s")

        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env.pop("RAY_ADDRESS", None)
        env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
        env.update({
            # This test's own token: nothing read from or written to ~/.ray.
            "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
            # Notice a dead node within a few seconds (the defaults take about 15 s).
            "RAY_health_check_period_ms": "1000", "RAY_health_check_timeout_ms": "1000",
            "RAY_health_check_failure_threshold": "3",
            "RAY_USAGE_STATS_ENABLED": "0",
        })
        port = free_port(HEAD_IP)
        common = ["--num-cpus=1", "--object-store-memory=100000000", "--disable-usage-stats",
                  f"--metrics-export-port={free_port(HEAD_IP)}"]
        t1 = time.monotonic()
        run(["ray", "start", "--head", f"--node-ip-address={HEAD_IP}", f"--port={port}",
             f"--temp-dir={head_dir}", "--include-dashboard=false",
             f"--dashboard-port={free_port(HEAD_IP)}",
             f"--dashboard-agent-listen-port={free_port(HEAD_IP)}", *common], deadline,
            "ray start --head", env=env)
        common[-1] = f"--metrics-export-port={free_port(WORKER_IP)}"
        run(["ray", "start", f"--address={HEAD_IP}:{port}", f"--node-ip-address={WORKER_IP}",
             f"--temp-dir={worker_dir}", f"--dashboard-agent-listen-port={free_port(WORKER_IP)}",
             *common], deadline, "ray start (worker)", env=env)
        log(f"Ray head {HEAD_IP}:{port} (temp dir {head_dir}) and worker {WORKER_IP} "
            f"(temp dir {worker_dir}) started in {time.monotonic() - t1:.1f} s")

        driver_env = dict(env, PYTHONPATH=os.path.join(REPO, "python"))

        def start_driver(out, log_name, *more):
            log_file = open(os.path.join(tmp, log_name), "w")
            return log_file, subprocess.Popen(
                [sys.executable, "-m", "fasa.cluster", "sweep", "--address", f"{HEAD_IP}:{port}",
                 "--shards", str(SHARDS), "--fasa", fasa, "-m", MODEL, "--tasks", "T.jsonl",
                 *SWEEP, "--retries", "2", "--work-dir", os.path.join(tmp, "work"), "-o", out,
                 *more],
                cwd=tmp, env=driver_env, stdout=log_file, stderr=subprocess.STDOUT,
                start_new_session=True)

        t2 = time.monotonic()
        driver_log, driver = start_driver("OUT", "driver.log")

        # Kill the worker node once its shard has checkpointed a task with the keeper (the
        # driver prints the keeper's counts) and still has tasks to run.
        per_shard = N_TASKS // SHARDS
        killed = None
        while killed is None:
            deadline.left("waiting for the worker node's shard to checkpoint a task")
            if driver.poll() is not None:
                raise AssertionError("the driver ended before the worker node was killed:\n"
                                     + open(driver_log.name).read())
            text = open(driver_log.name).read()
            if "shards of" in text and " on 2 nodes," not in text:
                raise AssertionError("the driver did not see both nodes:\n" + text)
            for pid, out_dir in sweep_fasa_processes(worker_dir):
                shard = int(os.path.basename(out_dir).split("-")[1])
                lines = complete_lines(os.path.join(out_dir, "checkpoint.jsonl"))
                # The driver prints the keeper's count when it polls: it may skip 1/N.
                kept = any(1 <= int(k) < per_shard for k in re.findall(
                    rf"shard {shard}/{SHARDS}: (\d+)/{per_shard} tasks checkpointed", text))
                if kept and lines < 1 + per_shard:  # with the keeper, and tasks left
                    victims = node_processes(worker_dir)
                    kill_all(victims, signal.SIGKILL)
                    names = sorted({c.split()[0].rsplit("/", 1)[-1] for _, c in victims.values()})
                    killed = shard
                    log(f"killed the worker node {time.monotonic() - t2:.1f} s into the sweep "
                        f"(SIGKILL to its {len(victims)} processes: {', '.join(names)}), its "
                        f"shard {shard} having checkpointed {lines - 1} of {per_shard} tasks")
                    break
            time.sleep(0.05)
        end = time.monotonic() + 5  # SIGKILL is not instant: give the kernel a moment
        while live(node_processes(worker_dir)) and time.monotonic() < end:
            time.sleep(0.05)
        left = live(node_processes(worker_dir))
        assert not left, f"worker node processes survived SIGKILL: {left}"

        def finished(what, out, shard, log_says):
            """Waits for the driver; checks its log, that `shard` resumed, and the merge."""
            try:
                rc = driver.wait(timeout=deadline.left(f"waiting for the {what}"))
            except subprocess.TimeoutExpired:
                raise TimeoutError(f"the {what} did not finish before the deadline")
            text = open(driver_log.name).read()
            print(text, end="", flush=True)
            assert rc == 0, f"the {what} failed ({rc})"
            assert log_says in text, f"the {what}'s log lacks '{log_says}'"
            with open(os.path.join(tmp, out, "shards", f"shard-{shard}", "shard.json")) as f:
                resumed = json.load(f)["resumed_tasks"]
            assert resumed >= 1, f"shard {shard} was not resumed (resumed_tasks {resumed})"
            compare(os.path.join(tmp, "REF"), os.path.join(tmp, out))
            return resumed

        resumed = finished("driver", "OUT", killed, f"shard {killed}/{SHARDS}: retried")
        log(f"cluster sweep with the kill: {time.monotonic() - t2:.1f} s; shard {killed} "
            f"resumed {resumed} tasks from its checkpoint")

        # The driver dies (its Ray job with it: the keeper, the shard tasks and their fasa) once
        # a shard has a task in OUT2/shards and is not done; the same command with --resume
        # starts that shard from those lines (on the head alone now) and merges the same
        # results.
        t3 = time.monotonic()
        driver_log, driver = start_driver("OUT2", "driver2.log")
        cut = None
        while cut is None:
            deadline.left("waiting for a shard of the second sweep to checkpoint a task")
            if driver.poll() is not None:
                raise AssertionError("the second driver ended before it was killed:\n"
                                     + open(driver_log.name).read())
            for i in range(SHARDS):
                d = os.path.join(tmp, "OUT2", "shards", f"shard-{i}")
                n = complete_lines(os.path.join(d, "checkpoint.jsonl"))
                if n >= 2 and not os.path.exists(os.path.join(d, "shard.json")):
                    os.killpg(driver.pid, signal.SIGKILL)
                    driver.wait()
                    cut = i
                    log(f"killed the driver {time.monotonic() - t3:.1f} s into the second "
                        f"sweep, its shard {i} having {n - 1} tasks in OUT2/shards")
                    break
            time.sleep(0.05)
        driver_log, driver = start_driver("OUT2", "driver3.log", "--resume")
        resumed = finished("resumed driver", "OUT2", cut, f"shard {cut}/{SHARDS}: resuming from")
        log(f"driver killed and resumed: {time.monotonic() - t3:.1f} s; shard {cut} resumed "
            f"{resumed} tasks")
        ok = True
        return 0
    finally:
        if driver is not None and driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
        for d in (worker_dir, head_dir):
            stop_node(d)
        stray = live(node_processes(head_dir)) + live(node_processes(worker_dir))
        if stray:
            log(f"processes left: {stray}")
        if ok:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            log(f"kept {tmp} (driver.log, the nodes' logs under head/ and worker/)")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (AssertionError, TimeoutError, subprocess.TimeoutExpired) as e:
        log(f"FAILED: {e}")
        sys.exit(1)
