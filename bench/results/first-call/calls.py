"""Python calls made by the first memory.query() of a fresh process (issue 15): distinct functions and calls, each listed.

    python bench/results/first-call/calls.py TREE STORE META QUERY [total|run|compile]
"""
import collections, json, sys
tree, store, meta, name = sys.argv[1:5]
mode = sys.argv[5] if len(sys.argv) > 5 else "total"
sys.path[:0] = [tree]
from bench.baselines import QUERIES
import hgm_engine
from hgm_engine.query.pipeline import compile as compile_query
anchors = json.load(open(meta))["anchors"]
memory = hgm_engine.Memory.open(store)
text = QUERIES[name][0].format(**anchors)
counts = collections.Counter()
def prof(frame, event, arg):
    if event == "call":
        c = frame.f_code
        counts[(c.co_filename.replace(tree + "/", ""), c.co_firstlineno, c.co_qualname)] += 1
    elif event == "c_call":
        counts[("C", 0, getattr(arg, "__qualname__", str(arg)))] += 1
if mode == "run":
    with memory.view() as view:
        program = compile_query(text).program
        sys.setprofile(prof); program.run(view); sys.setprofile(None)
elif mode == "compile":
    sys.setprofile(prof); compile_query(text); sys.setprofile(None)
else:
    sys.setprofile(prof); memory.query(text).value; sys.setprofile(None)
py = {k: v for k, v in counts.items() if k[0] != "C"}
print(f"{name} {mode}: {len(py)} distinct Python functions, {sum(py.values())} calls; {len(counts)-len(py)} distinct C, {sum(counts.values())-sum(py.values())} C calls")
for k, v in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1])):
    print(f"{v:5d} {k[0]}:{k[1]} {k[2]}")
