# Tables of README.md from the JSONL: python3 summary.py DIR
import json, statistics, sys, os
d = sys.argv[1]
for name in [n for n in ['smollm2', 'gemma3', 'llama8b_shaped'] if os.path.exists(os.path.join(d, n + '.jsonl'))]:
    rows = [json.loads(l) for l in open(os.path.join(d, name + '.jsonl'))]
    by = {}
    for r in rows: by.setdefault(r['binary'], []).append(r)
    ratios = []
    rounds = sorted({r['round'] for r in rows})
    for rd in rounds:
        b = [r for r in by['before'] if r['round'] == rd]
        a = [r for r in by.get('after', []) if r['round'] == rd]
        if a and b: ratios.append(a[0]['tokens_per_s'] / b[0]['tokens_per_s'])
    for k in ['before', 'after']:
        rs = by.get(k, [])
        if not rs: continue
        tps = [r['tokens_per_s'] for r in rs]
        print(f"| {name} | {k} | {statistics.median(tps):.2f} ({', '.join(f'{t:.2f}' for t in tps)}) | "
              f"{rs[0]['parallel_dispatches_per_token']:.0f} | "
              f"{statistics.median(r['parallel_wait_share'] for r in rs):.3f} | "
              f"{statistics.median(r.get('parallel_wall_share', float('nan')) for r in rs):.3f} |")
    print(f"| {name} | after / before per round | {', '.join(f'{x:.2f}' for x in ratios)} (median {statistics.median(ratios):.2f}) | | | |")
