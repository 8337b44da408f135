"""The memo floor before (HEAD~ of this change, saved to /tmp/f2_old_baselines.py with
`git show a5f5f81:bench/baselines.py`) and after value-index membership, at 100k, one process,
before and after the (action, status) index exists. CPU medians of 7 batches."""
import sys, json, time, importlib.util
sys.path.insert(0, "bench"); sys.path.insert(0, ".")
from bench import baselines as new
spec = importlib.util.spec_from_file_location("oldb", "/tmp/f2_old_baselines.py"); old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
doc = json.load(open("/tmp/perfg-f2/memory-v1-n100000-s0.json"))
meta = json.load(open("/tmp/perfg-f2/memory-v1-n100000-s0.meta.json"))
a = meta["anchors"]
o, n = old.RxMemo(doc), new.RxMemo(doc)
for q in ("card", "project_pending", "five_steps"):
    getattr(o, q)(a); getattr(n, q)(a)
def t(f, k=20):
    s = time.process_time()
    for _ in range(k): f(a)
    return (time.process_time() - s) / k * 1e3
for label in ("before index", "after index"):
    for q in ("card", "project_pending", "five_steps"):
        ro, rn = [], []
        for _ in range(7):
            ro.append(t(getattr(o, q))); rn.append(t(getattr(n, q)))
        ro.sort(); rn.sort()
        print(label, q, "old %.3f ms new %.3f ms" % (ro[3], rn[3]), getattr(o, q)(a)[0] == getattr(n, q)(a)[0])
    o.failed_urgent(a); n.failed_urgent(a)
