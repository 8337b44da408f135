"""Where a reopen + one query's CPU goes, one fresh process (cProfile, or stage timers).

    PYTHONPATH=TREE python bench/results/s7-hB/profile_reopen.py TREE DB META QUERY [prof|time]
"""
import cProfile
import json
import pstats
import sys
import time

sys.path[:0] = [sys.argv[1]]
import hgm_engine  # noqa: E402
from hgm_engine.store.sqlite import SQLiteStore  # noqa: E402
from bench.baselines import QUERIES  # noqa: E402

db, meta, query = sys.argv[2], sys.argv[3], sys.argv[4]
how = sys.argv[5] if len(sys.argv) > 5 else "time"
anchors = json.load(open(meta))["anchors"]
text = QUERIES[query][0].format(**anchors)
if how == "prof":
    prof = cProfile.Profile()
    prof.enable()
t0 = time.process_time()
memory = hgm_engine.Memory(store=SQLiteStore(db, create=False))
t1 = time.process_time()
memory.query(text)
t2 = time.process_time()
if how == "prof":
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(35)
print(json.dumps({"open": t1 - t0, "first": t2 - t1, "both": t2 - t0}))
