"""fasa.cluster's pieces that need no Ray (the Ray cluster itself: tests/cluster/ray_test.py,
ctest Cluster.ray_sweep): the checkpoint keeper, the tail of a growing checkpoint, where
shipped files go, which fasa failures are final, and the flags a shard is run with."""

import os
import subprocess
import sys

import pytest

import fasa.cluster as cluster


def test_keeper_takes_each_line_once_and_ignores_a_superseded_attempt():
    k = cluster.CheckpointKeeper(2)
    attempt, lines = k.begin(0, "node-a")
    assert (attempt, lines) == (1, [])
    assert k.add(0, 1, 0, ["h\n", "t0\n"]) == 2
    assert k.add(0, 1, 1, ["t0\n", "t2\n"]) == 3  # t0 again: skipped
    attempt, lines = k.begin(0, "node-b")  # the retry gets what the first attempt sent
    assert (attempt, lines) == (2, ["h\n", "t0\n", "t2\n"])
    assert k.add(0, 1, 3, ["t4\n"]) == -1  # the old attempt, still running somewhere
    assert k.add(0, 2, 3, ["t4\n"]) == 4
    k.finish(0, 1)
    st = k.status()
    assert not st[0]["finished"] and st[0]["lines"] == 4 and st[1]["lines"] == 0
    assert [a["resumed_lines"] for a in st[0]["attempts"]] == [0, 3]
    k.finish(0, 2)
    assert k.status()[0]["finished"]


def test_keeper_starts_from_a_resumed_drivers_lines():
    k = cluster.CheckpointKeeper(2, {1: ["h\n", "t1\n"]})
    assert k.begin(0, "a") == (1, [])
    assert k.begin(1, "a") == (1, ["h\n", "t1\n"])
    assert k.add(1, 1, 2, ["t3\n"]) == 3
    assert k.lines_from(1, 2) == ["t3\n"]
    assert k.lines_from(1, 0) == ["h\n", "t1\n", "t3\n"]


def test_out_shards_keep_what_a_dead_driver_had(tmp_path):
    """OUT/shards: lines appended as they come, a finished shard's files, and a driver started
    again with --resume gets them back (a line cut by a kill dropped); without --resume an
    earlier sweep there is refused by the caller (unfinished) or cleared (start)."""
    out = str(tmp_path / "OUT")
    o = cluster.OutShards(out, 3)
    assert not o.unfinished()
    assert o.start(resume=False) == ({}, set())
    o.append(0, ["h0\n", "t0\n"])
    o.append(0, ["t3\n"])
    o.append(1, ["h1\n"])
    with open(os.path.join(o.dirs[1], "checkpoint.jsonl"), "a") as f:
        f.write("t1-cut")  # the driver died while writing
    o.finish(2, {"checkpoint": "h2\nt2\nt5\n", "shard_json": "{}\n"})
    assert o.unfinished()
    again = cluster.OutShards(out, 3)
    known, done = again.start(resume=True)
    assert known == {0: ["h0\n", "t0\n", "t3\n"], 1: ["h1\n"], 2: ["h2\n", "t2\n", "t5\n"]}
    assert done == {2}
    with open(os.path.join(o.dirs[1], "checkpoint.jsonl")) as f:
        assert f.read() == "h1\n"  # the cut line is gone, so appending goes on cleanly
    with pytest.raises(SystemExit, match="shard-2 is not a shard of this sweep"):
        cluster.OutShards(out, 2).start(resume=True)
    assert cluster.OutShards(out, 3).start(resume=False) == ({}, set())
    assert not cluster.OutShards(out, 3).unfinished()


def test_tail_sends_complete_lines_only(tmp_path):
    path = tmp_path / "checkpoint.jsonl"
    path.write_text("h\nt0\n")  # what a retry starts from: the keeper has these two
    tail = cluster._CheckpointTail(str(path), 2)
    assert tail.new_lines() == []
    with open(path, "a") as f:
        f.write("t1\nt2-cut")
    assert tail.new_lines() == ["t1\n"]
    with open(path, "a") as f:
        f.write(" short\n")
    assert tail.new_lines() == ["t2-cut short\n"]
    assert tail.new_lines() == []
    missing = cluster._CheckpointTail(str(tmp_path / "none.jsonl"), 0)
    assert missing.new_lines() == []


def test_shipped_files_keep_relative_paths():
    assert cluster._node_relative("T.jsonl") == "T.jsonl"
    assert cluster._node_relative("data/./T.jsonl") == os.path.join("data", "T.jsonl")
    assert cluster._node_relative("/abs/T.jsonl") == "T.jsonl"
    assert cluster._node_relative("../T.jsonl") == "T.jsonl"


def test_only_a_clean_fasa_error_is_final():
    assert cluster._is_clean_error(1, "fasa: error: unknown flag '--x'")
    assert not cluster._is_clean_error(-9, "fasa: 2/6 tasks")
    assert not cluster._is_clean_error(1, "Segmentation fault")
    assert not cluster._is_clean_error(134, "fasa: error: x")


def test_sweep_flags_and_shipped_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "T.jsonl").write_text("{}\n")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "emma.json").write_text("{}")
    (tmp_path / "own.json").write_text("{}")
    a = cluster._parser().parse_args(
        ["sweep", "--shards", "3", "-m", "smollm2-135m", "--tasks", "T.jsonl", "--policies",
         "full,fasa", "--policy", "fasa:calib=own.json,fcs=compound", "--budgets", "32,64",
         "--calib", "c/emma.json", "-c", "512", "--chat", "--question-under-policy", "-o", "out"])
    a.threads = 2
    files = {}
    args = cluster._sweep_args(a, files)
    assert args == ["-m", "smollm2-135m", "--tasks", "T.jsonl", "--policies", "full,fasa",
                    "--policy", "fasa:calib=own.json,fcs=compound", "--budgets", "32,64",
                    "--calib", os.path.join("c", "emma.json"), "-c", "512", "-t", "2", "--chat",
                    "--question-under-policy"]
    assert sorted(files) == sorted([os.path.join("c", "emma.json"), "own.json"])


def test_module_imports_without_ray_or_the_extension(tmp_path):
    """fasa.cluster from the source tree, with neither ray nor fasa._fasa importable."""
    repo_python = os.path.join(os.path.dirname(__file__), "..", "..", "python")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(repo_python))
    code = ("import sys; sys.modules['ray'] = None; sys.modules['fasa._fasa'] = None\n"
            "import fasa, fasa.cluster\n"
            "try:\n    fasa.Model\nexcept ImportError as e:\n    print('ImportError', e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "ImportError fasa.Model needs the compiled extension fasa._fasa" in p.stdout
    h = subprocess.run([sys.executable, "-m", "fasa.cluster", "sweep", "--help"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert h.returncode == 0 and "--shards" in h.stdout, h.stderr


def test_bad_input_is_one_clear_error_before_ray(tmp_path, monkeypatch):
    """Each refusal is a SystemExit naming the problem, before Ray is imported (venv-test has
    no ray: reaching `import ray` would be a ModuleNotFoundError instead)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "T.jsonl").write_text("{}\n")
    base = ["sweep", "-m", "m.gguf", "--policies", "full", "-o", "OUT"]
    with pytest.raises(SystemExit, match="--shards must be at least 1"):
        cluster.main(base + ["--shards", "0", "--tasks", "T.jsonl"])
    with pytest.raises(SystemExit, match="cannot read --tasks 'none.jsonl'"):
        cluster.main(base + ["--shards", "2", "--tasks", "none.jsonl"])
    with pytest.raises(SystemExit, match="cannot read --calib 'none.json'"):
        cluster.main(base + ["--shards", "2", "--tasks", "T.jsonl", "--calib", "none.json"])
    earlier = cluster.OutShards("OUT", 2)
    earlier.start(resume=False)
    earlier.append(0, ["h\n"])  # an earlier sweep's lines
    with pytest.raises(SystemExit, match="holds the shards of an earlier cluster sweep: add "
                       "--resume"):
        cluster.main(base + ["--shards", "2", "--tasks", "T.jsonl"])
    with pytest.raises(SystemExit, match="shard-2 is not a shard of this sweep"):
        (tmp_path / "OUT" / "shards" / "shard-2").mkdir()
        cluster.main(base + ["--shards", "2", "--tasks", "T.jsonl", "--resume"])
