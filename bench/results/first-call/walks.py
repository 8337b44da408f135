"""The development measurement behind ``operators.STORED_WALKS`` and ``operators.PROBE_SET_AFTER``
(issue 15): in fresh processes (import, open a stored 100k memory, then the one walk timed),
what a breadth-first walk of a one-type hop costs read from the stored columns by position
(``stored_levels``) and read through the hop's memo (``MemoryGraph.hop_memo``), on its first
call and on its second; and the same for one-type hops (not repeated) from one source and from many
(``stored_ends`` against the hop's memo); and what testing positions against a stored value index costs, by
bisection (a test) and by one pass over the bucket against a set (a bucket position).

Sources of our own, not the benchmark's anchors: the first 8 of every 10th goal (by id) with more than 100
descendants (``out(parent_of){1,}``) and every 500th action's ancestors (``in(parent_of){1,}``),
and one-type hops: ``both(related_to)`` to facts from every 1000th entity, ``out(parent_of)`` to
actions from 1, 10 and 25 goals (every 400th); every anchor of the benchmark left out.

    .venv/bin/python bench/results/first-call/walks.py /tmp/s4/g/peer-hgm-n100000-s0.db \\
        /tmp/i15f-g/memory-v1-n100000-s0.meta.json > bench/results/first-call/walks.txt

CPU time (``time.process_time``), median of 3 fresh processes per (source, way). The break-even
number of walks: what filling the memo costs more than a walk of the columns (first calls),
over what a walk of the columns costs more than one of the filled memo (second calls).
"""
import json, pathlib, statistics, subprocess, sys, time
from bisect import bisect_left

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))


def _memo_walk(g, source, edge_type, outgoing):
    memo, find = g.hop_memo(edge_type, None, outgoing)
    get = memo.get
    reached, level, out = {source}, [source], []
    while level:
        following = []
        for node_id in level:
            targets = get(node_id)
            if targets is None:
                targets = find(node_id)
            for other in targets:
                if other not in reached:
                    reached.add(other)
                    following.append(other)
        out.extend(following)
        level = following
    return out


def _memo_hop(ctx, sources, edge_type, node_type, direction):
    out = []
    for outgoing in ((True, False) if direction == "both" else (direction == "out",)):
        get, find = ctx.hop(edge_type, node_type, outgoing)
        for s in sources:
            targets = get(s)
            out.extend(targets if targets is not None else find(s))
    return out


def hop_child(store, way, sources, edge_type, node_type, direction):
    from hgm_engine import Memory
    from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context
    from hgm_engine.query.executor.operators import stored_ends

    memory = Memory.open(store)
    times = []
    with memory.view() as g:
        ctx = Context(g, {}, None, DEFAULT_LIMITS)
        node_type = None if node_type == "-" else node_type
        for _ in range(2):
            t = time.process_time()
            if way == "columns":
                found, ids = stored_ends(sources, ctx, edge_type, node_type, direction)
                out = list(map(ids.__getitem__, found))
            else:
                out = _memo_hop(ctx, sources, edge_type, node_type, direction)
            times.append(time.process_time() - t)
    memory.close()
    print(json.dumps({"times": times, "nodes": len(out)}))


def child(store, way, source, edge_type, outgoing):
    from hgm_engine import Memory
    from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context
    from hgm_engine.query.executor.operators import stored_levels

    memory = Memory.open(store)
    times = []
    with memory.view() as g:
        ctx = Context(g, {}, None, DEFAULT_LIMITS)
        for _ in range(2):
            t = time.process_time()
            if way == "columns":
                walked = stored_levels(source, ctx, edge_type, None, outgoing, 1, None)
            else:
                walked = _memo_walk(g, source, edge_type, outgoing)
            times.append(time.process_time() - t)
        if way == "probe":  # positions against the largest bucket of action status
            position = g.stored_columns()[1]
            candidates = [position(i) for i in walked][:2000]
            sizes = {v: len(g.stored_positions("action", "status", v)) for v in ("done", "pending", "failed")}
            positions = g.stored_positions("action", "status", max(sizes, key=sizes.get))
            t = time.process_time()
            size = len(positions)
            _ = [p for p in candidates if (i := bisect_left(positions, p)) < size and positions[i] == p]
            bisect = (time.process_time() - t) / max(1, len(candidates))
            positions = g.stored_positions("action", "status", min(sizes, key=sizes.get))
            t = time.process_time()
            inside = set(candidates).intersection(positions)
            _ = [p for p in candidates if p in inside]
            passed = (time.process_time() - t) / max(1, len(positions))
            times += [bisect, passed]
    memory.close()
    print(json.dumps({"times": times, "nodes": len(walked)}))


def _spawn(*args):
    out = subprocess.run([sys.executable, __file__, "--child", *map(str, args)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _spawn_hop(store, way, sources, edge_type, node_type, direction):
    out = subprocess.run([sys.executable, __file__, "--hop", store, way, ",".join(sources), edge_type, node_type or "-", direction],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(store, meta):
    from hgm_engine import Memory

    anchors = json.loads(pathlib.Path(meta).read_text(encoding="utf-8"))["anchors"]
    left_out = set(anchors.values())
    memory = Memory.open(store)
    with memory.view() as g:
        goals = sorted(i for i in g.ids_of_type("goal") if i not in left_out)[::10]
        walks = [(i, "parent_of", True) for i in goals if len(_memo_walk(g, i, "parent_of", True)) > 100][:8]
        actions = sorted(i for i in g.ids_of_type("action") if i not in left_out)[::500][:6]
        walks += [(i, "parent_of", False) for i in actions]
    memory.close()
    ratios, bisects, passes = [], [], []
    print(f"{'source':10} {'dir':4} {'nodes':>6} {'columns 1st':>12} {'memo 1st':>10} {'columns 2nd':>12} {'memo 2nd':>10} {'break-even':>11}")
    for source, edge_type, outgoing in walks:
        runs = {way: [_spawn(store, way, source, edge_type, outgoing) for _ in range(3)] for way in ("columns", "memo")}
        first = {way: statistics.median(r["times"][0] for r in rows) * 1e6 for way, rows in runs.items()}
        second = {way: statistics.median(r["times"][1] for r in rows) * 1e6 for way, rows in runs.items()}
        rent = second["columns"] - second["memo"]
        buy = first["memo"] - first["columns"]
        ratio = buy / rent if rent > 0 else float("inf")
        ratios.append(ratio)
        print(f"{source:10} {'out' if outgoing else 'in':4} {runs['memo'][0]['nodes']:6} {first['columns']:12.0f} "
              f"{first['memo']:10.0f} {second['columns']:12.0f} {second['memo']:10.0f} {ratio:11.1f}")
        if outgoing and runs["memo"][0]["nodes"] > 300:
            probe = _spawn(store, "probe", source, edge_type, outgoing)
            bisects.append(probe["times"][2] * 1e9)
            passes.append(probe["times"][3] * 1e9)
    print(f"median break-even: {statistics.median(ratios):.1f} walks (us, CPU; fresh process each)")
    # One-type hops (not repeated): from one source and from many
    memory = Memory.open(store)
    with memory.view() as g:
        entities = sorted(i for i in g.ids_of_type("entity") if i not in left_out)[::1000][:4]
        goals = sorted(i for i in g.ids_of_type("goal") if i not in left_out)
    memory.close()
    hops = [([e], "related_to", "fact", "both") for e in entities]
    hops += [(goals[k::400][:n], "parent_of", "action", "out") for k, n in ((1, 1), (2, 10), (3, 25))]
    hop_ratios = []
    print(f"{'sources':10} {'hop':22} {'nodes':>6} {'columns 1st':>12} {'memo 1st':>10} {'columns 2nd':>12} {'memo 2nd':>10} {'break-even':>11}")
    for sources, edge_type, node_type, direction in hops:
        runs = {way: [_spawn_hop(store, way, sources, edge_type, node_type, direction) for _ in range(3)] for way in ("columns", "memo")}
        first = {way: statistics.median(r["times"][0] for r in rows) * 1e6 for way, rows in runs.items()}
        second = {way: statistics.median(r["times"][1] for r in rows) * 1e6 for way, rows in runs.items()}
        rent, buy = second["columns"] - second["memo"], first["memo"] - first["columns"]
        ratio = buy / rent if rent > 0 else float("inf")
        hop_ratios.append(ratio)
        print(f"{len(sources):10} {direction + '(' + edge_type + ')':22} {runs['memo'][0]['nodes']:6} {first['columns']:12.0f} "
              f"{first['memo']:10.0f} {second['columns']:12.0f} {second['memo']:10.0f} {ratio:11.1f}")
    print(f"median break-even of hops: {statistics.median(hop_ratios):.1f} calls")
    if bisects:
        b, p = statistics.median(bisects), statistics.median(passes)
        print(f"first probe of positions: bisection {b:.0f} ns a test, a pass {p:.0f} ns a bucket position: "
              f"a bisection each while the bucket holds more than {b / p:.0f}x as many positions")


if __name__ == "__main__":
    if sys.argv[1] == "--hop":
        hop_child(sys.argv[2], sys.argv[3], sys.argv[4].split(","), sys.argv[5], sys.argv[6], sys.argv[7])
    elif sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6] == "True")
    else:
        main(sys.argv[1], sys.argv[2])
