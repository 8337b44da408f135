"""instructions of memory.query(TEXT) on STORE: mode warm (7th call) / hot (301st) / total (first) / run (program.run first); bench/results/s7-hA/cg_text.py with the store as an argument"""
import functools, json, sys
tree, store, mode, text = sys.argv[1:5]
sys.path[:0] = [tree]
import hgm_engine
from hgm_engine.query.pipeline import compile as compile_query
anchors = json.load(open('/tmp/b/peers/memory-v1-n100000-s0.meta.json'))["anchors"]
memory = hgm_engine.Memory.open(store)
text = text.format(**anchors)
if mode == "run":
    with memory.view() as view:
        program = compile_query(text).program
        functools.reduce(lambda a, b: program.run(view), [0, 1])
elif mode == "compile":
    functools.reduce(lambda a, b: compile_query(text), [0, 1])
else:
    for _ in range(6 if mode == "warm" else int(__import__("os").environ.get("HOT", "300")) if mode == "hot" else 0):
        memory.query(text).value
    functools.reduce(lambda a, b: memory.query(text).value, [0, 1])
memory.close()
