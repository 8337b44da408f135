"""Bytecodes executed per Python function in the first memory.query() of a fresh process (issue 15), or in one phase of it.

    python bench/results/first-call/bytecodes.py TREE STORE META QUERY [total|run|build|compile]   (STORE "-": an empty memory)
"""
import collections, json, sys
tree, store, meta, name = sys.argv[1:5]
mode = sys.argv[5] if len(sys.argv) > 5 else "total"
sys.path[:0] = [tree]
from bench.baselines import QUERIES
import hgm_engine
from hgm_engine.model import DEFAULT_SCHEMA
from hgm_engine.query.direct import direct_plan
from hgm_engine.query.executor import build
from hgm_engine.query.pipeline import compile as compile_query
anchors = json.load(open(meta))["anchors"]
memory = hgm_engine.Memory.open(store) if store != "-" else hgm_engine.Memory()
text = QUERIES[name][0].format(**anchors)
counts = collections.Counter()
def tr(frame, event, arg):
    frame.f_trace_opcodes = True
    frame.f_trace_lines = False
    if event == "opcode":
        c = frame.f_code
        counts[(c.co_filename.replace(tree + "/", ""), c.co_firstlineno, c.co_qualname)] += 1
    return tr
if mode == "run":
    with memory.view() as view:
        program = compile_query(text).program
        sys.settrace(tr); program.run(view); sys.settrace(None)
elif mode == "build":
    plan = direct_plan(text, DEFAULT_SCHEMA)
    sys.settrace(tr); build(plan); sys.settrace(None)
elif mode == "compile":
    sys.settrace(tr); compile_query(text); sys.settrace(None)
else:
    sys.settrace(tr); memory.query(text).value; sys.settrace(None)
print(f"{name} {mode}: {len(counts)} functions, {sum(counts.values())} bytecodes")
for k, v in sorted(counts.items(), key=lambda kv: -kv[1]):
    print(f"{v:6d} {k[0]}:{k[1]} {k[2]}")
