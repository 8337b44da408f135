"""The memory the tool-retrieval benchmark searches: tools as entities, past requests as goals.

One node per tool — an ``entity`` with ``name`` (the tool's id, ``clock_alarm_cancel``: the
text analysis cuts it at ``_``), ``description`` and its domains as ``tags`` — and one goal
per past request (``content``: the request's text), whose ``action`` children (``parent_of``
in step order, ``before`` between consecutive steps) carry the plan's step texts and are
``related_to`` the tool each step called. Step texts lose their ``Step N`` prefix.

The memory is built as one graph document loaded in one transaction (``Memory.load``); the
node index is kept by that commit like any other.

>>> from bench.toolret.data import Request, Tool
>>> tools = [Tool("send_sms", "SMS notification sending tool", ("Finance",))]
>>> past = [Request("7", "Text my landlord that rent is paid", ("Step 1 Call send_sms to text him",), ("send_sms",))]
>>> m = build_memory(tools, past)
>>> m.query("goal#g7.actions.related_entities").ids
['send_sms']
>>> m.query("action#a7-0").nodes[0]["content"]
'Call send_sms to text him'

Also a command, to keep a memory in a SQLite file and try ``hgm search`` on it::

    python -m bench.toolret.build --db /tmp/ultratool.db          # the test split's memory
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Iterable, Sequence

from hgm_engine import Memory

from bench.toolret.data import Request, Tool, find_ultratool, load_ultratool

__all__ = ["goal_id", "graph_document", "build_memory"]

_STEP_PREFIX = re.compile(r"^\s*Step\s*\d+\s*[:.]?\s*", re.I)


def goal_id(request_id: str) -> str:
    """The id of a request's goal node.

    >>> goal_id("3186")
    'g3186'
    """
    return f"g{request_id}"


def graph_document(tools: Sequence[Tool], past: Iterable[Request]) -> dict[str, Any]:
    """The ``hgm-graph/1`` document of the memory (tools first, then goals in request order)."""
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    known = set()
    for tool in tools:
        known.add(tool.id)
        nodes.append({"id": tool.id, "type": "entity", "name": tool.id, "description": tool.description,
                      "tags": list(tool.domains)})
    for request in past:
        goal = goal_id(request.id)
        nodes.append({"id": goal, "type": "goal", "content": request.text, "status": "done"})
        previous = None
        for position, tool in enumerate(request.tools):
            action = f"a{request.id}-{position}"
            step = request.steps[position] if position < len(request.steps) else f"Call {tool}"
            nodes.append({"id": action, "type": "action", "content": _STEP_PREFIX.sub("", step).strip() or f"Call {tool}",
                          "status": "done"})
            edges.append({"from": goal, "to": action, "type": "parent_of", "order": position})
            if previous is not None:
                edges.append({"from": previous, "to": action, "type": "before"})
            if tool in known:
                edges.append({"from": action, "to": tool, "type": "related_to"})
            previous = action
    return {"format": "hgm-graph/1", "nodes": nodes, "edges": edges}


def build_memory(tools: Sequence[Tool], past: Iterable[Request], *, memory: Memory | None = None) -> Memory:
    """A memory (a new in-process one unless ``memory`` is given) holding ``tools`` and ``past``."""
    memory = Memory() if memory is None else memory
    memory.load(graph_document(tools, past), reason="UltraTool tools and past requests")
    return memory


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="the UltraTool folder (default: ../shared/data/taskplan/ultratool)")
    parser.add_argument("--db", required=True, help="SQLite file to create (must not exist)")
    parser.add_argument("--split", choices=("test", "dev"), default="test",
                        help="whose memory: every non-test request (test) or the development memory (dev)")
    args = parser.parse_args(argv)
    folder = args.data or find_ultratool()
    if folder is None:
        print("UltraTool data not found (give --data or set HGM_TASKPLAN_DATA)", file=sys.stderr)
        return 2
    data = load_ultratool(folder)
    past = data.test_split()[0] if args.split == "test" else data.dev_split()[0]
    with Memory.open(args.db) as memory:
        if memory.query("nodes.count()").value:
            print(f"{args.db} is not empty", file=sys.stderr)
            return 2
        build_memory(data.tools, past, memory=memory)
        print(f"{args.db}: {len(data.tools)} tools, {len(past)} past requests; t={memory.search_status()['t']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
