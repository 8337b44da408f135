import sys, time
import pathlib; sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3]))
import hgm_engine, gc
from hgm_engine.model import bulk_allocation
from hgm_engine.store.image import decode_image
cpu = time.process_time()
data = open("/tmp/s15/g1m/image.bin", "rb").read()
read = time.process_time()
with bulk_allocation():
    image = decode_image(data)
done = time.process_time()
g = image.graph
print(f"read {read-cpu:.3f} s, decode {done-read:.3f} s, nodes {len(g)}, edges {g.edge_count}")
t = time.process_time(); r = g.roots(); print(f"roots {time.process_time()-t:.3f} s", len(r))
