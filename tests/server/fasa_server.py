"""Starting and stopping `fasa serve` for the server tests, and small raw-HTTP helpers."""

import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time

MODEL = os.environ.get("FASA_TEST_MODEL", "smollm2-135m")


class Server:
    """`fasa serve` on a free loopback port; stop() (or the context manager) ends it."""

    def __init__(self, fasa, *args, threads=1, model=MODEL):
        cmd = [fasa, "serve", "-m", model, "--port", "0", "-t", str(threads), *args]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        self.log = []
        deadline = time.time() + 120
        self.port = None
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"on http://[^:]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("fasa serve did not start: " + "".join(self.log))
        # Keep draining stderr so the server never blocks on a full pipe.
        self._drain = threading.Thread(target=self._read_rest, daemon=True)
        self._drain.start()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def _read_rest(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise RuntimeError("fasa serve did not stop within 30 s of SIGTERM")
        self._drain.join(timeout=5)
        self.proc.stderr.close()
        return self.proc.returncode

    def peak_rss_bytes(self):
        """VmHWM of the server process (Linux)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def request(self, method, path, body=None, headers=None, timeout=120):
        """Raw HTTP: returns (status, headers dict, body text). body: dict (JSON) or str/bytes."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        if isinstance(body, dict):
            body = json.dumps(body)
        if body is not None:  # a JSON body says so (the server answers 415 otherwise)
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read().decode("utf-8", "replace")
        conn.close()
        return r.status, dict(r.getheaders()), data

    def metrics(self):
        """GET /metrics parsed into {sample name with labels: value}."""
        status, _, text = self.request("GET", "/metrics")
        assert status == 200, text
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out


def model_file(fasa):
    """The served model's GGUF path (`fasa pull` prints it last; a cached file is not fetched)."""
    out = subprocess.run([fasa, "pull", MODEL], capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1]


def fasa_run(fasa, prompt, n, *args):
    """`fasa run` greedy output for the same prompt (what the server must reproduce)."""
    cmd = [fasa, "run", "-m", MODEL, "-p", prompt, "-n", str(n), "--temp", "0", "-q", "-t", "1",
           *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert out.endswith("\n"), out
    return out[:-1]
