"""Per-find cost of five_steps' related_entities hops (both directions, to entities) over its 2,847 facts on a memory read from its image: the first pass and the best of 10.\n\n    python bench/results/s4-h2/finds2.py TREE STORE.db\n"""
import sys, time
sys.path[:0] = [sys.argv[1]]
import hgm_engine
m = hgm_engine.Memory.open(sys.argv[2])
g = m.graph
ids = m.query("root.subgoals.actions.where(status = 'done').results.derived.where(type = 'fact')").ids
g._hops.clear(); g._out.clear(); g._in.clear()
res = []
for r in range(10):
    g._hops.clear(); g._out.clear(); g._in.clear()
    om, of = g.hop_memo("related_to", "entity", True)
    im, inf = g.hop_memo("related_to", "entity", False)
    t = time.thread_time_ns()
    for i in ids:
        of(i); inf(i)
    res.append((time.thread_time_ns() - t) / (2 * len(ids)))
print(len(ids), "first pass", f"{res[0]:.0f}", "ns/find; best", f"{min(res):.0f}")
