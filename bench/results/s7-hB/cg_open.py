"""Reopen + one benchmark query in a fresh process, for instruction counts under callgrind:
``Memory.open`` and the first ``memory.query()`` run inside ``functools.reduce`` (counted alone
with ``--toggle-collect=functools_reduce``); imports are not counted.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \\
        --callgrind-out-file=OUT .venv/bin/python bench/results/s7-hB/cg_open.py TREE STORE META QUERY
    grep -m1 '^summary:' OUT   # (open only: QUERY "-")
"""
import functools
import gc
import json
import sys

tree, store, meta, name = sys.argv[1:5]
sys.path[:0] = [tree]
from bench.baselines import QUERIES  # noqa: E402

import hgm_engine  # noqa: E402

anchors = json.load(open(meta, encoding="utf-8"))["anchors"]
text = QUERIES[name][0].format(**anchors) if name != "-" else None


def step(_a, _b):
    memory = hgm_engine.Memory.open(store)
    if text is not None:
        memory.query(text).value
    return memory


gc.collect()  # the collector starts from empty generations: the same passes in every run
memory = functools.reduce(step, [0, 1])
memory.close()
