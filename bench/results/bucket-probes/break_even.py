"""The break-even of a stored bucket (issue 15, fifth session): how many tests by position
(``model.graph._Positions``: the id's node, ``seq - base``, a bisection) cost what making the
set of the bucket's ids costs, per id in it — ``PROBES_PER_ID`` in ``hgm_engine/model/graph.py``.

    python bench/results/bucket-probes/break_even.py --db /tmp/s4/g/peer-hgm-n100000-s0.db

For every stored string bucket of at least 1,000 ids in the memory's image: CPU per test
(the bucket's own ids and as many ids of other nodes of the type, alternating: half the tests
hold) and CPU per id of ``frozenset(map(ids.__getitem__, positions))``; medians of 15 rounds.
The ratio is build / test: a bucket is worth making into a set after that many tests per id.
"""
import argparse, json, statistics, sys, time, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3]))
import hgm_engine
from hgm_engine.model import graph as graph_module

ap = argparse.ArgumentParser()
ap.add_argument("--db", default="/tmp/s4/g/peer-hgm-n100000-s0.db")
ap.add_argument("--rounds", type=int, default=15)
ap.add_argument("--out", default="")
a = ap.parse_args()
memory = hgm_engine.Memory.open(a.db)
g = memory.graph
assert g._stored_values is not None, "the memory was not read from its image"
T = time.process_time
rows = []
for (node_type, attribute), buckets in g._stored_values.items():
    of_type = list(g.ids_of_type(node_type))
    for value, positions in buckets.items():
        if len(positions) < 1000:
            continue
        ids = g._stored_ids
        inside = [ids[p] for p in positions]
        outside = [i for i in of_type if i not in set(inside)][: len(inside)]
        probes = [x for pair in zip(inside, outside) for x in pair]
        test, build = [], []
        for _ in range(a.rounds):
            container = graph_module._Positions(g._position, positions, {}, node_type, ids, g._nodes, g._seq_base)
            container.left = len(probes) + 1  # never makes its set here
            started = T()
            for i in probes:
                i in container
            test.append((T() - started) / len(probes))
            started = T()
            frozenset(map(ids.__getitem__, positions))
            build.append((T() - started) / len(positions))
        t, b = statistics.median(test), statistics.median(build)
        rows.append({"bucket": f"{node_type}.{attribute} = {value!r}", "ids": len(positions), "test_us": t * 1e6, "build_us_per_id": b * 1e6, "ratio": b / t})
        print(f"{rows[-1]['bucket']:40} {len(positions):7} test {t*1e6:.3f} us, build {b*1e6:.3f} us/id, ratio {b/t:.3f}")
ratio = statistics.median(r["ratio"] for r in rows)
print(f"median ratio (tests per id that cost the set): {ratio:.3f}")
if a.out:
    pathlib.Path(a.out).write_text(json.dumps({"command": "python bench/results/bucket-probes/break_even.py " + " ".join(sys.argv[1:]),
                                               "rows": rows, "median_ratio": ratio}, indent=1) + "\n", encoding="utf-8")
