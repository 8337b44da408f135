import json, sys, time, gc
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
import hgm_engine
from bench import baselines
from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
P = "/tmp/i15f-g/memory-v1-n100000-s0"
memory = hgm_engine.Memory.from_file(P + ".json")
g = memory.graph
q = baselines.QUERIES["five_steps"][0]
for _ in range(20): memory.query(q)
ctx = Context(g, {}, None, DEFAULT_LIMITS)
gg, _ = ctx.hop("parent_of", "goal", True); ga, _ = ctx.hop("parent_of", "action", True)
subs = [x for r in g.roots() for x in (gg(r) or ())]
raw = [x for s in subs for x in (ga(s) or ())]
b = g.value_bucket("action", "status", "done")
# the same ids as fresh string objects made one after another (as the floor's ints are)
copies = [("%s" % x).encode().decode() for x in raw]
cb = {c: None for c in copies if c in b}
ints = list(range(100000, 100000 + len(raw)))
ib = {i: None for i, x in zip(ints, raw) if x in b}
# flush caches a little between runs by touching every node
def flush():
    s = 0
    for n in g.node_map().values(): s += n.seq
def t(fn):
    res = []
    for _ in range(9):
        flush(); gc.disable(); c = time.perf_counter(); fn(); res.append(time.perf_counter() - c); gc.enable()
    res.sort(); return round(res[4] * 1e6)
print(len(raw), "load-made ids", t(lambda: [i for i in raw if i in b]), "us;",
      "fresh consecutive copies", t(lambda: [i for i in copies if i in cb]), "us;",
      "consecutive ints", t(lambda: [i for i in ints if i in ib]), "us")
