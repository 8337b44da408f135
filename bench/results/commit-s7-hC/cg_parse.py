"""Instructions of ``parse_transaction`` alone over 50 of ``txn_bench.Workload``'s 10-op
documents for a 10k-node memory (issue 15, seventh session, second pass), after 20 warm-up
ones, collector off; TREE is the source tree whose hgm_engine runs, G a graph directory
(``bench/commit_stages.py``'s: its stored memory is copied, not written):

    PYTHONHASHSEED=0 valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \
        .venv/bin/python bench/results/commit-s7-hC/cg_parse.py TREE G     # "Collected" / 50
"""

import functools
import gc
import pathlib
import sys

tree, graph_dir = sys.argv[1], pathlib.Path(sys.argv[2])
sys.path[:0] = [tree, f"{tree}/bench"]
import commit_stages  # noqa: E402
import txn_bench  # noqa: E402
from hgm_engine.txn import parse_transaction  # noqa: E402

memory = commit_stages.open_copy(10_000, graph_dir)
workload = txn_bench.Workload(memory.graph, seed=0)
docs = [workload.next() for _ in range(70)]
for doc in docs[:20]:
    parse_transaction(doc)
gc.disable()
functools.reduce(lambda _, doc: parse_transaction(doc), docs[20:], None)
memory.close()
