"""The origin scenarios, end to end, offline and deterministic: ``hgm demo NAME [--db PATH]``.

- ``travel`` — plan a three-day Beijing trip with a hotel near Wangfujing; the Forbidden City
  is closed on Mondays; the plan is repaired by swapping days; the hotel constraint holds at
  every step (:mod:`planners.scenarios.travel`).
- ``orders`` — an order-status question, then a refund whose policy check times out; the
  failed path is rewritten (retry, then fallback); the rewrite-storm guard stops a path that
  keeps failing; a later similar request locates the working path
  (:mod:`planners.scenarios.orders`).
- ``research`` — compare three cloud providers' prices; the user corrects "compute instances
  only, no bandwidth fees"; the result path is rewritten with ``replaces``; a later similar
  request gets the corrected path first (:mod:`planners.scenarios.research`).

Each runs the HTN planner against simulated tools, prints a readable step log and the final
memory tree, and (with ``db``) leaves a SQLite store to query afterwards, with the run records
saved next to it (``PATH.runs.json``).

>>> import io
>>> out = io.StringIO()
>>> demo("travel", out=out)
0
>>> text = out.getvalue()
>>> "rewrote only the branch sights" in text and "end: done (success)" in text
True
>>> demo("nowhere", out=io.StringIO(), err=io.StringIO())
1
"""

from __future__ import annotations

import importlib
import json
import pathlib
import sys
from typing import Any, Callable, TextIO

from hgm_engine import HGMError, Memory
from hgm_engine.render import change_lines, result_lines, tree_lines

from planners.loop import RunRecord

__all__ = ["SCENARIOS", "demo", "play", "names"]

SCENARIOS = {
    "travel": "planners.scenarios.travel",
    "orders": "planners.scenarios.orders",
    "research": "planners.scenarios.research",
}


def names() -> list[str]:
    """The scenario names, in the order the documentation gives them.

    >>> names()
    ['travel', 'orders', 'research']
    """
    return list(SCENARIOS)


def _module(name: str) -> Any:
    return importlib.import_module(SCENARIOS[name])


def play(name: str, memory: Memory, say: Callable[[str], None] = lambda line: None) -> list[RunRecord]:
    """Run scenario ``name`` on ``memory`` (empty) and return its run records."""
    return _module(name).play(memory, say)


def _heading(write: Callable[[str], None], title: str, unicode: bool) -> None:
    write("")
    write(title)
    write(("─" if unicode else "-") * len(title))


def demo(
    name: str,
    *,
    db: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    unicode: bool = True,
) -> int:
    """Run scenario ``name`` and print its step log, final memory tree and a few queries.

    With ``db`` the memory is a SQLite file (it must be new or empty) left behind for
    ``hgm show/query/history --db``, and the run records are written to ``db + '.runs.json'``.
    Returns an exit code: 0, or 1 for an unknown name or an unusable ``db``.
    """
    out = out or sys.stdout
    err = err or sys.stderr

    def write(line: str = "") -> None:
        print(line, file=out)

    if name not in SCENARIOS:
        print(f"hgm demo: unknown scenario {name!r}; known: {', '.join(SCENARIOS)}", file=err)
        return 1
    module = _module(name)
    if db is not None:
        try:
            memory = Memory.open(db)
        except HGMError as exc:
            print(f"hgm demo: cannot open {db}: {exc}", file=err)
            return 1
        if memory.t != 0 or len(memory):
            memory.close()
            print(f"hgm demo: {db} already holds a memory (t={memory.t}); give a new path", file=err)
            return 1
    else:
        memory = Memory()
    try:
        where = db if db is not None else "in this process (use --db PATH to keep it)"
        write(f"hgm demo {name}: {module.TITLE}")
        write(f"(HTN planner and simulated tools: offline, deterministic; memory: {where})")
        _heading(write, "The run, step by step", unicode)
        try:
            records = module.play(memory, write)
        except RuntimeError as exc:  # the engine lacks what the scenario needs
            print(f"hgm demo {name}: {exc}", file=err)
            return 1
        db_flag = f" --db {db}" if db is not None else ""
        afterwards = getattr(module, "afterwards", None)  # what happens after the run (not in its record)
        if afterwards is not None:
            _heading(write, afterwards.__doc__.strip().splitlines()[0], unicode)
            afterwards(memory, write)

        repairs = [c for c in memory.commits()
                   if c.kind == "path-rewrite" or (c.reason or "").startswith("repair: re-enter") and "rewrite branch" in c.reason]
        for commit in repairs[:4]:
            _heading(write, f"What t={commit.t} changed  (hgm diff {commit.t - 1} {commit.t}{db_flag or ' --db PATH'})", unicode)
            write(commit.reason or "")
            for line in change_lines(memory.diff(commit.t - 1, commit.t), unicode=unicode):
                write("  " + line)

        _heading(write, f"The memory at the end  (hgm show{db_flag or ' --db PATH'})", unicode)
        for line in tree_lines(memory.graph, unicode=unicode):
            write(line)

        _heading(write, f"Asking it afterwards  (hgm query EXPR{db_flag or ' --db PATH'})", unicode)
        for number, entry in enumerate(module.QUERIES, 1):
            why, expr, params = entry if len(entry) == 3 else (*entry, None)
            write("")
            write(f"[{number}] {expr}" + (f"   params {json.dumps(params)}" if params else ""))
            write(f"    {why}")
            for line in result_lines(memory.query(expr, params=params), unicode=unicode):
                write("    " + line)

        _heading(write, "Summary", unicode)
        for record in records:
            write(f"{record.task.text}: {record.status}"
                  + (f" ({record.outcome})" if record.outcome else "")
                  + f", {len(record.steps)} steps, {record.calls} planner calls, "
                  f"{len(record.failed_steps)} failed steps, commits t={record.start_t + 1}..{record.end_t}")
        write(f"memory: t={memory.t}, {len(memory)} nodes, {len(memory.violations())} constraint violations")
        if db is not None:
            runs = pathlib.Path(str(db) + ".runs.json")
            runs.write_text(json.dumps([r.to_json() for r in records], indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            write(f"run records (hgm-run/1): {runs}")
            write(f"try: hgm show --db {db} --format html > {name}.html ; hgm history --db {db} ; hgm stale --db {db}")
        else:
            write(f"try: hgm demo {name} --db {name}.db, then hgm show --db {name}.db")
        return 0
    finally:
        memory.close()
