"""The development measurement behind ``operators.GENERATE_AFTER`` (issue 15): what writing and
compiling a filter's loop costs, against what its closures cost more than the loop a node, on
conditions of our own (not the benchmark's queries), on a synthetic graph; the break-even is
the number of nodes after which the generated loop has paid for its compile.

    PYTHONPATH=. python bench/results/first-call/tiering.py

CPU time (``time.process_time``), best of 7 batches; the compile is timed warm (the
generator's own code already run), which makes the break-even smaller than a first call's.
"""
import sys, pathlib, time, statistics

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from hgm_engine.model import MemoryGraph  # noqa: E402
from hgm_engine.query.executor.conditions import condition_writer, interpreted  # noqa: E402
from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context  # noqa: E402
from hgm_engine.query import parse, analyze, plan  # noqa: E402
from hgm_engine.model import DEFAULT_SCHEMA  # noqa: E402

CONDITIONS = [
    "status = 'done'",
    "priority >= 3",
    "priority >= 2 and status != 'failed'",
    "type = 'action' and (owner = 'ann' or priority < 1)",
    "not tags contains 'x' and exists(children)",
]


def _condition(text):
    logical = plan(analyze(parse(f"nodes.where({text})"), DEFAULT_SCHEMA), DEFAULT_SCHEMA)
    return logical.branches[0].ops[0].condition


def _graph(n):
    g = MemoryGraph()
    for i in range(n):
        g.add_node(f"a{i}", "action", {"status": ("done", "failed", "pending")[i % 3], "priority": i % 5,
                                       "owner": ("ann", "bob")[i % 2], "tags": ("x",) if i % 4 == 0 else ()})
    return g


def _best(fn, repeat=7, number=200):
    times = []
    for _ in range(repeat):
        t = time.process_time()
        for _ in range(number):
            fn()
        times.append((time.process_time() - t) / number)
    return min(times)


def main():
    n = 1000
    g = _graph(n)
    ids = [f"a{i}" for i in range(n)]
    ctx = Context(g, {}, None, DEFAULT_LIMITS)
    # relative paths in conditions are compiled by the program; here a stand-in that runs none
    compile_path = lambda path: (lambda start, ctx: [])  # noqa: E731
    rows = []
    for text in CONDITIONS:
        cond = _condition(text)
        write = lambda: condition_writer(compile_path).id_filter(cond)  # noqa: E731
        write()
        compile_cost = _best(write, number=50)
        loop = write()
        test = interpreted(cond, compile_path)
        nodes = ctx.nodes
        closures = lambda: [i for i in ids if (m := nodes[i]) is not None and test(m, ctx)]  # noqa: E731
        assert closures() == loop(ids, ctx)
        per_gen = _best(lambda: loop(ids, ctx), number=20) / n
        per_int = _best(closures, number=20) / n
        even = compile_cost / max(per_int - per_gen, 1e-12)
        rows.append(even)
        print(f"{text:55} compile {compile_cost*1e6:7.1f} us  closures {per_int*1e9:6.0f} ns/node  "
              f"loop {per_gen*1e9:6.0f} ns/node  break-even {even:7.0f} nodes")
    print(f"median break-even: {statistics.median(rows):.0f} nodes")


if __name__ == "__main__":
    main()
