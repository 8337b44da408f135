import json, sys, time, gc
import pathlib; sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3]))
from hgm_engine.store.graphfile import graph_from_document
from hgm_engine.store.image import encode_image
t = time.process_time()
doc = json.load(open("/tmp/s15/g1m/memory-v1-n1000000-s0.json"))
g = graph_from_document(doc)
del doc
print("built", time.process_time() - t, flush=True)
t = time.process_time()
data = encode_image(g, 1, 0)
print("encoded", time.process_time() - t, len(data) / 1e6, "MB", flush=True)
open("/tmp/s15/g1m/image.bin", "wb").write(data)
