"""Task sweeps on a Ray cluster: one Ray task per shard, each running the `fasa` CLI on its node.

    python -m fasa.cluster sweep --address auto --shards 4 -m smollm2-135m --tasks T.jsonl \\
        --policies full,streaming,fasa --budgets 64,128 --calib C.json -o OUT

Shard I of N runs `fasa eval sweep ... --shard I/N -o WORK/shard-I` on whichever node Ray puts
it (the tasks with index % N == I, every policy at every budget). The driver reads the task file
and the calibration and ships them to the shard tasks as bytes, so the nodes share no file
system; the model is a path or a `fasa pull` name, resolved on each node (`fasa pull` fetches a
known model a node lacks). When every shard has finished, the driver writes each shard's
checkpoint.jsonl and shard.json under OUT/shards/shard-I and runs `fasa eval merge` on them,
which writes OUT/results.json, results.md and the plots as a one-machine sweep would.

Retries and resume: a shard task that dies (its node or its worker killed, fasa killed by a
signal) is retried by Ray up to --retries times, and the retry resumes from the checkpoint lines
the dead attempt had written, not from the start. The lines live in a "checkpoint keeper" actor
on the driver's node: while fasa runs, its shard task tails WORK/shard-I/checkpoint.jsonl and
sends each new complete line to the keeper; a retry (on any node) gets them back, writes them as
its checkpoint.jsonl and runs fasa with --resume. A clean refusal by fasa (exit status 1 with a
`fasa: error:` message: a bad flag, an unreadable model, a task file it rejects) is the same on
every node, so it is not retried: the sweep stops with fasa's message.

The driver also appends every line the keeper receives to OUT/shards/shard-I/checkpoint.jsonl
(and writes the shard's shard.json when it is done), so when the driver or the head dies, the
same command with --resume (on a new cluster if need be) starts each shard from those lines and
skips the finished ones.

This module is pure Python: it drives the `fasa` binary (the engine never imports Python) and
imports ray only when a sweep runs, so `import fasa.cluster` works without ray and without the
compiled extension. Each node needs the same pinned ray and Python as the driver
(tests/cluster/requirements.txt), the `fasa` binary (--fasa: a path, or a name on the PATH of
`ray start`) and the model or network access to `fasa pull` it; this package is shipped to the
workers by Ray (runtime_env py_modules). docs/EVALUATION.md, "Sweeps on a cluster: Ray", has the
commands.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

STDERR_TAIL = 4000  # characters of fasa's stderr an error carries
SYNC_SECONDS = 0.25  # how often a shard task sends new checkpoint lines to the keeper


class ShardFailed(Exception):
    """fasa refused the shard cleanly (exit status 1, `fasa: error:`): final, not retried."""


class ShardCrashed(Exception):
    """fasa died otherwise (a signal, another exit status): Ray retries the shard."""


class CheckpointKeeper:
    """Holds each shard's checkpoint lines (the header first, then one line per finished task),
    as the shard tasks send them. A Ray actor pinned to the driver's node (it survives the loss
    of any other node). Each attempt of a shard gets a number from begin(); lines from an older
    attempt (a task Ray gave up on that still runs somewhere) are ignored."""

    def __init__(self, n_shards, known=None):
        # known: {shard: lines} a driver resumed from OUT/shards (--resume) starts with
        self.lines = {i: list((known or {}).get(i, [])) for i in range(n_shards)}
        self.attempts = {i: [] for i in range(n_shards)}  # [{"node", "resumed_lines"}]
        self.finished = {i: False for i in range(n_shards)}

    def begin(self, shard, node):
        self.attempts[shard].append({"node": node, "resumed_lines": len(self.lines[shard])})
        return len(self.attempts[shard]), list(self.lines[shard])

    def add(self, shard, attempt, start, lines):
        """Lines start..start+len(lines)-1 of the attempt's checkpoint.jsonl (0 = the header).
        Idempotent: lines the keeper already has are skipped. Returns how many it holds."""
        if attempt != len(self.attempts[shard]):
            return -1
        have = self.lines[shard]
        if start > len(have):
            raise ValueError(f"shard {shard}: checkpoint line {start} after {len(have)} lines")
        have.extend(lines[len(have) - start:])
        return len(have)

    def lines_from(self, shard, start):
        """The shard's lines from number `start` on (the driver writes them to OUT/shards)."""
        return self.lines[shard][start:]

    def finish(self, shard, attempt):
        if attempt == len(self.attempts[shard]):
            self.finished[shard] = True

    def status(self):
        return {i: {"lines": len(self.lines[i]), "attempts": list(self.attempts[i]),
                    "finished": self.finished[i]} for i in self.lines}


class OutShards:
    """The driver's copy of each shard under OUT/shards/shard-I/: checkpoint.jsonl, appended
    (and fsynced) as the keeper receives its lines, and shard.json once the shard is done. A
    driver that dies, or a head that goes, leaves them behind; `--resume` starts from them, so a
    cluster sweep is never lost to more than the lines in flight."""

    def __init__(self, out, n_shards):
        self.root = os.path.join(out, "shards")
        self.dirs = [os.path.join(self.root, f"shard-{i}") for i in range(n_shards)]

    def unfinished(self):
        """True when OUT/shards holds checkpoint lines of a sweep (to resume, or to remove)."""
        return any(os.path.exists(os.path.join(d, "checkpoint.jsonl")) for d in self._all_dirs())

    def _all_dirs(self):
        try:
            names = os.listdir(self.root)
        except OSError:
            return []
        return [os.path.join(self.root, n) for n in names if n.startswith("shard-")]

    def start(self, resume):
        """{shard: lines} to resume from, and the set of shards already done (their shard.json
        written); without `resume`, an empty OUT/shards."""
        if not resume:
            shutil.rmtree(self.root, ignore_errors=True)
        extra = sorted(set(self._all_dirs()) - set(self.dirs))
        if extra:
            raise SystemExit(f"fasa.cluster: {extra[0]} is not a shard of this sweep (--shards "
                             f"{len(self.dirs)}): resume with the same --shards")
        known, done = {}, set()
        for i, d in enumerate(self.dirs):
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, "checkpoint.jsonl")
            if os.path.exists(path):
                with open(path, "rb") as f:
                    data = f.read()
                complete = data[:data.rfind(b"\n") + 1]  # a line cut by a kill is dropped
                if len(complete) != len(data):
                    with open(path, "wb") as f:
                        f.write(complete)
                known[i] = complete.decode("utf-8").splitlines(keepends=True)
            if known.get(i) and os.path.exists(os.path.join(d, "shard.json")):
                done.add(i)
        return known, done

    def append(self, shard, lines):
        with open(os.path.join(self.dirs[shard], "checkpoint.jsonl"), "a", encoding="utf-8") as f:
            f.writelines(lines)
            f.flush()
            os.fsync(f.fileno())

    def finish(self, shard, result):
        """The shard's own files, as its task returned them (the checkpoint whole)."""
        for name, key in (("checkpoint.jsonl", "checkpoint"), ("shard.json", "shard_json")):
            path = os.path.join(self.dirs[shard], name)
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write(result[key])
                f.flush()
                os.fsync(f.fileno())
            os.replace(path + ".tmp", path)


def _count_tasks(task_bytes):
    return sum(1 for line in task_bytes.decode("utf-8").splitlines() if line.strip())


def _node_relative(path):
    """Where an input file goes under a node's inputs/ folder, and the name fasa is given
    (recorded in results.json): a relative path without '..' as it is, else its base name."""
    norm = os.path.normpath(path)
    if os.path.isabs(norm) or norm.split(os.sep)[0] == "..":
        return os.path.basename(norm)
    return norm


def _is_clean_error(returncode, stderr):
    return returncode == 1 and "fasa: error" in stderr


def _tail(path):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - STDERR_TAIL))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    # fasa's progress line is rewritten with \r: keep its last state.
    return "\n".join(line.split("\r")[-1] for line in text.split("\n")).strip()


class _CheckpointTail:
    """Reads the complete lines appended to a checkpoint file since the last call."""

    def __init__(self, path, n_known):
        self.path = path
        self.n_known = n_known  # complete lines already with the keeper
        self.offset = None  # bytes of the file read so far (None: not yet positioned)
        self.partial = b""

    def new_lines(self):
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return []
        if self.offset is None or size < self.offset:
            # First read, or the file was rewritten: skip the lines the keeper has.
            with open(self.path, "rb") as f:
                data = f.read()
            complete = data[:data.rfind(b"\n") + 1]
            self.offset = len(complete)
            self.partial = b""
            lines = complete.decode("utf-8").splitlines(keepends=True)
            fresh = lines[self.n_known:]
            self.n_known = max(self.n_known, len(lines))
            return fresh
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        data = self.partial + data
        cut = data.rfind(b"\n") + 1
        self.partial = data[cut:]
        lines = data[:cut].decode("utf-8").splitlines(keepends=True)
        self.n_known += len(lines)
        return lines


def run_shard(keeper, shard, spec):
    """One shard on this node (a Ray task): resume from the keeper's lines, run fasa, stream the
    checkpoint to the keeper, return the shard's checkpoint.jsonl and shard.json."""
    import ray

    node = f"{ray.util.get_node_ip_address()} ({ray.get_runtime_context().get_node_id()[:8]})"
    attempt, lines = ray.get(keeper.begin.remote(shard, node))
    base = os.path.join(spec["work_dir"] or os.path.join(tempfile.gettempdir(), "fasa-cluster"),
                        spec["run_id"])
    inputs = os.path.join(base, f"inputs-{shard}-{attempt}")
    out = os.path.join(base, f"shard-{shard}")
    shutil.rmtree(out, ignore_errors=True)  # a failed attempt's files: the keeper has the truth
    shutil.rmtree(inputs, ignore_errors=True)
    os.makedirs(out)
    for rel, data in spec["files"].items():
        path = os.path.join(inputs, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    checkpoint = os.path.join(out, "checkpoint.jsonl")
    if lines:
        with open(checkpoint, "w", encoding="utf-8") as f:
            f.writelines(lines)
    fasa = spec["fasa"]
    err_path = os.path.join(base, f"stderr-{shard}-{attempt}.txt")
    try:
        model = spec["model"]
        if not os.path.exists(model):  # a `fasa pull` name: fetched here when this node lacks it
            with open(err_path, "wb") as err:
                pull = subprocess.run([fasa, "pull", model], stdout=subprocess.DEVNULL,
                                      stderr=err, cwd=inputs)
            if pull.returncode != 0:
                raise _error(f"fasa pull {model}", pull.returncode, err_path, node)
        cmd = [fasa, "eval", "sweep", *spec["args"], "--shard", f"{shard}/{spec['n_shards']}",
               "-o", out]
        if lines:
            cmd.append("--resume")
        tail = _CheckpointTail(checkpoint, len(lines))
        sent = len(lines)

        def sync():
            nonlocal sent
            fresh = tail.new_lines()
            if fresh:
                if ray.get(keeper.add.remote(shard, attempt, sent, fresh)) < 0:
                    raise ShardFailed(f"shard {shard}: attempt {attempt} was superseded")
                sent += len(fresh)

        with open(err_path, "wb") as err:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=err, cwd=inputs, preexec_fn=_die_with_parent)
            try:
                while proc.poll() is None:
                    sync()
                    time.sleep(SYNC_SECONDS)
            finally:
                if proc.poll() is None:  # this task was cancelled: take fasa with it
                    proc.kill()
                    proc.wait()
        sync()
        if proc.returncode != 0:
            raise _error(" ".join(cmd), proc.returncode, err_path, node)
        with open(checkpoint, encoding="utf-8") as f:
            checkpoint_text = f.read()
        with open(os.path.join(out, "shard.json"), encoding="utf-8") as f:
            shard_json = f.read()
        ray.get(keeper.finish.remote(shard, attempt))
        return {"shard": shard, "attempt": attempt, "node": node, "checkpoint": checkpoint_text,
                "shard_json": shard_json}
    finally:
        for path in (inputs, out):
            shutil.rmtree(path, ignore_errors=True)
        try:
            os.remove(err_path)
        except OSError:
            pass
        try:
            os.rmdir(base)  # when the node's other shards of this run are done too
        except OSError:
            pass


def _die_with_parent():
    """In the fasa child: SIGKILL when the Ray worker that started it dies (a forced cancel, a
    crash), so no fasa outlives its shard task (Linux; elsewhere nothing)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass


def _error(what, returncode, err_path, node):
    text = _tail(err_path)
    msg = f"{what}: exit status {returncode} on node {node}\n{text}"
    return ShardFailed(msg) if _is_clean_error(returncode, text) else ShardCrashed(msg)


def _parser():
    p = argparse.ArgumentParser(prog="python -m fasa.cluster",
                                description="fasa task sweeps on a Ray cluster")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="a sweep, one Ray task per shard, merged on the driver",
                       description="`fasa eval sweep` split into shards run as Ray tasks "
                       "(retried and resumed from their checkpoints), merged by `fasa eval "
                       "merge` into OUT as a one-machine sweep would write it.")
    s.add_argument("--address", default="auto",
                   help="Ray cluster address (default: auto, the cluster `ray start` started on "
                   "this machine; 'local': start a one-machine Ray here)")
    s.add_argument("--shards", type=int, required=True, help="number of shards (Ray tasks)")
    s.add_argument("--fasa", default="fasa",
                   help="the fasa binary on each node: a path, or a name on the PATH of the "
                   "node's `ray start` (default: fasa)")
    s.add_argument("--fasa-local", default=None,
                   help="the fasa binary on the driver, for `fasa eval merge` (default: --fasa)")
    s.add_argument("-m", "--model", required=True,
                   help="GGUF path, the same on every node (a relative one is made absolute "
                   "here), or a `fasa pull` name (pulled on a node that lacks it)")
    s.add_argument("--tasks", required=True, help="JSONL task file (read here, shipped)")
    s.add_argument("--policies", action="append", default=[], help="as fasa eval sweep")
    s.add_argument("--policy", action="append", default=[], help="as fasa eval sweep")
    s.add_argument("--budgets", action="append", default=[], help="as fasa eval sweep")
    s.add_argument("--calib", help="calibration file (read here, shipped)")
    s.add_argument("-c", "--ctx", type=int, help="as fasa eval sweep")
    s.add_argument("-j", "--jobs", type=int, help="as fasa eval sweep, per shard")
    s.add_argument("-t", "--threads", type=int,
                   help="threads per shard (default: --cpus)")
    s.add_argument("--kv-type", help="as fasa eval sweep")
    s.add_argument("--chat", action="store_true", help="as fasa eval sweep")
    s.add_argument("--question-under-policy", action="store_true", help="as fasa eval sweep")
    s.add_argument("--cpus", type=float, default=None,
                   help="Ray CPUs each shard task takes (default: -t, else -j, else 1)")
    s.add_argument("--retries", type=int, default=3,
                   help="Ray retries of a shard that dies (default: 3)")
    s.add_argument("--work-dir", default=None,
                   help="folder for the shards' files on each node (default: the node's temp "
                   "folder /fasa-cluster)")
    s.add_argument("-o", "--out", required=True, help="output directory (merged results)")
    s.add_argument("--resume", action="store_true",
                   help="finish a cluster sweep whose driver stopped: start from the shards' "
                   "checkpoints in OUT/shards (same flags required; finished shards not rerun)")
    return p


def _sweep_args(a, files):
    args = ["-m", a.model]
    tasks_rel = _node_relative(a.tasks)
    args += ["--tasks", tasks_rel]
    for x in a.policies:
        args += ["--policies", x]
    for x in a.policy:
        args += ["--policy", x]
    for x in a.budgets:
        args += ["--budgets", x]
    if a.calib:
        calib_rel = _node_relative(a.calib)
        if calib_rel == tasks_rel:
            calib_rel = os.path.join("calib", calib_rel)
        files[calib_rel] = _read(a.calib, "--calib")
        args += ["--calib", calib_rel]
    # A policy's own calibration (a spec's calib=FILE): shipped too when it is a relative path
    # (the spec's text, recorded in the reports, stays as given); another path is left to the
    # nodes (a file system they share).
    for spec in a.policies + a.policy:
        for opt in re.split(r"[:,]", spec):
            if opt.startswith("calib="):
                path = opt[len("calib="):]
                if os.path.isfile(path) and _node_relative(path) == os.path.normpath(path):
                    with open(path, "rb") as f:
                        files[os.path.normpath(path)] = f.read()
    if a.ctx is not None:
        args += ["-c", str(a.ctx)]
    if a.jobs is not None:
        args += ["-j", str(a.jobs)]
    args += ["-t", str(a.threads)]
    if a.kv_type:
        args += ["--kv-type", a.kv_type]
    if a.chat:
        args.append("--chat")
    if a.question_under_policy:
        args.append("--question-under-policy")
    return args


def _plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def _short_error(e):
    text = str(e).strip()
    lines = [x for x in text.splitlines() if x.strip()]
    return "\n".join(lines[-12:])


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise SystemExit(f"fasa.cluster: cannot read {what} '{path}': {e.strerror}")


def sweep(a):
    log = lambda msg: print(f"fasa.cluster: {msg}", flush=True)  # noqa: E731
    if a.shards < 1:
        raise SystemExit("fasa.cluster: --shards must be at least 1")
    fasa_local = a.fasa_local or a.fasa
    # Paths as the nodes see them: absolute (the shard tasks run in folders of their own).
    if os.sep in a.fasa:
        a.fasa = os.path.abspath(a.fasa)
    if os.path.isfile(a.model):
        a.model = os.path.abspath(a.model)
    task_bytes = _read(a.tasks, "--tasks")
    n_tasks = _count_tasks(task_bytes)
    cpus = a.cpus if a.cpus is not None else float(a.threads or a.jobs or 1)
    if not a.threads:
        a.threads = max(1, int(cpus))
    files = {_node_relative(a.tasks): task_bytes}
    spec = {"fasa": a.fasa, "model": a.model, "n_shards": a.shards, "args": _sweep_args(a, files),
            "files": files, "work_dir": a.work_dir, "run_id": f"run-{uuid.uuid4().hex[:12]}"}
    per_shard = [len(range(i, n_tasks, a.shards)) for i in range(a.shards)]
    out_shards = OutShards(a.out, a.shards)
    if not a.resume and out_shards.unfinished():
        raise SystemExit(f"fasa.cluster: {out_shards.root} holds the shards of an earlier "
                         "cluster sweep: add --resume to finish it (a finished one is only "
                         "merged again), or remove it to start again")
    known, done_before = out_shards.start(a.resume)
    persisted = {i: len(known.get(i, [])) for i in range(a.shards)}

    # Ray only now: every check above is answered without it.
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    package = os.path.dirname(os.path.abspath(__file__))
    init = {"runtime_env": {"py_modules": [package]}, "logging_level": "WARNING",
            "log_to_driver": False}
    ray.init(address=a.address, **init)  # "local": always a new one-machine Ray
    try:
        here = ray.get_runtime_context().get_node_id()
        keeper = ray.remote(CheckpointKeeper).options(
            num_cpus=0, max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
        ).remote(a.shards, known)
        task = ray.remote(run_shard).options(num_cpus=cpus, max_retries=a.retries,
                                             retry_exceptions=[ShardCrashed])
        log(f"{a.shards} shards of {n_tasks} tasks ({', '.join(map(str, per_shard))}) on "
            f"{_plural(sum(n['Alive'] for n in ray.nodes()), 'node')}, {cpus:g} CPUs each, up to {a.retries} retries; "
            f"run {spec['run_id']}")
        for i in sorted(done_before):
            log(f"shard {i}/{a.shards}: done before (in {out_shards.dirs[i]})")
        for i in sorted(set(known) - done_before):
            log(f"shard {i}/{a.shards}: resuming from {max(0, len(known[i]) - 1)} tasks "
                f"(in {out_shards.dirs[i]})")
        refs = {task.remote(keeper, i, spec): i for i in range(a.shards) if i not in done_before}
        results, seen, done_lines = {}, {i: 0 for i in range(a.shards)}, {}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=1.0)
            st = ray.get(keeper.status.remote())
            for i in range(a.shards):
                s = st[i]
                done = max(0, s["lines"] - 1)
                for n, att in enumerate(s["attempts"][seen[i]:], start=seen[i] + 1):
                    resumed = max(0, att["resumed_lines"] - 1)
                    what = "started" if n == 1 else f"retried (attempt {n})"
                    more = f", resuming from {resumed} tasks" if att["resumed_lines"] else ""
                    log(f"shard {i}/{a.shards}: {what} on node {att['node']}{more}")
                seen[i] = len(s["attempts"])
                if s["lines"] > persisted[i] and i not in done_before:
                    out_shards.append(i, ray.get(keeper.lines_from.remote(i, persisted[i])))
                    persisted[i] = s["lines"]
                if done != done_lines.get(i, 0) and not s["finished"]:
                    log(f"shard {i}/{a.shards}: {done}/{per_shard[i]} tasks checkpointed")
                done_lines[i] = done
            for ref in ready:
                i = refs[ref]
                try:
                    results[i] = ray.get(ref)
                except Exception as e:  # noqa: BLE001 (Ray wraps the task's exception)
                    for other in pending:  # interrupted: their fasa is killed, files removed
                        ray.cancel(other)
                    ray.wait(pending, num_returns=len(pending), timeout=10)
                    final = isinstance(e, ShardFailed)
                    why = "fasa refused it (not retried)" if final else \
                        f"failed after {len(st[i]['attempts'])} attempts"
                    log(f"shard {i}/{a.shards}: {why}:\n{_short_error(e)}")
                    return 1
                out_shards.finish(i, results[i])
                log(f"shard {i}/{a.shards}: finished on node {results[i]['node']} "
                    f"(attempt {results[i]['attempt']}, {per_shard[i]} tasks)")
    finally:
        ray.shutdown()

    cmd = [fasa_local, "eval", "merge", *out_shards.dirs, "-o", a.out, "--tasks", a.tasks]
    log(" ".join(cmd))
    merged = subprocess.run(cmd)
    if merged.returncode != 0:
        log(f"fasa eval merge failed (exit status {merged.returncode})")
        return 1
    log(f"results: {os.path.join(a.out, 'results.md')}")
    return 0


def main(argv=None):
    a = _parser().parse_args(argv)
    if a.command == "sweep":
        return sweep(a)
    return 2


if __name__ == "__main__":
    # Run through the importable module, so that Ray pickles run_shard and the keeper by
    # reference to fasa.cluster (workers import it) rather than to __main__.
    from fasa.cluster import main as _main

    sys.exit(_main())
