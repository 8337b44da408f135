"""The worst single query within the default limits (issue 12): time and memory.

Adversarial queries — regular expressions at the shape and size limits, nesting at the depth
limit, unions and chains at the length limit, repetition ``{1,}`` over the whole graph,
``paths()`` on a deep chain — run one by one, each in a fresh subprocess, on a memory of a
few thousand nodes built to be hard for them: a chain of goals (deep), two actions under each
(wide), ``before`` and ``related_to`` edges between them (``both()`` reaches everything), and
every node's content 200 characters that nearly match the regular expressions.

Each query runs under ``hgm_engine.DEFAULT_LIMITS`` (``Memory()``'s) and either answers or is
stopped by a limit; both count. For each: wall and CPU time of compile + run
(``time.perf_counter``, ``time.process_time``), how it ended, and the memory it took: the
growth of the process's peak resident set while it ran (``VmHWM`` of ``/proc/self/status``,
reset through ``/proc/self/clear_refs`` after the graph is built; ``tracemalloc`` is not used,
it would slow the query down several times).

    python bench/worst_query.py --out bench/results/worst_query.json
    python bench/worst_query.py --nodes 3000 --only regex-polynomial,paths-deep-chain

``measure(name, nodes)`` runs one query in this process (the smoke test uses it).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import hgm_engine  # noqa: E402
from hgm_engine import HGMError, Memory  # noqa: E402
from hgm_engine.query import DEFAULT_LIMITS  # noqa: E402
from bench.progress import tracked  # noqa: E402

__all__ = ["QUERIES", "graph_document", "measure", "main"]

CONTENT = "a" * 199 + "!"


def graph_document(nodes: int) -> dict[str, Any]:
    """A memory of about ``nodes`` nodes: a chain of nodes/3 goals, two actions under each."""
    goals = max(2, nodes // 3)
    doc_nodes, edges = [], []
    for i in range(goals):
        doc_nodes.append({"id": f"g{i}", "type": "goal", "content": CONTENT, "status": "active"})
        if i:
            edges.append({"from": f"g{i - 1}", "to": f"g{i}", "type": "parent_of"})
        for k in range(2):
            action = f"a{i}_{k}"
            doc_nodes.append({"id": action, "type": "action", "content": CONTENT, "status": "done" if k else "pending"})
            edges.append({"from": f"g{i}", "to": action, "type": "parent_of"})
        edges.append({"from": f"a{i}_0", "to": f"a{i}_1", "type": "before"})
        if i:
            edges.append({"from": f"a{i - 1}_1", "to": f"a{i}_0", "type": "related_to"})
    return {"format": "hgm-graph/1", "nodes": doc_nodes, "edges": edges}


def _fill(unit: str, head: str = "", tail: str = "", sep: str = "") -> str:
    """``head + unit (sep unit)* + tail`` as long as the default max_length allows."""
    room = DEFAULT_LIMITS.max_length - len(head) - len(tail)
    count = (room + len(sep)) // (len(unit) + len(sep))
    return head + sep.join([unit] * count) + tail


def _nested(levels: int) -> str:
    return "exists(descendants.where(" * levels + "status = 'done'" + "))" * levels


def _queries() -> dict[str, str]:
    depth = DEFAULT_LIMITS.max_depth
    unbounded = DEFAULT_LIMITS.max_regex_unbounded
    return {
        # regular expressions: polynomial backtracking at the unbounded-quantifier limit, on
        # every node (each match is cut at regex_timeout, all of them at regex_budget)
        "regex-polynomial": "nodes.where(content =~ '" + "a.*" * unbounded + "b')",
        # the largest pattern the size limit lets through, compiled and matched on every node
        "regex-largest": "nodes.where(content =~ '[a!]{" + str(DEFAULT_LIMITS.max_regex_size - 2) + "}')",
        # as many patterns as the size budget allows, in one query
        "regex-many": _fill("content =~ 'a{99}b'", "nodes.where(", ")", " or "),
        # nesting at the depth limit: exists(descendants.where(...)) per two levels, from every node
        "nested-exists": "nodes.where(" + _nested((depth - 1) // 2) + ")",
        "nested-count": "nodes.where(" + "count(descendants.where(" * ((depth - 1) // 3) + "ok" + ")) > 0" * ((depth - 1) // 3) + ")",
        # repetition {1,}: from every node, everything both() reaches
        "repeat-both": "nodes.both(){1,}",
        "repeat-both-sorted": "nodes.both(){1,}.sort_by(content)",
        "ancestors-of-descendants": "nodes.where(count(descendants.where(count(ancestors) > 0)) > 0)",
        # paths(): walks on a deep chain (quadratic in its length), and from every node
        "paths-deep-chain": "root.descendants.paths()",
        "paths-everywhere": "nodes.both(){1,}.paths()",
        # the length limit: a union of as many branches as fit, each reading a whole subtree
        "union-max-length": _fill("#g1.descendants", sep=" | "),
        "union-ids-max-length": _fill("#g1", sep="|"),
        "chain-max-length": _fill(".children.where(status = 'done')", "root"),
        "wide-or-max-length": _fill("x = 1", "nodes.where(", ")", " or "),
    }


QUERIES = _queries()


def _status() -> dict[str, int]:
    text = pathlib.Path("/proc/self/status").read_text()
    return {key: int(re.search(rf"{key}:\s+(\d+)", text).group(1)) * 1024 for key in ("VmHWM", "VmRSS")}


def _reset_peak() -> bool:
    try:
        pathlib.Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def measure(name: str, nodes: int, text: str | None = None) -> dict[str, Any]:
    """Build the graph, then compile and run query ``name`` once; what it cost and how it ended."""
    text = QUERIES[name] if text is None else text
    memory = Memory.from_document(graph_document(nodes))
    gc.collect()
    peak_reset = _reset_peak()
    before = _status()
    wall, cpu = time.perf_counter(), time.process_time()
    outcome: dict[str, Any]
    try:
        compiled_at = time.perf_counter()
        memory.compile(text)
        compiled = time.perf_counter() - compiled_at
        result = memory.query(text)
        size = len(result.value) if isinstance(result.value, list) else result.value
        held = sum(len(walk) for walk in result.value) if result.kind == "paths" else None
        outcome = {"ended": "answered", "kind": result.kind, "size": size, "ids_in_walks": held}
    except HGMError as err:
        compiled = None
        outcome = {"ended": err.category, "message": err.message}
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = _status()
    return {
        "query": name,
        "text": text if len(text) <= 200 else text[:200] + f"... ({len(text):,} characters)",
        "length": len(text),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "compile_s": None if compiled is None else round(compiled, 3),
        "peak_growth_mb": round((after["VmHWM"] - before["VmRSS"]) / 1e6, 1) if peak_reset else None,
        "rss_before_mb": round(before["VmRSS"] / 1e6, 1),
        **outcome,
    }


def _in_subprocess(name: str, nodes: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", name, "--nodes", str(nodes)],
        capture_output=True, text=True, cwd=ROOT, timeout=900,
    )
    if done.returncode != 0:
        return {"query": name, "ended": "crashed", "stderr": done.stderr[-2000:]}
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=3000)
    parser.add_argument("--only", help="comma-separated query names")
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child, args.nodes)))
        return 0
    names = args.only.split(",") if args.only else list(QUERIES)
    rows = []
    for name in tracked(names, "queries"):
        row = _in_subprocess(name, args.nodes)
        rows.append(row)
        print(
            f"{name:26} {row.get('wall_s', '-'):>8} s  {row.get('peak_growth_mb', '-'):>8} MB  "
            f"{row.get('ended')}: {row.get('message', row.get('size', ''))}",
            flush=True,
        )
    worst_time = max(rows, key=lambda r: r.get("wall_s") or 0)
    worst_memory = max(rows, key=lambda r: r.get("peak_growth_mb") or 0)
    report = {
        "what": "worst single query within hgm_engine.DEFAULT_LIMITS (bench/worst_query.py)",
        "command": "python bench/worst_query.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "nodes": len(graph_document(args.nodes)["nodes"]),
        "limits": repr(DEFAULT_LIMITS),
        "worst_time": {"query": worst_time["query"], "wall_s": worst_time.get("wall_s")},
        "worst_memory": {"query": worst_memory["query"], "peak_growth_mb": worst_memory.get("peak_growth_mb")},
        "queries": rows,
        "environment": {
            "hgm": hgm_engine.__version__,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
        },
    }
    print(f"worst time: {worst_time['query']} {worst_time.get('wall_s')} s; "
          f"worst memory: {worst_memory['query']} {worst_memory.get('peak_growth_mb')} MB")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
