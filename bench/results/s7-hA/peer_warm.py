"""hgm (TREE) and SQLite warm in one process as peer_bench measures them (every query run once
first, then interleaved batches); prints per-query medians and the median per-round ratio."""
import json, sys
tree = sys.argv[1]
sys.path[:0] = [tree, '/work/s7-hA']
from bench.baselines import QUERIES
from bench import peers, query_bench
from bench.peer_bench import HgmSystem
anchors = json.load(open('/tmp/b/peers/memory-v1-n100000-s0.meta.json'))['anchors']
h = HgmSystem(); h.open('/tmp/b/peers/peer-hgm-n100000-s0.db')
s = peers.PEERS['sqlite'](); s.open('/tmp/b/peers/peer-sqlite-n100000-s0.db')
names = sys.argv[2].split(',')
for q in QUERIES: h.run(q, anchors); s.run(q, anchors)
out = {}
for q in names:
    h.run(q, anchors); s.run(q, anchors)
    r = query_bench.measure({'hgm': lambda: h.run(q, anchors), 'sqlite': lambda: s.run(q, anchors)}, 9, 0.05)
    spread = query_bench.ratio_spread(r['hgm']['cpu_rounds'], r['sqlite']['cpu_rounds'])
    out[q] = {'hgm_us': r['hgm']['wall'] * 1e6, 'sqlite_us': r['sqlite']['wall'] * 1e6, 'cpu_ratio_median': spread['median']}
    print(f"{q:15s} hgm {r['hgm']['wall']*1e6:6.1f} sqlite {r['sqlite']['wall']*1e6:6.1f} cpu ratio per round {spread['median']:.3f}", flush=True)
if len(sys.argv) > 3:
    json.dump(out, open(sys.argv[3], 'w'), indent=1)
