"""Two `fasa serve` replicas behind nginx (least connections, passive health checks), one of them
killed mid-load (docs/SERVER.md, "Several replicas behind nginx").

Starts two replicas and an nginx of its own on loopback (every path in a temporary directory; the
config is the one docs/SERVER.md shows), computes each prompt's greedy answer from one replica
directly, then sends a bounded mixed load through nginx from several client threads: completions
and chats, streamed and not, and /v1/models. Once a third of the requests are done, and while a
stream is being answered by a replica, that replica gets SIGKILL. Every request must end either
complete -- HTTP 200, a finish_reason, a stream ended by `data: [DONE]`, and then exactly the
reference text -- or with an error the client sees (an HTTP error status, a connection closed or
reset, a stream without its finish_reason or [DONE]); none may hang. The requests started a
couple of seconds after the kill must all complete, answered by the survivor (nginx's
X-Upstream header and the survivor's /metrics). Before the load, the client's classification is
checked against canned truncated answers from a fake server: none may pass as complete.

    run_python_test.sh tests/server/replicas_test.py build/fasa [--clients 4] [--requests 48]

Skipped (exit 77) without nginx (Debian's `nginx` package, scripts/setup.sh installs it), or
failed under FASA_REQUIRE_MODEL=1.
"""

import argparse
import collections
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx
import openai

sys.path.insert(0, os.path.dirname(__file__))
from fasa_server import MODEL, Server  # noqa: E402

REQUEST_TIMEOUT = 60  # seconds a request may take through nginx before it counts as a hang
SETTLE = 2.0  # seconds after the kill from which every request must complete
LOAD_DEADLINE = 180  # seconds the whole load may take
COMPLETION_PROMPTS = ["The history of the old lighthouse begins",
                      "In the mountain village, every winter",
                      "My grandmother kept a small garden where",
                      "The train left the station and"]
CHAT_PROMPTS = ["Write two sentences about the sea.",
                "Describe a quiet library in one sentence.",
                "What is a good name for a grey cat?",
                "Give one tip for a long train journey."]
# The mix, in turn: non-streamed answers through the openai client, streams read as raw
# server-sent events (so that a missing [DONE] is seen), and the model list.
KINDS = ["completion", "chat", "completion-stream", "chat-stream", "completion",
         "chat-stream", "chat", "models"]

# The nginx configuration of docs/SERVER.md, with every file under the prefix directory.
NGINX_CONF = """\
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log notice;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    log_format upstream '$remote_addr "$request" $status $body_bytes_sent $request_time '
                        'upstream=$upstream_addr upstream_status=$upstream_status';
    access_log {prefix}/access.log upstream;

    upstream fasa {{
        least_conn;
{servers}
        keepalive 16;
        keepalive_timeout 20s;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://fasa;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 600s;
            proxy_send_timeout 600s;
            proxy_connect_timeout 2s;
            proxy_next_upstream error timeout non_idempotent http_502 http_503;
            proxy_next_upstream_tries 2;
            add_header X-Upstream $upstream_addr always;
        }}
    }}
}}
"""


def nginx_conf(prefix, port, replica_ports):
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=10s;"
                        for p in replica_ports)
    return NGINX_CONF.format(prefix=prefix, port=port, servers=servers)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx in the foreground with its own prefix directory; stop() ends it."""

    def __init__(self, binary, prefix, replica_ports):
        self.prefix = prefix
        for attempt in range(3):  # the free port may be taken before nginx binds it
            self.port = free_port()
            conf = os.path.join(prefix, "nginx.conf")
            with open(conf, "w") as f:
                f.write(nginx_conf(prefix, self.port, replica_ports))
            self.proc = subprocess.Popen(
                [binary, "-p", prefix, "-c", conf, "-e", os.path.join(prefix, "error.log"),
                 "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 15
            while time.time() < deadline and self.proc.poll() is None:
                try:
                    if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=5).status_code \
                            == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
            self.stop()
        raise RuntimeError("nginx did not start:\n" + self.log("error.log"))

    def log(self, name, last=40):
        try:
            with open(os.path.join(self.prefix, name)) as f:
                return "".join(f.readlines()[-last:])
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # fast shutdown
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Truncated(Exception):
    """An answer that arrived without its end (no finish_reason, no [DONE])."""


def read_sse(lines):
    """(text, finish_reason, done) of a completion or chat stream's lines."""
    text, finish, done = [], None, False
    for line in lines:
        if not line:
            continue
        if done or not line.startswith("data: "):
            raise Truncated(f"unexpected line {line[:80]!r}")
        data = line[len("data: "):]
        if data == "[DONE]":
            done = True
            continue
        chunk = json.loads(data)
        if "error" in chunk:
            raise Truncated(f"error event: {data[:200]}")
        for c in chunk["choices"]:
            text.append(c.get("text") or (c.get("delta") or {}).get("content") or "")
            finish = c.get("finish_reason") or finish
    return "".join(text), finish, done


def sse_complete(lines):
    """The stream's text; Truncated unless a finish_reason and [DONE] both arrived."""
    text, finish, done = read_sse(lines)
    if finish is None or not done:
        raise Truncated(f"stream ended without {'finish_reason' if finish is None else '[DONE]'}")
    return text


def body(path, payload, stream):
    chat = path.endswith("chat/completions")
    prompt_key = "messages" if chat else "prompt"
    prompt = [{"role": "user", "content": payload[0]}] if chat else payload[0]
    return {"model": MODEL, prompt_key: prompt, "max_tokens": payload[1], "temperature": 0,
            "stream": stream}


class Client:
    """One client thread's connections: the openai client for non-streamed answers, httpx for
    streams. ask() returns (text, upstream address) or raises; `on_stream` sees a stream's
    progress (upstream, chunks so far) as it arrives."""

    def __init__(self, base):
        self.base = base
        self.openai = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0,
                                    timeout=REQUEST_TIMEOUT)
        self.http = httpx.Client(timeout=REQUEST_TIMEOUT)

    def close(self):
        self.openai.close()
        self.http.close()

    def ask(self, kind, payload, on_stream=None):
        if kind == "models":
            r = self.http.get(self.base + "/v1/models")
            r.raise_for_status()
            return r.json()["data"][0]["id"], r.headers.get("x-upstream")
        if kind.endswith("-stream"):
            return self._stream(kind, payload, on_stream)
        if kind == "chat":
            raw = self.openai.chat.completions.with_raw_response.create(
                model=MODEL, messages=[{"role": "user", "content": payload[0]}],
                max_tokens=payload[1], temperature=0)
            choice = raw.parse().choices[0]
            text = choice.message.content
        else:
            raw = self.openai.completions.with_raw_response.create(
                model=MODEL, prompt=payload[0], max_tokens=payload[1], temperature=0)
            choice = raw.parse().choices[0]
            text = choice.text
        if choice.finish_reason not in ("stop", "length"):
            raise Truncated(f"finish_reason {choice.finish_reason!r}")
        return text, raw.headers.get("x-upstream")

    def _stream(self, kind, payload, on_stream):
        path = "/v1/chat/completions" if kind.startswith("chat") else "/v1/completions"
        t0 = time.time()
        with self.http.stream("POST", self.base + path, json=body(path, payload, True)) as r:
            if r.status_code != 200:
                r.read()
                raise httpx.HTTPStatusError(f"HTTP {r.status_code}: {r.text[:200]}",
                                            request=r.request, response=r)
            upstream = r.headers.get("x-upstream")

            def tracked():
                events = 0
                for line in r.iter_lines():
                    if time.time() - t0 > REQUEST_TIMEOUT:
                        raise httpx.ReadTimeout("stream over the request timeout")
                    if line:
                        events += 1
                        if on_stream:
                            on_stream(upstream, events)
                    yield line
            return sse_complete(tracked()), upstream


def check_classifier():
    """Canned answers from a fake server, whole and cut short: only whole ones are complete."""
    chunk = {"id": "c", "object": "text_completion", "created": 0, "model": MODEL,
             "choices": [{"index": 0, "text": "x", "finish_reason": None, "logprobs": None}]}
    last = json.loads(json.dumps(chunk))
    last["choices"][0].update(text="", finish_reason="length")
    events = [f"data: {json.dumps(chunk)}\n\n", f"data: {json.dumps(last)}\n\n",
              "data: [DONE]\n\n"]
    whole = {"id": "c", "object": "text_completion", "created": 0, "model": MODEL,
             "choices": [{"index": 0, "text": "xy", "finish_reason": "length",
                          "logprobs": None}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}
    whole = json.dumps(whole).encode()

    def chunked(parts, end):
        out = b"".join(b"%x\r\n%s\r\n" % (len(p.encode()), p.encode()) for p in parts)
        return out + (b"0\r\n\r\n" if end else b"")
    sse_head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" \
               b"Transfer-Encoding: chunked\r\n\r\n"
    json_head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    cases = [("stream", sse_head + chunked(events, True), True)]
    for n in range(len(events)):  # cut after n events: the chunked body ends cleanly, or not
        cases.append(("stream", sse_head + chunked(events[:n], True), False))
        cases.append(("stream", sse_head + chunked(events[:n], False), False))
    # [DONE] arrived but not the chunked body's end: counted as failed too (the safe side).
    cases.append(("stream", sse_head + chunked(events, True)[:-7], False))
    cases.append(("plain", json_head % len(whole) + whole, True))
    for cut in (0, 1, len(whole) // 2, len(whole) - 1):
        cases.append(("plain", json_head % len(whole) + whole[:cut], False))

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]

    def serve():
        for _, reply, _ in cases:
            conn, _ = srv.accept()
            with conn:
                buf = b""
                while b"\r\n\r\n" not in buf:
                    buf += conn.recv(65536)
                head, rest = buf.split(b"\r\n\r\n", 1)
                length = [int(h.split(b":")[1]) for h in head.split(b"\r\n")
                          if h.lower().startswith(b"content-length:")]
                while length and len(rest) < length[0]:
                    rest += conn.recv(65536)
                conn.sendall(reply)
    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        for i, (kind, _, complete) in enumerate(cases):
            client = Client(f"http://127.0.0.1:{port}")
            try:
                client.ask("completion-stream" if kind == "stream" else "completion",
                           ("p", 2))
                got = True
            except (Truncated, httpx.HTTPError, openai.APIError, json.JSONDecodeError):
                got = False
            finally:
                client.close()
            assert got == complete, f"canned case {i} ({kind}): complete={got}, not {complete}"
    finally:
        srv.close()
    return len(cases)


def upstream_port(upstream):
    """The replica that answered last: X-Upstream lists every one tried ("a:1, b:2")."""
    return int(upstream.split(",")[-1].strip().rsplit(":", 1)[1]) if upstream else None


def served(metrics):
    return sum(v for k, v in metrics.items() if k.startswith("fasa_requests_total{")
               and "/completions" in k and 'status="200"' in k)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fasa")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--requests", type=int, default=48)
    ap.add_argument("--max-tokens", type=int, default=24, help="non-streamed answers")
    ap.add_argument("--stream-tokens", type=int, default=48, help="streams (longer, so that "
                    "the kill lands in one)")
    args = ap.parse_args()

    nginx_bin = shutil.which(os.environ.get("FASA_NGINX", "nginx"),
                             path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if not nginx_bin:
        print("no nginx (apt install nginx; scripts/setup.sh does)", file=sys.stderr)
        sys.exit(1 if os.environ.get("FASA_REQUIRE_MODEL") == "1" else 77)

    n_cases = check_classifier()
    print(f"classifier: {n_cases} canned answers, only the whole ones complete")

    t_start = time.time()
    prefix = tempfile.mkdtemp(prefix="fasa-nginx-")
    os.chmod(prefix, 0o755)  # nginx's workers run as another user when it is started as root
    replicas, nginx, problems, ok = [], None, [], False
    try:
        for _ in range(2):
            replicas.append(Server(args.fasa, "--parallel", "4", "--max-conns-per-client", "0",
                                   threads=1))
        ports = [r.port for r in replicas]
        by_port = dict(zip(ports, replicas))

        # The reference answers, one at a time from the first replica directly.
        payloads = {}
        for kind in KINDS:
            if kind == "models":
                continue
            prompts = CHAT_PROMPTS if kind.startswith("chat") else COMPLETION_PROMPTS
            n = args.stream_tokens if kind.endswith("-stream") else args.max_tokens
            for p in prompts:
                payloads[(kind.split("-")[0], p, n)] = None
        ref_client = Client(f"http://127.0.0.1:{ports[0]}")
        t0 = time.time()
        for key in payloads:
            payloads[key] = ref_client.ask(key[0], (key[1], key[2]))[0]
        ref_client.close()
        t_ref = time.time() - t0
        refs = {"models": MODEL, **{k: v for k, v in payloads.items()}}

        nginx = Nginx(nginx_bin, prefix, ports)
        base = f"http://127.0.0.1:{nginx.port}"

        reqs = []
        for i in range(args.requests):
            kind = KINDS[i % len(KINDS)]
            prompts = CHAT_PROMPTS if kind.startswith("chat") else COMPLETION_PROMPTS
            n = args.stream_tokens if kind.endswith("-stream") else args.max_tokens
            p = prompts[(i // len(KINDS)) % len(prompts)]
            ref = refs["models"] if kind == "models" else refs[(kind.split("-")[0], p, n)]
            # The last quarter waits for the kill and SETTLE seconds more.
            reqs.append({"id": i, "kind": kind, "payload": (p, n), "ref": ref,
                         "tail": i >= args.requests * 3 // 4})

        lock = threading.Lock()
        todo = collections.deque(reqs)
        results = {}
        streams = {}  # id -> (upstream port, events so far), while a stream is being read
        killed = {"t": None, "port": None, "streams": 0, "before": None}
        settled = threading.Event()
        stop = threading.Event()

        def client_loop():
            client = Client(base)
            try:
                while not stop.is_set():
                    with lock:
                        if not todo:
                            return
                        req = todo.popleft()
                    if req["tail"]:
                        settled.wait(LOAD_DEADLINE)
                    res = {"start": time.time()}

                    def on_stream(upstream, n, rid=req["id"]):
                        with lock:
                            streams[rid] = (upstream_port(upstream), n)
                    try:
                        text, upstream = client.ask(req["kind"], req["payload"], on_stream)
                        res.update(outcome="complete", upstream=upstream, text=text)
                    except (httpx.TimeoutException, openai.APITimeoutError) as e:
                        res.update(outcome="hang", detail=f"{type(e).__name__}: {e}")
                    except (Truncated, httpx.HTTPError, openai.APIError,
                            json.JSONDecodeError) as e:
                        res.update(outcome="error", detail=f"{type(e).__name__}: {e}")
                    res["end"] = time.time()
                    with lock:
                        streams.pop(req["id"], None)
                        results[req["id"]] = res
            finally:
                client.close()

        threads = [threading.Thread(target=client_loop, daemon=True)
                   for _ in range(args.clients)]
        t_load = time.time()
        for t in threads:
            t.start()

        # The kill: once a third of the requests are done, a replica answering a stream that
        # has far to go (at most 4 events so far) gets SIGKILL.
        deadline = t_load + LOAD_DEADLINE
        while len(results) < args.requests // 3 and time.time() < deadline:
            time.sleep(0.02)
        wait_stream = time.time() + 30
        victim = None
        while time.time() < min(wait_stream, deadline):
            with lock:
                cand = [p for p, n in streams.values() if p in by_port and n <= 4]
            if cand:
                victim = cand[0]
                break
            time.sleep(0.005)
        if victim is None:
            problems.append("no stream in flight on a replica within 30 s of a third done")
            victim = ports[1]
        survivor = [p for p in ports if p != victim][0]
        before = by_port[survivor].metrics()
        with lock:
            killed["streams"] = sum(1 for p, _ in streams.values() if p == victim)
            by_port[victim].proc.send_signal(signal.SIGKILL)
            killed.update(t=time.time(), port=victim, done=len(results))
        by_port[victim].proc.wait()
        time.sleep(SETTLE)
        settled.set()

        for t in threads:
            t.join(max(1, deadline - time.time()))
        stop.set()
        if any(t.is_alive() for t in threads):
            problems.append(f"the load did not finish within {LOAD_DEADLINE} s")
        t_load = time.time() - t_load
        after = by_port[survivor].metrics()

        # Classify by phase: before the kill, in flight at the kill, started after it.
        t_kill = killed["t"]
        phases = collections.defaultdict(collections.Counter)
        served_by = collections.Counter()
        for req in reqs:
            res = results.get(req["id"])
            if res is None:
                problems.append(f"request {req['id']} ({req['kind']}) never ended")
                continue
            phase = ("before" if res["end"] < t_kill else "across" if res["start"] < t_kill
                     else "settle" if res["start"] < t_kill + SETTLE else "after")
            phases[phase][res["outcome"]] += 1
            res["phase"] = phase
            if res["outcome"] == "hang":
                problems.append(f"request {req['id']} ({req['kind']}) hung: {res['detail']}")
            elif res["outcome"] == "complete":
                port = upstream_port(res["upstream"])
                served_by[(phase, "victim" if port == victim else "survivor"
                           if port == survivor else str(port))] += 1
                if res["text"] != req["ref"]:
                    problems.append(f"request {req['id']} ({req['kind']}, {phase}) answered "
                                    f"{res['text']!r}, not the reference {req['ref']!r}")
                if phase in ("settle", "after") and port != survivor:
                    problems.append(f"request {req['id']} started after the kill was answered "
                                    f"by {res['upstream']}, not the survivor {survivor}")
            elif phase == "after":
                problems.append(f"request {req['id']} ({req['kind']}) started {SETTLE} s after "
                                f"the kill failed: {res['detail']}")
        for who in ("victim", "survivor"):
            if not served_by[("before", who)]:
                problems.append(f"the {who} answered nothing before the kill (no balancing)")
        completed_after = sum(phases[p]["complete"] for p in ("across", "settle", "after"))
        if not completed_after:
            problems.append("no request completed after the kill")
        if phases["after"]["complete"] < args.requests // 8:
            problems.append(f"only {phases['after']['complete']} requests started {SETTLE} s "
                            "after the kill")
        cut = phases["across"]["error"]
        if killed["streams"] and not cut:
            problems.append(f"{killed['streams']} streams were in flight on the killed replica, "
                            "but no request failed")
        # The survivor's own count: at least the generations started after the kill.
        started_after = sum(1 for req in reqs if req["kind"] != "models"
                            and results.get(req["id"], {}).get("outcome") == "complete"
                            and results[req["id"]]["start"] >= t_kill)
        delta = served(after) - served(before)
        if delta < started_after:
            problems.append(f"the survivor's /metrics counts {delta:.0f} answers since the "
                            f"kill, fewer than the {started_after} started after it")

        report = {
            "model": MODEL, "clients": args.clients, "requests": args.requests,
            "max_tokens": args.max_tokens, "stream_tokens": args.stream_tokens,
            "reference_s": round(t_ref, 2), "load_s": round(t_load, 2),
            "kill": {"after_done": killed["done"],
                     "streams_in_flight_on_victim": killed["streams"]},
            "phases": {p: dict(phases[p]) for p in ("before", "across", "settle", "after")},
            "answered_by": {f"{ph}/{who}": n for (ph, who), n in sorted(served_by.items())},
            "survivor_metrics_answers_since_kill": delta,
            "errors": [f"{req['id']} {req['kind']} {results[req['id']]['phase']}: "
                       f"{results[req['id']]['detail'][:120]}" for req in reqs
                       if results.get(req["id"], {}).get("outcome") == "error"],
            "retried_by_nginx": sum(1 for res in results.values()
                                    if "," in (res.get("upstream") or "")),
            "nginx_errors": dict(collections.Counter(
                re.sub(r"^.*?\*\d+ ", "", line).split(",")[0]
                for line in nginx.log("error.log", 10**6).splitlines() if "[error]" in line)),
            "survivor_log_not_200": [line.strip() for line in by_port[survivor].log
                                     if line.startswith("fasa serve: ") and " 200 " not in line],
        }
        print(json.dumps(report, indent=2))
        ok = not problems
    finally:
        if nginx:
            if not ok:
                print("nginx error.log (tail):\n" + nginx.log("error.log"), file=sys.stderr)
                print("nginx access.log (tail):\n" + nginx.log("access.log"), file=sys.stderr)
            nginx.stop()
        for r in replicas:
            r.stop()
        if ok:
            shutil.rmtree(prefix, ignore_errors=True)
        else:
            print(f"nginx files kept in {prefix}", file=sys.stderr)
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    print(f"total {time.time() - t_start:.1f} s")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
