"""Build a benchmark store with one source tree's own code (peer_bench's HgmSystem.build).

    PYTHONPATH=TREE python bench/results/s4-h2/build.py TREE OUT.db [GRAPH.json]
"""
import json
import sys
import time

sys.path[:0] = [sys.argv[1]]
from bench.peer_bench import HgmSystem  # noqa: E402

doc = json.load(open(sys.argv[3] if len(sys.argv) > 3 else "/tmp/i15f-g/memory-v1-n100000-s0.json"))
t = time.process_time()
HgmSystem.build(doc, sys.argv[2])
print("built", sys.argv[2], time.process_time() - t)
