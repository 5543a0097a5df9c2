"""Load test of `fasa serve` on loopback with the official OpenAI client.

C concurrent clients x R requests each (default 8 x 25), every request with its own prompt and a
KV policy and budget drawn from a mix. Greedy decoding, so every answer is known: the same
requests are first answered one at a time by a server with --parallel 1, then concurrently by
one with --parallel C (batched). Checks that every request is answered, none lost, each text
equal to the one-at-a-time answer, and the server's peak memory within
model + C x KV capacity + 256 MiB. Reports throughput (completion tokens/s) batched against
one at a time, peak RSS of both servers and the mean batch size.

    run_python_test.sh tests/server/load_test.py build/fasa [--clients 8] [--requests 25]
        [--max-tokens 16] [--ctx 512] [--calib CALIB.json] [--json OUT.json]
"""

import argparse
import concurrent.futures
import json
import os
import sys
import time

import openai

sys.path.insert(0, os.path.dirname(__file__))
from fasa_server import MODEL, Server, model_file  # noqa: E402

SUBJECTS = ["the sea", "a mountain village", "an old clock", "the first snow", "a lost key",
            "the city at night", "a quiet library", "a long train journey", "the garden",
            "a letter from home"]
KV_BYTES_PER_TOKEN = 30 * 3 * 64 * 2 * 2  # SmolLM2-135M: layers x kv heads x dim x (K, V) x f16


def policy_mix(calib):
    mix = [None,  # the server's default (full)
           {"policy": "streaming", "budget": 16},
           {"policy": "oracle", "budget": 32},
           {"policy": "h2o", "budget": 32},
           {"policy": "snapkv", "budget": 24},
           {"policy": "quest", "budget": 32},
           {"policy": "sparq", "budget": 16},
           {"policy": "streaming", "budget": 64, "sinks": 4}]
    if calib:  # the server was started with --calib
        mix += [{"policy": "fasa", "budget": 16}, {"policy": "fasa", "budget": 0.25},
                {"policy": "double-sparsity", "budget": 32}]
    return mix


def make_requests(n, calib):
    mix = policy_mix(calib)
    reqs = []
    for i in range(n):
        subject = SUBJECTS[i % len(SUBJECTS)]
        prompt = f"Request {i}. Write two sentences about {subject}, and number them."
        reqs.append({"id": i, "prompt": prompt, "fasa": mix[i % len(mix)]})
    return reqs


def ask(client, req, max_tokens):
    extra = {"fasa": req["fasa"]} if req["fasa"] else None
    r = client.completions.create(model=MODEL, prompt=req["prompt"], max_tokens=max_tokens,
                                  temperature=0, extra_body=extra)
    return r.choices[0].text, r.usage.completion_tokens, r.model_extra["fasa"]["policy"]


def serve(fasa, parallel, args):
    extra = ["--calib", args.calib] if args.calib else []
    return Server(fasa, "--parallel", str(parallel), "--queue", "256", "--ctx", str(args.ctx),
                  "--max-tokens", str(args.max_tokens), *extra, threads=args.threads)


def one_at_a_time(fasa, reqs, args):
    with serve(fasa, 1, args) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0, timeout=600)
        t0 = time.time()
        out = {r["id"]: ask(client, r, args.max_tokens) for r in reqs}
        wall = time.time() - t0
        return out, wall, srv.peak_rss_bytes(), srv.metrics()


def batched(fasa, reqs, args):
    with serve(fasa, args.clients, args) as srv:
        def client_loop(mine):
            client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0,
                                   timeout=600)
            return {r["id"]: ask(client, r, args.max_tokens) for r in mine}
        shards = [reqs[c::args.clients] for c in range(args.clients)]
        t0 = time.time()
        out = {}
        with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
            for part in pool.map(client_loop, shards):
                out.update(part)
        wall = time.time() - t0
        return out, wall, srv.peak_rss_bytes(), srv.metrics()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fasa")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=25, help="per client")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calib", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    reqs = make_requests(args.clients * args.requests, args.calib)
    ref, wall1, rss1, _ = one_at_a_time(args.fasa, reqs, args)
    got, wall8, rss8, metrics = batched(args.fasa, reqs, args)

    problems = []
    if len(got) != len(reqs):
        problems.append(f"{len(reqs) - len(got)} requests lost")
    wrong = [i for i in ref if got.get(i) != ref[i]]
    if wrong:
        problems.append(f"{len(wrong)} answers differ from one-at-a-time, e.g. request "
                        f"{wrong[0]}: {got.get(wrong[0])!r} vs {ref[wrong[0]]!r}")
    model_bytes = os.path.getsize(model_file(args.fasa))
    bound = model_bytes + args.clients * args.ctx * KV_BYTES_PER_TOKEN + (256 << 20)
    if rss8 > bound:
        problems.append(f"peak RSS {rss8} B above the bound {bound} B")
    tokens = sum(v[1] for v in ref.values())
    steps = metrics.get("fasa_batch_steps_total", 0)
    report = {
        "model": MODEL, "clients": args.clients, "requests": len(reqs),
        "max_tokens": args.max_tokens, "ctx": args.ctx, "threads": args.threads,
        "policies": sorted({v[2].split(":")[0] for v in ref.values()}),
        "completion_tokens": tokens,
        "one_at_a_time": {"wall_s": round(wall1, 2), "tokens_per_s": round(tokens / wall1, 1),
                          "peak_rss_mib": round(rss1 / 2**20, 1)},
        "batched": {"wall_s": round(wall8, 2), "tokens_per_s": round(tokens / wall8, 1),
                    "peak_rss_mib": round(rss8 / 2**20, 1),
                    "mean_batch": round(metrics.get("fasa_batch_sequences_total", 0)
                                        / max(steps, 1), 2)},
        "speedup": round(wall1 / wall8, 2),
        "peak_rss_bound_mib": round(bound / 2**20, 1),
        "all_correct": not problems,
    }
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
