"""CPU of a reopen's parts, one fresh process: ``Memory(store=SQLiteStore(DB))`` with the
store's init, ``_load_image``, ``decode_image``, ``lazy_nodes`` and ``from_columns`` timed
(the rest of decode_image: the blob read, CRCs, marshal), and the page faults.

    PYTHONPATH=TREE python bench/results/s7-hB/open_parts.py TREE DB
"""
import json
import resource
import sys
import time

sys.path.insert(0, sys.argv[1])
import hgm_engine  # noqa: E402
from hgm_engine.model import MemoryGraph  # noqa: E402
from hgm_engine.store import image as im  # noqa: E402
from hgm_engine.store import sqlite as sq  # noqa: E402

T: dict = {}


def wrap(obj, name, label, static=False):
    f = getattr(obj, name)

    def w(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            T[label] = T.get(label, 0) + time.process_time() - t
    setattr(obj, name, classmethod(lambda cls, *a, **k: w(*a, **k)) if static else w)


wrap(sq.SQLiteStore, "__init__", "store init")
wrap(sq.SQLiteStore, "_load_image", "_load_image")
wrap(sq, "decode_image", "decode_image")
wrap(im, "lazy_nodes", "lazy_nodes")
wrap(MemoryGraph, "from_columns", "from_columns", static=True)
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.process_time()
m = hgm_engine.Memory(store=sq.SQLiteStore(sys.argv[2], create=False))
T["total"] = time.process_time() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
out = {k: round(v * 1e3, 1) for k, v in T.items()}
out["sys"] = round((r1.ru_stime - r0.ru_stime) * 1e3, 1)
out["faults"] = r1.ru_minflt - r0.ru_minflt
print(json.dumps(out))
