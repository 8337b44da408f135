"""hgm against the memo floor at 100k, in one process, before and after the (action, status)
value index exists (failed_urgent builds it, as in the benchmark). CPU medians of 9
interleaved batches; the ratio is per batch pair. Run from the repository root:

    python bench/results/fair-floor-s5/with_index.py  # needs /tmp/perfg-f2 from query_bench.py
"""
import sys, json, time
sys.path.insert(0, ".")
from bench import baselines
import hgm_engine
path = "/tmp/perfg-f2/memory-v1-n100000-s0.json"
doc = json.load(open(path)); a = json.load(open(path.replace(".json", ".meta.json")))["anchors"]
m = hgm_engine.Memory.from_file(path); memo = baselines.RxMemo(doc)
qs = ("card", "project_pending", "five_steps")
def t(f, k):
    s = time.process_time()
    for _ in range(k): f()
    return (time.process_time() - s) / k * 1e3
def run(label):
    for q in qs:
        e = baselines.QUERIES[q][0].format(**a)
        assert m.query(e).value == getattr(memo, q)(a)[0]
        hs, fs = [], []
        for _ in range(9):
            hs.append(t(lambda: m.query(e), 10)); fs.append(t(lambda: getattr(memo, q)(a), 20))
        r = sorted(h / f for h, f in zip(hs, fs)); hs.sort(); fs.sort()
        print(label, q, "hgm %.2f ms floor %.2f ms ratio %.2f (q1-q3 %.2f-%.2f)" % (hs[4], fs[4], r[4], r[2], r[6]))
run("no index")
m.query("nodes.where(type = 'action', status = 'failed', priority >= 4)"); memo.failed_urgent(a)
run("index")
