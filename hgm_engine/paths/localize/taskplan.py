"""Reading GNN4TaskPlan task-plan data (UltraTool, RestBench TMDB) as trajectories and paths.

A data set is a folder with ``data.json`` (JSON Lines: ``id``, ``user_request``,
``task_steps``, ``task_nodes``, ``task_links``), ``split_ids.json`` (held-out ids under
``test_ids``) and ``graph_desc.json`` (``nodes`` with an ``id`` and, in UltraTool, a list of
``domain`` s; ``links`` between tools). A request becomes a trajectory (formats.md): the goal
is the request, one step per task node — named for its tool, with the step texts that call it
as content — edges from ``task_links``, and the domains of its tools as tags.

Step texts and task nodes do not always pair up one to one (a tool may be called in several
step texts, a text may name no tool), so each text goes to the node whose tool it names
(``Call <tool>``); texts that name none stay with the step before them.

>>> row = {"id": 7, "user_request": "Cancel my 8 AM alarm, then set one for 9 AM.\\n",
...        "task_steps": ["Step 1 Call clock_alarm_cancel to cancel the 8 AM alarm",
...                       "Step 2 Call clock_alarm_set to set an alarm for 9 AM"],
...        "task_nodes": [{"task": "clock_alarm_cancel"}, {"task": "clock_alarm_set"}],
...        "task_links": [{"source": "clock_alarm_cancel", "target": "clock_alarm_set"}]}
>>> doc = request_to_trajectory(row, {"clock_alarm_set": ("Alarm",)})
>>> doc["goal"], [s["name"] for s in doc["steps"]], doc["edges"], doc["tags"]
('Cancel my 8 AM alarm, then set one for 9 AM.', ['clock_alarm_cancel', 'clock_alarm_set'], [[0, 1]], ['Alarm'])
>>> doc["steps"][0]["content"]
'Call clock_alarm_cancel to cancel the 8 AM alarm'
>>> gold_sequence(row)
('clock_alarm_cancel', 'clock_alarm_set')
"""

from __future__ import annotations

import json
import os
import pathlib
import re
from typing import Any, Iterable, Mapping, Sequence

from hgm_engine.paths.localize.embedders import normalize_words
from hgm_engine.errors import LocalizationError
from hgm_engine.paths.localize.records import PathRecord

__all__ = [
    "TaskPlanData",
    "load_taskplan",
    "find_taskplan_root",
    "request_to_trajectory",
    "request_to_record",
    "gold_sequence",
    "suggest_tags",
]

_STEP_PREFIX = re.compile(r"^\s*Step\s*\d+\s*[:.]?\s*", re.I)
_CALL = re.compile(r"\bCall\s+([A-Za-z_][A-Za-z0-9_]*)")


def gold_sequence(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The ordered tool names a request used (its ``task_nodes``)."""
    return tuple(node["task"] for node in row["task_nodes"])


def _step_contents(row: Mapping[str, Any]) -> list[str]:
    names = list(gold_sequence(row))
    texts = [_STEP_PREFIX.sub("", t).strip() for t in row.get("task_steps") or ()]
    by_node: list[list[str]] = [[] for _ in names]
    taken = [0] * len(names)   # how many texts each node got (to spread repeated tools)
    last = 0
    for text in texts:
        mentioned = _CALL.search(text)
        name = mentioned.group(1) if mentioned else None
        if name is None or name not in names:
            name = next((n for n in names if n in text), None)
        if name is None:
            by_node[last].append(text)
            continue
        occurrences = [i for i, n in enumerate(names) if n == name]
        # The j-th text for a tool used several times goes to its j-th node, extras to the last.
        fresh = [i for i in occurrences if taken[i] == 0 and i >= last] or [occurrences[-1]]
        target = fresh[0]
        by_node[target].append(text)
        taken[target] += 1
        last = target
    return [" ".join(parts) for parts in by_node]


def _edges(row: Mapping[str, Any], names: Sequence[str]) -> list[list[int]]:
    links = [(link["source"], link["target"]) for link in row.get("task_links") or ()]
    consecutive = list(zip(names, names[1:]))
    if links == consecutive or not links:
        return [[i, i + 1] for i in range(len(names) - 1)]
    first = {}
    for i, name in enumerate(names):
        first.setdefault(name, i)
    edges = {(first[s], first[t]) for s, t in links if s in first and t in first and first[s] != first[t]}
    return [list(e) for e in sorted(edges)]


def request_to_trajectory(row: Mapping[str, Any], domains: Mapping[str, Sequence[str]] | None = None
                          ) -> dict[str, Any]:
    """One request as a trajectory document (formats.md), tagged with its tools' domains."""
    try:
        names = list(gold_sequence(row))
        contents = _step_contents(row)
        goal = str(row["user_request"]).strip()
    except (KeyError, TypeError) as exc:
        raise LocalizationError.single("bad-data", f"malformed task-plan request: {exc}",
                                       where=str(row.get("id"))) from exc
    tags = sorted({d for name in names for d in (domains or {}).get(name, ())})
    doc: dict[str, Any] = {
        "id": str(row["id"]),
        "goal": goal,
        "steps": [{"name": n, "content": c} if c else {"name": n} for n, c in zip(names, contents)],
        "edges": _edges(row, names),
        "result": "success",
        "reward": 1.0,
    }
    if tags:
        doc["tags"] = tags
    return doc


def request_to_record(row: Mapping[str, Any], domains: Mapping[str, Sequence[str]] | None = None,
                      **overrides: Any) -> PathRecord:
    """One request as a :class:`PathRecord`."""
    return PathRecord.from_trajectory(request_to_trajectory(row, domains), **overrides)


def suggest_tags(text: str, vocabulary: Iterable[str]) -> list[str]:
    """Tags for a request from its words only: a tag is suggested when its own name (normalised
    the same way as the index's words) occurs in the text. Nothing about the answer is used.

    >>> suggest_tags("Book a flight and a hotel room", ["Flight", "Hotel", "Train"])
    ['Flight', 'Hotel']
    """
    words = {w for w in normalize_words(text) if w}
    chosen = []
    for tag in vocabulary:
        tag_words = [w for w in normalize_words(tag) if w]
        if tag_words and all(w in words for w in tag_words):
            chosen.append(tag)
    return sorted(chosen)


class TaskPlanData:
    """One data set folder: its requests, held-out ids and tool domains.

    Build with :func:`load_taskplan`.
    """

    def __init__(self, name: str, rows: list[dict[str, Any]], test_ids: list[str],
                 domains: dict[str, tuple[str, ...]]):
        self.name = name
        self.rows = rows
        self.test_ids = test_ids
        self.domains = domains

    @property
    def by_id(self) -> dict[str, dict[str, Any]]:
        return {str(r["id"]): r for r in self.rows}

    def memory_rows(self) -> list[dict[str, Any]]:
        """Every request not held out."""
        held_out = set(self.test_ids)
        return [r for r in self.rows if str(r["id"]) not in held_out]

    def test_rows(self) -> list[dict[str, Any]]:
        """The held-out requests, in split order."""
        by_id = self.by_id
        return [by_id[i] for i in self.test_ids if i in by_id]

    def records(self, rows: Iterable[Mapping[str, Any]] | None = None) -> list[PathRecord]:
        """Path records for ``rows`` (default: all requests), tagged with tool domains."""
        return [request_to_record(r, self.domains) for r in (self.rows if rows is None else rows)]

    @property
    def tag_vocabulary(self) -> list[str]:
        return sorted({d for ds in self.domains.values() for d in ds})


def find_taskplan_root(start: str | os.PathLike | None = None) -> pathlib.Path | None:
    """The ``taskplan`` data folder: ``$HGM_TASKPLAN_DATA``, else ``shared/data/taskplan``
    beside the repository (searched upwards from ``start`` or this file); None when absent."""
    env = os.environ.get("HGM_TASKPLAN_DATA")
    if env:
        path = pathlib.Path(env)
        return path if path.is_dir() else None
    here = pathlib.Path(start or __file__).resolve()
    for folder in [here, *here.parents]:
        candidate = folder / "shared" / "data" / "taskplan"
        if candidate.is_dir():
            return candidate
    return None


def load_taskplan(folder: str | os.PathLike) -> TaskPlanData:
    """Read one data set folder (``.../taskplan/ultratool``)."""
    root = pathlib.Path(folder)
    try:
        with open(root / "data.json", encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        for row in rows:
            row["id"] = str(row["id"])
        split_path = root / "split_ids.json"
        test_ids: list[str] = []
        if split_path.exists():
            split = json.loads(split_path.read_text(encoding="utf-8"))
            test_ids = [str(i) for i in split.get("test_ids", {}).get("chain", [])]
        domains: dict[str, tuple[str, ...]] = {}
        graph_path = root / "graph_desc.json"
        if graph_path.exists():
            graph = json.loads(graph_path.read_text(encoding="utf-8"))
            for node in graph.get("nodes", []):
                if node.get("domain"):
                    domains[str(node["id"])] = tuple(str(d) for d in node["domain"])
    except (OSError, ValueError, KeyError) as exc:
        raise LocalizationError.single("bad-data", f"cannot read task-plan data in {root}: {exc}") from exc
    return TaskPlanData(root.name, rows, test_ids, domains)
