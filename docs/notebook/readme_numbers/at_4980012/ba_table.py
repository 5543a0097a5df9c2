import json, sys, statistics, os, collections
d=sys.argv[1]
rows=collections.defaultdict(lambda: {'before':[], 'after':[]})
byt={}
for tag in ('before','after'):
    for l in open(os.path.join(d,tag+'.jsonl')):
        r=json.loads(l)
        k=(os.path.basename(r['model']).split('.')[0][:28], r['test'], r['depth'], r['policy'])
        rows[k][tag].append(r['tokens_per_s'])
        byt.setdefault(k,{})[tag]=r.get('kv_bytes_read_per_token')
print('| model | test | depth | policy | before t/s (median of 3) | after t/s | after / before | KV bytes read/token equal |')
print('| --- | --- | ---: | --- | ---: | ---: | ---: | --- |')
for k,v in rows.items():
    b=statistics.median(v['before']); a=statistics.median(v['after'])
    eq = 'yes' if byt[k].get('before')==byt[k].get('after') else f"no ({byt[k]})"
    print(f'| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {b:.2f} | {a:.2f} | {a/b:.3f} | {eq} |')
