# Markdown rows of docs/notebook/speed/paper_scale.md (decode as one team) from team.jsonl: per model, load
# and build, the tokens/s of each round, the median, dispatches and barriers per token, wait share.
# Usage: python3 scripts/dev/results/team_table.py docs/notebook/speed/data/team_decode/team.jsonl
import json,statistics as st,sys
from collections import defaultdict
rows=[json.loads(l) for l in open(sys.argv[1])]
d=defaultdict(list); meta={}
for r in rows:
    m='SmolLM2-135M Q4_1, tg64' if 'smollm2' in r['model'] else 'Gemma 3 270M Q4_K_M, tg64' if 'gemma' in r['model'] else '8B shape Q4_K_M, tg16'
    d[(m,r['load'],r['binary'])].append(r)
for m in ['SmolLM2-135M Q4_1, tg64','Gemma 3 270M Q4_K_M, tg64','8B shape Q4_K_M, tg16']:
  for load in ['quiet','busy']:
    for b in ['regions','team']:
      rs=d[(m,load,b)]
      tps=[r['tokens_per_s'] for r in rs]
      print(f"| {m} | {load} | {b} | {' / '.join(f'{x:.1f}' if x>10 else f'{x:.2f}' for x in tps)} | {st.median(tps):.2f} | {rs[0]['parallel_dispatches_per_token']:.0f} | {rs[0].get('parallel_barriers_per_token', rs[0]['parallel_dispatches_per_token']):.0f} | {st.median([r['parallel_wait_share'] for r in rs]):.3f} |")
    # per round ratio
    rat=[t['tokens_per_s']/r['tokens_per_s'] for r,t in zip(d[(m,load,'regions')],d[(m,load,'team')])]
    print(f"|  | {load} | team / regions per round | {' / '.join(f'{x:.2f}' for x in rat)} | {st.median(rat):.2f} | | | |")
