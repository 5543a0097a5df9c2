"""`fasa serve` stops gracefully: on SIGTERM it drains (takes no new connection, answers what it
holds in full, then exits 0); a second signal stops it at once, cutting the stream visibly; a
stream cut short is logged as cut, by the server or by the client.

    python drain_test.py FASA_BINARY
"""

import http.client
import json
import signal
import socket
import sys
import time

import fasa_server

PROMPT = "Once upon a time, in a small village by the sea,"


def start_stream(port, max_tokens):
    """A streamed completion; returns the response once its head has arrived."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = {"model": fasa_server.MODEL, "prompt": PROMPT, "max_tokens": max_tokens,
            "temperature": 0, "stream": True}
    conn.request("POST", "/v1/completions", body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200, r.status
    return conn, r


def read_events(r):
    """(texts, finish_reason, saw_done, broken): the stream's events until it ends or breaks."""
    texts, finish, done, broken = [], None, False, False
    try:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                continue
            choice = json.loads(line[len("data: "):])["choices"][0]
            texts.append(choice["text"])
            finish = choice.get("finish_reason") or finish
    except (http.client.IncompleteRead, ConnectionError):
        broken = True
    return "".join(texts), finish, done, broken


def refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except ConnectionRefusedError:
        return True


def wait_exit(srv, seconds):
    deadline = time.time() + seconds
    while srv.proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    return srv.proc.poll()


def mid_stream(fasa, max_tokens, case, *server_args):
    """Starts a server and a stream on it, waits for the stream's first event, then runs
    case(srv, conn, response, first_event); the server is stopped in the end, whatever happens."""
    srv = fasa_server.Server(fasa, *server_args)
    try:
        conn, r = start_stream(srv.port, max_tokens)
        first = r.readline()  # the first event is out: the answer is under way
        assert first.startswith(b"data: "), first
        case(srv, conn, r, first)
    finally:
        srv.stop()


def drains(want):
    """SIGTERM mid-stream: the stream ends in full, new connections are refused, exit 0."""
    def case(srv, conn, r, first):
        t0 = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        got = read_events(r)
        text = json.loads(first.decode()[len("data: "):])["choices"][0]["text"] + got[0]
        assert (text, got[1], got[2], got[3]) == want, (text, got, want)
        assert refused(srv.port), "a new connection was accepted while draining"
        code = wait_exit(srv, 30)
        assert code == 0, f"exit {code}"
        log = "".join(srv.log)
        assert "SIGTERM received: draining" in log and "drained: every answer given" in log, log
        print(f"drain: the stream finished in full {time.time() - t0:.1f} s after SIGTERM; exit 0")
    return case


def second_signal(srv, conn, r, first):
    """A second signal stops at once: the stream is cut, and the client can tell."""
    srv.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    srv.proc.send_signal(signal.SIGINT)
    code = wait_exit(srv, 30)
    got = read_events(r)
    assert code == 0, f"exit {code}"
    assert not got[2] and got[1] is None, got  # no [DONE], no finish_reason: incomplete
    log = "".join(srv.log)
    assert "second stop signal" in log, log
    assert "stream cut: the server stopped" in log, log
    print("second signal: stopped at once, the stream ended without [DONE]")


def client_leaves(srv, conn, r, first):
    """A client that leaves mid-stream: its log line says the stream was cut, and by whom."""
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    deadline = time.time() + 30
    while "stream cut: the client closed the connection" not in "".join(srv.log):
        assert time.time() < deadline, "".join(srv.log)
        time.sleep(0.05)
    cut = srv.metrics().get('fasa_streams_cut_total{endpoint="/v1/completions",by="client"}')
    assert cut == 1, srv.metrics()
    print("client gone mid-stream: logged and counted as cut by the client")


def no_drain(srv, conn, r, first):
    """--drain-timeout 0: the old behaviour, stop at once."""
    srv.proc.send_signal(signal.SIGTERM)
    assert wait_exit(srv, 30) == 0
    got = read_events(r)
    assert not got[2], got
    assert "draining" not in "".join(srv.log)
    print("--drain-timeout 0: stopped at once")


def main():
    fasa = sys.argv[1]
    # The reference: the same stream from a server that is not stopped.
    with fasa_server.Server(fasa) as ref:
        _, r = start_stream(ref.port, 48)
        want = read_events(r)
    assert want[1] == "length" and want[2] and not want[3], want
    mid_stream(fasa, 48, drains(want))
    mid_stream(fasa, 1000, second_signal)
    mid_stream(fasa, 1000, client_leaves)
    mid_stream(fasa, 1000, no_drain, "--drain-timeout", "0")
    print("OK")


if __name__ == "__main__":
    main()
