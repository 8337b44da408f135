"""One benchmark query in a fresh process, for instruction counts under callgrind (issue 15):
the part measured runs inside ``functools.reduce`` (a C function called nowhere else on the
way), which callgrind's ``--toggle-collect`` counts alone; deterministic under load.

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \\
        --callgrind-out-file=OUT .venv/bin/python bench/results/first-call/cg_query.py \\
        TREE STORE META QUERY MODE
    grep -m1 '^summary:' OUT

MODE ``run``: import, open and compile untimed, then the program's first run; ``total``: the
first ``memory.query()`` (compile included); ``warm``: the seventh ``memory.query()``. TREE is
the source tree imported (its root goes first in ``sys.path``); STORE an hgm store, META the
generated memory's meta file (the anchors).
"""
import functools
import json
import sys

tree, store, meta, name, mode = sys.argv[1:6]
sys.path[:0] = [tree]
from bench.baselines import QUERIES  # noqa: E402

import hgm_engine  # noqa: E402
from hgm_engine.query.pipeline import compile as compile_query  # noqa: E402

anchors = json.load(open(meta, encoding="utf-8"))["anchors"]
memory = hgm_engine.Memory.open(store)
text = QUERIES[name][0].format(**anchors)
if mode == "run":
    with memory.view() as view:
        program = compile_query(text).program
        functools.reduce(lambda a, b: program.run(view), [0, 1])
else:
    for _ in range(6 if mode == "warm" else 0):
        memory.query(text).value
    functools.reduce(lambda a, b: memory.query(text).value, [0, 1])
memory.close()
