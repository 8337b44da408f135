"""Per-find cost of a hop on a memory read from its image: best of 30 passes over the descendants
of the 100k seed-0 memory's big_root (g6676), the memo emptied each time.

    python bench/results/s4-h2/finds.py TREE STORE.db
"""
import sys, time
sys.path[:0] = [sys.argv[1]]
import hgm_engine
m = hgm_engine.Memory.open(sys.argv[2])
g = m.graph
ids = list(m.query("#g6676.descendants").ids) + ["g6676"]
best = 1e9
for r in range(30):
    g._hops.clear(); g._out.clear()
    memo, find = g.hop_memo("parent_of", None, True)
    t = time.thread_time_ns()
    for i in ids:
        find(i)
    best = min(best, time.thread_time_ns() - t)
print(f"{best/len(ids):.0f} ns per find")
