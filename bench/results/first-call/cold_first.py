"""First calls only (issue 15): a fresh process per (system, query), rounds interleaved, as
bench/peer_bench.py measures them (its ``_spawn``/``child``: import, open, one query), for hgm
from one or more source trees and SQLite; CPU medians and the ratios to SQLite.

    python bench/results/first-call/cold_first.py --graph-dir /tmp/i15f-g --repeat 3 \
        --trees "hgm=$PWD,before=/tmp/main" --out bench/results/first-call/first-call.json

The stores are peer_bench's (``peer-hgm-n100000-s0.db``, ``peer-sqlite-...``): run it once first.
``--tree-dirs "before=/tmp/g-before"``: a tree reads its hgm store from another directory (a
tree whose image format differs reads a store built by its own code; SQLite and the meta
stay the ``--graph-dir`` ones).
"""
import sys, json, pathlib, statistics, argparse
ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from bench import peer_bench, baselines
ap = argparse.ArgumentParser()
ap.add_argument('--repeat', type=int, default=3)
ap.add_argument('--trees', default='hgm=' + str(ROOT))
ap.add_argument('--queries', default='')
ap.add_argument('--graph-dir', default='/tmp/i15f-g')
ap.add_argument('--out', default='')
ap.add_argument('--tree-dirs', default='', help='name=dir,...: where a tree reads its hgm store')
a = ap.parse_args()
g = pathlib.Path(a.graph_dir)
meta = g / 'memory-v1-n100000-s0.meta.json'
trees = dict(t.split('=') for t in a.trees.split(','))
tree_dirs = {k: pathlib.Path(v) for k, v in (t.split('=') for t in a.tree_dirs.split(',') if t)}
systems = list(trees) + ['sqlite']
names = [q for q in a.queries.split(',') if q] or list(baselines.QUERIES)
res = {s: {q: [] for q in names} for s in systems}
for r in range(a.repeat):
    for q in names:
        for s in systems:
            sysname = 'hgm' if s in trees else s
            tree = pathlib.Path(trees.get(s, str(ROOT)))
            store = tree_dirs.get(s, g) / f'peer-{"hgm" if s in trees else s}-n100000-s0.db'
            res[s][q].append(peer_bench._spawn(sysname, store, meta, [q], tree))
med = statistics.median
print(f"{'query':16}" + ''.join(f"{s:>12}" for s in systems) + ''.join(f"{s+'/sql':>12}" for s in trees))
within = {s: 0 for s in trees}; within2 = {s: 0 for s in trees}
for q in names:
    v = {s: med(c['first'][q]['cpu'] for c in res[s][q]) * 1e3 for s in systems}
    for s in trees:
        within[s] += v[s] <= v['sqlite']; within2[s] += v[s] <= 2 * v['sqlite']
    print(f"{q:16}" + ''.join(f"{v[s]:12.2f}" for s in systems) + ''.join(f"{v[s]/v['sqlite']:12.2f}" for s in trees))
for s in systems:
    o = med(c['open']['cpu'] for q in names for c in res[s][q]) * 1e3
    i = med(c['import']['cpu'] for q in names for c in res[s][q]) * 1e3
    print(f"{s}: open cpu {o:.1f} ms, import cpu {i:.1f} ms")
for s in trees:
    print(f"{s}: <= sqlite on {within[s]}/{len(names)}, <= 2x on {within2[s]}/{len(names)}")
if a.out:
    import os
    report = {"command": "python bench/results/first-call/cold_first.py " + " ".join(sys.argv[1:]),
              "load_average_at_end": os.getloadavg(), "trees": trees, "tree_dirs": {k: str(v) for k, v in tree_dirs.items()},
              "runs": {s: {q: [{"first": c["first"][q], "open": c["open"], "import": c["import"]} for c in res[s][q]] for q in names} for s in systems}}
    pathlib.Path(a.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
