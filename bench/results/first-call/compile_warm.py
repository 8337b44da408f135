"""Warm compile_uncached of the 12 benchmark queries (median of their best-of-5 means of 20), CPU:

    PYTHONPATH=TREE python bench/results/first-call/compile_warm.py LABEL
"""
import sys, time
import hgm_engine
from hgm_engine.query.pipeline import compile_uncached
from bench.baselines import QUERIES
texts = [t.format(big_root="g1", hub_entity="e1", small_entity="e2", mid_root="g2", chain_result="r1", chain_action="a1", deep_action="a2", first_action="a3") for t, _ in QUERIES.values()]
for t in texts: compile_uncached(t)
best = []
for t in texts:
    b = min((lambda: (s := time.process_time(), [compile_uncached(t) for _ in range(20)], (time.process_time() - s) / 20)[2])() for _ in range(5))
    best.append(b)
print(sys.argv[1], "median compile_uncached over the 12 queries: %.3f ms" % (sorted(best)[6] * 1e3))
