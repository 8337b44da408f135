"""CPU of decode_image on a SQLite memory's stored image, five times in this process, as the
open runs it (under bulk_allocation). ``TREE``: the hgm source tree to measure (default: this
one), to compare two trees on one image in the same minutes.

    python bench/results/reopen-1m/decode_image_cpu.py /tmp/g/m1m.db [TREE]
"""
import pathlib
import sqlite3
import sys
import time

sys.path.insert(0, sys.argv[2] if len(sys.argv) > 2 else str(pathlib.Path(__file__).resolve().parents[3]))
from hgm_engine.model import bulk_allocation  # noqa: E402
from hgm_engine.store.image import decode_image  # noqa: E402

data = sqlite3.connect(sys.argv[1]).execute("SELECT data FROM state_image WHERE name = 'state'").fetchone()[0]
times = []
for _ in range(5):
    cpu = time.process_time()
    with bulk_allocation():
        image = decode_image(data)
    times.append(time.process_time() - cpu)
    del image
print(f"{len(data) / 1e6:.0f} MB image; decode_image CPU: " + " ".join(f"{t * 1e3:.0f}" for t in times) + " ms")
