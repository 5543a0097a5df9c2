#!/usr/bin/env python3
"""/health under idle floods, two fasa binaries side by side: rounds A, B, A, B, ... of
server_abuse_rerun.health_under_idle_flood (ADDRESSES loopback addresses each holding PER idle
connections, reopened as the server closes them; a probe every 50 ms) against `fasa serve -m
MODEL --max-conns 64`. Prints one JSON object: every round's probes and statuses.

  python3 scripts/dev/results/health_flood_pair.py FASA_A FASA_B MODEL SECONDS ROUNDS [ADDRESSES PER]
"""
import collections, importlib.util, json, os, sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("rerun", os.path.join(here, "server_abuse_rerun.py"))
rerun = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rerun)


def one_round(fasa, model, seconds, addresses, per):
    srv = rerun.Server(fasa, ["-m", model, "--max-conns", "64"])
    statuses = collections.Counter()
    original = rerun.status_of

    def counting(resp):
        s = original(resp)
        statuses[s] += 1
        return s
    rerun.status_of = counting
    try:
        r = rerun.health_under_idle_flood(srv.port, seconds, addresses, per)
    finally:
        rerun.status_of = original
        srv.stop()
    r["statuses"] = {str(k): v for k, v in sorted(statuses.items())}
    return r


def main():
    a, b, model, seconds, rounds = sys.argv[1:6]
    addresses, per = (int(x) for x in (sys.argv[6:8] or (20, 10)))
    out = {"A": a, "B": b, "model": model, "rounds": []}
    for i in range(int(rounds)):
        for name, fasa in (("A", a), ("B", b)):
            r = one_round(fasa, model, float(seconds), addresses, per)
            r["binary"] = name
            out["rounds"].append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
