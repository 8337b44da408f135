"""decode_image's stages, CPU ms, one process, median of N (the image read from DB once).

    PYTHONPATH=TREE python bench/results/s7-hB/stages.py DB [N]
"""
import gc
import marshal
import operator
import sqlite3
import statistics
import sys
import time
import zlib
from itertools import islice

import rustworkx as rx
from hgm_engine.model import lazy_nodes
from hgm_engine.store import image as im

db, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
times = {}
def lap(name, t):
    now = time.process_time()
    times.setdefault(name, []).append((now - t) * 1e3)
    return now
gc.disable()
for _ in range(n):
    t = time.process_time()
    data = con.execute("SELECT data FROM state_image WHERE name='state'").fetchone()[0]
    t = lap("select", t)
    zlib.crc32(data)
    t = lap("crc", t)
    columns = marshal.loads(memoryview(data)[im._HEADER.size:])
    t = lap("marshal", t)
    ids, group_data, node_types, node_seqs, node_raws, edge_type_names, *arrays, edge_raws, last_seq, value_data, root_data, number_data = columns
    groups = {name: im._array("i", d) for name, d in group_data.items()}
    type_codes = im._array("i", node_types)
    types = list(map(list(groups).__getitem__, type_codes))
    t = lap("types", t)
    nodes = lazy_nodes(ids, types, node_raws, node_seqs)
    t = lap("lazy_nodes", t)
    g = rx.PyDiGraph(multigraph=True); g.add_nodes_from(nodes)
    t = lap("rx nodes", t)
    d = dict(zip(ids, nodes))
    t = lap("id->node", t)
    all(map(operator.lt, node_seqs, islice(node_seqs, 1, None)))
    t = lap("seqs ascend", t)
    max(node_seqs)
    t = lap("max seq", t)
    arrs = [im._array(k, a) for k, a in zip("iiiqiiii", arrays)]
    t = lap("edge arrays", t)
    del columns, ids, nodes, d, g, node_raws, edge_raws, data, arrs
    gc.collect()
for k, v in times.items():
    print(f"{k:12s} {statistics.median(v):7.1f} ms")
print(f"{'total':12s} {sum(statistics.median(v) for v in times.values()):7.1f} ms")
