import json, sys, statistics as st
files = sys.argv[1:]
qs = None; pairs = {}; vals = {}
for f in files:
    try: d = json.load(open(f))
    except Exception: continue
    runs = d['runs']
    for q in runs['hgm']:
        for a, b, s in zip(runs['hgm'][q], runs['before'][q], runs['sqlite'][q]):
            h, bf, sq = a['first']['cpu'], b['first']['cpu'], s['first']['cpu']
            pairs.setdefault(q, []).append((h / bf, h / sq, bf / sq))
            vals.setdefault(q, []).append((h, bf, sq))
print(f"{'query':15} {'n':>3} {'hgm ms':>7} {'bef ms':>7} {'sql ms':>7} {'hgm/bef':>8} {'hgm/sql':>8} {'bef/sql':>8}  (medians of per-round values)")
for q, p in pairs.items():
    v = vals[q]
    print(f"{q:15} {len(p):3} {st.median(x[0] for x in v)*1e3:7.2f} {st.median(x[1] for x in v)*1e3:7.2f} {st.median(x[2] for x in v)*1e3:7.2f} {st.median(x[0] for x in p):8.2f} {st.median(x[1] for x in p):8.2f} {st.median(x[2] for x in p):8.2f}")
