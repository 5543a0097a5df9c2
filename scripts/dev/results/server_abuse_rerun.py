#!/usr/bin/env python3
"""Re-runs the server abuse pass's reproducers against `fasa serve` on loopback and writes what
each one found as JSON (stdout). Standard library only.

  python3 scripts/dev/results/server_abuse_rerun.py FASA MODEL CALIB [SECONDS_OF_FLOOD]

FASA: the fasa binary; MODEL: a GGUF or pulled name; CALIB: a calibration of MODEL (its path
must not show in any answer). Every request goes to 127.0.0.x addresses on this machine.
"""
import json, os, socket, subprocess, sys, tempfile, threading, time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def raw(port, data, source="127.0.0.1", timeout=60):
    """Sends `data` (with Connection: close) and returns every byte until the server closes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    s.sendall(data)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out


def post(path, body, ctype="application/json", extra=b""):
    body = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len(body)}\r\n"
            .encode())
    if ctype is not None:
        head += f"Content-Type: {ctype}\r\n".encode()
    return head + extra + b"\r\n" + body


def status_of(resp):
    return int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/1.1 ") else 0


def body_of(resp):
    return resp.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in resp else b""


def responses_in(resp):
    return resp.count(b"HTTP/1.1 ")


class Server:
    def __init__(self, fasa, args):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="abuse_serve_", suffix=".log", delete=False)
        self.proc = subprocess.Popen([fasa, "serve", "--port", str(self.port)] + args,
                                     stderr=self.log, stdout=subprocess.DEVNULL)
        for _ in range(600):
            try:
                if status_of(raw(self.port, b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n",
                                 timeout=2)) == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise SystemExit("fasa serve did not come up")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)
        self.log.close()
        with open(self.log.name, errors="replace") as f:
            text = f.read()
        os.unlink(self.log.name)
        return text


def completion_cached(port, prompt, key=None, salt=None):
    body = {"prompt": prompt, "max_tokens": 1, "temperature": 0}
    if salt:
        body["cache_salt"] = salt
    extra = f"Authorization: Bearer {key}\r\n".encode() if key else b""
    r = raw(port, post("/v1/completions", body, extra=extra))
    return json.loads(body_of(r))["usage"]["prompt_tokens_details"]["cached_tokens"]


def health_under_idle_flood(port, seconds, addresses=20, per_address=10):
    """Idle connections from `addresses` loopback addresses, reopened as the server closes them,
    while a probe asks GET /health every 50 ms: how many probes got 503 (or nothing)."""
    stop = time.time() + seconds
    def flood(i):
        src = f"127.0.0.{10 + i}"
        socks = []
        while time.time() < stop:
            socks = [s for s in socks if s.fileno() >= 0]
            while len(socks) < per_address:
                try:
                    socks.append(socket.create_connection(("127.0.0.1", port), timeout=2,
                                                          source_address=(src, 0)))
                except OSError:
                    break
            time.sleep(0.02)
            for s in list(socks):  # closed or answered by the server (timeout, shed, refused)
                s.setblocking(False)
                try:
                    s.recv(4096)  # bytes or EOF: this one is done
                except BlockingIOError:
                    continue  # still idle: keep it
                except OSError:
                    pass
                s.close()
                socks.remove(s)
        for s in socks:
            s.close()
    threads = [threading.Thread(target=flood, args=(i,)) for i in range(addresses)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    probes = bad = 0
    while time.time() < stop - 0.5:
        probes += 1
        try:
            st = status_of(raw(port, b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n",
                               source="127.0.0.250", timeout=5))
        except OSError:
            st = 0
        bad += st != 200
        time.sleep(0.05)
    for t in threads:
        t.join()
    return {"probes": probes, "not_200": bad, "addresses": addresses,
            "idle_per_address": per_address, "seconds": seconds}


def main():
    fasa, model, calib = sys.argv[1:4]
    flood_s = float(sys.argv[4]) if len(sys.argv) > 4 else 60
    out = {}
    srv = Server(fasa, ["-m", model, "--calib", calib, "--max-conns", "64"])
    p = srv.port
    # 1. the reproducer (text/plain), and the same field name with a JSON type
    name = "\r\nAccess-Control-Allow-Origin: *"
    body = json.dumps({"prompt": "a", "max_tokens": 1, name: 1}).encode()
    r_plain = raw(p, post("/v1/completions", body, ctype="text/plain"))
    r_json = raw(p, post("/v1/completions", body))
    r_stream = raw(p, post("/v1/completions", json.dumps(
        {"prompt": "a", "max_tokens": 1, "stream": True, name: 1}).encode()))
    head = lambda r: r.split(b"\r\n\r\n", 1)[0]
    out["response_splitting"] = {
        "text_plain_status": status_of(r_plain),
        "json_status": status_of(r_json), "stream_status": status_of(r_stream),
        "injected_header_in_any": any(b"\r\nAccess-Control-Allow-Origin:" in head(r)
                                      for r in (r_plain, r_json, r_stream)),
        "responses_per_answer": [responses_in(r) for r in (r_plain, r_json, r_stream)],
        "ignored_header": [l.decode() for l in head(r_json).split(b"\r\n")
                           if l.startswith(b"X-Fasa-Ignored-Fields")],
    }
    # 2. the prompt cache as a side channel (no keys: salts)
    doc = "The lighthouse keeper counted ships. " * 40
    out["cache_salt"] = {"salt_a_first": completion_cached(p, doc, salt="a"),
                         "salt_b_after_a": completion_cached(p, doc, salt="b"),
                         "salt_a_again": completion_cached(p, doc, salt="a")}
    # 3. log forging, a 200,189-character policy name, the calibration's path
    raw(p, post("/v1/completions", {"prompt": "a", "max_tokens": 1,
                                    "model": "x\nfasa serve: 1.2.3.4:5 POST /v1/completions 200"}))
    raw(p, post("/v1/completions", {"prompt": "a", "fasa": {"policy": "p" * 200189}}))
    r_calib = raw(p, post("/v1/completions", {"prompt": "abc", "max_tokens": 2,
                                              "fasa": {"policy": "fasa", "budget": 64}}))
    calib_dir = os.path.dirname(os.path.abspath(calib)).encode()
    out["calibration_shown"] = {"status": status_of(r_calib),
                                "path_in_answer": calib_dir in r_calib,
                                "fasa": json.loads(body_of(r_calib)).get("fasa")}
    # 4. lower-case bearer is tested with keys below; 5. /health under idle floods
    out["health_under_idle_flood"] = health_under_idle_flood(p, flood_s)
    log = srv.stop()
    lines = [l for l in log.split("\n") if l]
    out["log"] = {"lines": len(lines), "longest": max(len(l) for l in lines),
                  "forged_lines": sum(l.startswith("fasa serve: 1.2.3.4") for l in lines)}
    # 6. two API keys, lower-case scheme
    srv = Server(fasa, ["-m", model, "--api-key", "alice", "--api-key", "bob"])
    p = srv.port
    out["api_keys"] = {"alice_first": completion_cached(p, doc, key="alice"),
                       "bob_after_alice": completion_cached(p, doc, key="bob"),
                       "alice_again": completion_cached(p, doc, key="alice"),
                       "lowercase_bearer_status": status_of(raw(p, post(
                           "/v1/completions", {"prompt": "a", "max_tokens": 1},
                           extra=b"Authorization: bearer alice\r\n")))}
    srv.stop()
    # 7. a FIFO as --prompt-cache, 8. the warning beyond loopback
    d = tempfile.mkdtemp()
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    t0 = time.time()
    r = subprocess.run([fasa, "run", "-m", model, "-p", "hi", "-n", "1", "--prompt-cache", fifo],
                       capture_output=True, text=True, timeout=60)
    out["fifo_prompt_cache"] = {"exit": r.returncode, "seconds": round(time.time() - t0, 2),
                                "stderr": r.stderr.strip()}
    w = subprocess.Popen([fasa, "serve", "-m", model, "--host", "0.0.0.0", "--port", "0"],
                         stderr=subprocess.PIPE, text=True)
    first = [w.stderr.readline() for _ in range(2)]
    w.terminate()
    w.wait(60)
    out["beyond_loopback_warning"] = [l.strip() for l in first if "warning" in l]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
