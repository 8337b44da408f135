"""``hgm demo``: a guided tour on the sample memory shipped with hgm, and ``hgm demo NAME``, a
planner scenario run end to end.

The scenarios are not part of the engine (which never imports the package that holds them):
a package offers a collection of scenarios through an entry point of the group ``hgm.demos``
(:data:`DEMO_GROUP`) declared in its ``pyproject.toml``, and hgm's own distribution declares
one with ``travel``, ``orders`` and ``research``. The entry point resolves to a
:class:`ScenarioCollection` — an object (a module, typically) with ``names()`` and ``demo(name,
*, db, out, err, unicode) -> exit code`` — and is loaded only when a scenario is asked for.

>>> import io
>>> class Tour:
...     def names(self):
...         return ["tour"]
...     def demo(self, name, *, db, out, err, unicode):
...         print(f"the {name} runs", file=out)
...         return 0
>>> out = Output(io.StringIO(), io.StringIO())
>>> run_scenario("tour", [Tour()], db=None, out=out), out.out.getvalue()
(0, 'the tour runs\\n')
>>> run_scenario("nowhere", [Tour()], db=None, out=out), out.err.getvalue()
(1, "hgm demo: unknown scenario 'nowhere'; known: tour\\n")
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
from importlib.metadata import entry_points
from typing import Any, Mapping, Protocol, Sequence, TextIO

import attrs

from hgm_engine.cli.arguments import Commands, add_command, examples
from hgm_engine.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_QUERY_ERROR, Output, render_error
from hgm_engine.errors import HGMError
from hgm_engine.memory import Memory
from hgm_engine.render.text import plural, result_lines, tree_lines

__all__ = [
    "register",
    "sample_document",
    "ScenarioCollection",
    "scenario_collections",
    "run_scenario",
    "DEMO_GROUP",
    "DEMO_QUERIES",
    "DemoQuery",
    "SAMPLE_RESOURCE",
]

DEMO_GROUP = "hgm.demos"
SAMPLE_RESOURCE = "data/sample_memory.json"


def sample_document() -> dict[str, Any]:
    """The embedded sample memory (a three-day Beijing trip and an order-status goal).

    It ships inside the package as ``hgm_engine/data/sample_memory.json``; ``hgm demo`` runs
    on it and ``hgm demo --sample`` prints it.

    >>> doc = sample_document()
    >>> doc["format"], doc["nodes"][0]["id"]
    ('hgm-graph/1', 'trip')
    >>> Memory.from_document(doc).query("root").ids
    ['trip', 'orders']
    """
    resource = importlib.resources.files("hgm_engine").joinpath(SAMPLE_RESOURCE)
    return json.loads(resource.read_text(encoding="utf-8"))


# -- the scenarios (hgm demo NAME) -----------------------------------------------------------


class ScenarioCollection(Protocol):
    """What an ``hgm.demos`` entry point resolves to (the module docstring shows one)."""

    def names(self) -> list[str]:
        """The scenario names, in the order ``hgm demo`` lists them."""

    def demo(self, name: str, *, db: str | None, out: TextIO, err: TextIO, unicode: bool) -> int:
        """Run scenario ``name`` printing on ``out`` (messages on ``err``), keeping its memory in
        the new SQLite file ``db`` if given; returns the exit code."""


def scenario_collections() -> list[ScenarioCollection]:
    """The scenario collections installed packages offer (entry point group ``hgm.demos``), in
    the order the entry points are found; loading them imports their packages.

    >>> all(callable(collection.demo) for collection in scenario_collections())
    True
    """
    return [entry.load() for entry in entry_points(group=DEMO_GROUP)]


def run_scenario(name: str, collections: Sequence[ScenarioCollection], *, db: str | None, out: Output) -> int:
    """Run the scenario ``name`` from the first of ``collections`` that has it. An unknown name
    exits 1 listing the known ones; no collection at all exits 1 saying what is missing."""
    if not collections:
        return out.failure(
            "missing-package",
            f"hgm demo {name} needs the planner scenarios, which a package offers through the entry "
            f"point group {DEMO_GROUP!r}; none is installed (they ship with hgm: reinstall it)",
        )
    for collection in collections:
        if name in collection.names():
            return collection.demo(name, db=db, out=out.out, err=out.err, unicode=out.unicode)
    known = [known for collection in collections for known in collection.names()]
    print(f"hgm demo: unknown scenario {name!r}; known: {', '.join(known)}", file=out.err)
    return EXIT_FAILURE


# -- the tour --------------------------------------------------------------------------------


@attrs.frozen
class DemoQuery:
    """A query of the tour, with why it is worth asking and what it needs.

    >>> DEMO_QUERIES[0].expr
    "root.subgoals[0].actions.where(status='pending')"
    """

    expr: str
    why: str
    focus: str | None = None
    params: Mapping[str, Any] | None = None


DEMO_QUERIES = (
    DemoQuery(
        "root.subgoals[0].actions.where(status='pending')",
        "The design-card query: the pending actions of the first subgoal (day 1) of each root goal.",
    ),
    DemoQuery(
        "#a_palace.related_entities.related_facts",
        "What is known about the places the Forbidden City visit touches?",
    ),
    DemoQuery(
        "#f_rate.derived{1,}",
        "Repetition: everything derived from the hotel price, at any distance (stale if it changes).",
    ),
    DemoQuery(
        "root.descendants.where(status='failed').paths()",
        "Where did something fail? The path from its root goal to each failed step.",
    ),
    DemoQuery(
        "#a_wall_bus.latest",
        "The failed Great Wall plan was rewritten: follow 'replaces' edges to the newest version.",
    ),
    DemoQuery(
        "#trip.descendants.where(type='action', status='pending').count()",
        "How much of the trip is still to do?",
    ),
    DemoQuery(
        'root.descendants.where(type = "action", status = "pending", priority <= $max_priority)',
        "A parameter: urgent pending actions; the value is bound, never pasted into the text.",
        params={"max_priority": 1},
    ),
    DemoQuery(
        "current_goal.actions.where(status != 'done')",
        "The planner is paying the deposit: what is still open in the goal around it?",
        focus="a_deposit",
    ),
)
DEMO_EXPLAIN = "root.subgoals[0].actions.where(status='pending')"
DEMO_ERROR = "root.subgoal[0].actions"


def _shell_quote(text: str) -> str:
    """Quote a query for a POSIX shell the way a person would type it.

    >>> print(_shell_quote("root.where(status='done')"), _shell_quote("#a1"))
    "root.where(status='done')" '#a1'
    """
    if "'" not in text:
        return f"'{text}'"
    if not any(ch in text for ch in '"$`\\'):
        return f'"{text}"'
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _demo_command(query: DemoQuery) -> str:
    command = f"$ hgm query {_shell_quote(query.expr)} --graph trip.json"
    if query.focus is not None:
        command += f" --focus {query.focus}"
    if query.params is not None:
        command += f" --params {_shell_quote(json.dumps(query.params))}"
    return command


def _heading(out: Output, title: str) -> None:
    rule = ("─" if out.unicode else "-") * len(title)
    out.line()
    out.line(title)
    out.line(rule)


def _scenario(args: argparse.Namespace, out: Output) -> int:
    """``hgm demo NAME``: a scenario from the ``hgm.demos`` entry points, loaded only now."""
    if args.sample:
        return out.failure("invalid-argument", "--sample prints the sample memory; it takes no scenario NAME")
    try:
        collections = scenario_collections()
    except ImportError as exc:  # an entry point whose package is broken or half installed
        return out.failure("missing-package", f"hgm demo {args.name}: cannot load the scenarios ({exc})")
    return run_scenario(args.name, collections, db=args.db, out=out)


def _demo(args: argparse.Namespace, out: Output) -> int:
    if args.name is not None:
        return _scenario(args, out)
    if args.db is not None:
        return out.failure("invalid-argument", "--db keeps a scenario's memory: give a NAME (travel, orders, research)")
    doc = sample_document()
    if args.sample:
        out.line(json.dumps(doc, indent=1, ensure_ascii=not out.unicode))
        return EXIT_OK
    memory = Memory.from_document(doc)
    graph = memory.graph
    out.line("hgm demo: the memory of a planner halfway through a three-day Beijing trip")
    out.line(
        f"(the embedded sample: {plural(len(graph), 'node')}, {plural(graph.edge_count, 'edge')}; "
        "offline, no API key needed)"
    )
    out.line("The commands shown assume the sample was saved first: hgm demo --sample > trip.json")

    _heading(out, "The memory as a tree  (hgm show --graph trip.json)")
    out.lines(tree_lines(graph, unicode=out.unicode))

    _heading(out, "Asking it questions  (hgm query)")
    for number, query in enumerate(DEMO_QUERIES, 1):
        out.line()
        out.line(f"[{number}] {query.expr}")
        out.line(f"    {query.why}")
        out.line(f"    {_demo_command(query)}")
        result = memory.query(query.expr, focus=query.focus, params=query.params)
        out.lines(result_lines(result, unicode=out.unicode), indent="    ")

    _heading(out, "How a query runs  (hgm explain)")
    out.line(f"$ hgm explain {_shell_quote(DEMO_EXPLAIN)}")
    out.line(memory.explain(DEMO_EXPLAIN))

    _heading(out, "When a query is wrong")
    out.line(f"$ hgm query {_shell_quote(DEMO_ERROR)} --graph trip.json")
    try:
        memory.query(DEMO_ERROR)
    except HGMError as err:
        out.lines(render_error(err))
        out.line(f"(exit code {EXIT_QUERY_ERROR}; with --json: {json.dumps(err.to_json())})")
    else:  # pragma: no cover - the demo's error query must fail
        raise AssertionError(f"the demo error query {DEMO_ERROR!r} did not fail")

    _heading(out, "Try it yourself")
    out.line("$ hgm demo --sample > trip.json")
    out.line("$ hgm show --graph trip.json --root d3")
    out.line(f"$ hgm query {_shell_quote(DEMO_QUERIES[0].expr)} --graph trip.json --json")
    return EXIT_OK


def register(commands: Commands) -> None:
    """Add ``demo`` to the ``hgm`` parser.

    >>> from hgm_engine.cli.arguments import ArgumentParser
    >>> parser = ArgumentParser(prog="hgm")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["demo", "travel", "--db", "trip.db"])
    >>> args.name, args.db, args.sample
    ('travel', 'trip.db', False)
    """
    demo = add_command(
        commands,
        "demo",
        "a guided tour on the embedded sample memory (offline)",
        "Load the sample memory shipped with hgm (a three-day Beijing trip and an order-status "
        "goal), draw it, run illustrative queries with their results, explain one, and show what "
        "a query error looks like. Needs no network and no API key.",
        examples(
            "hgm demo",
            "hgm demo --sample > trip.json && hgm show --graph trip.json",
            "hgm demo travel --db trip.db && hgm history --db trip.db",
            note="NAME runs a planner scenario end to end (HTN planner, simulated tools, offline):\n"
            "travel, orders or research; --db PATH keeps its memory (a new SQLite file).",
        ),
        _demo,
    )
    demo.add_argument("name", nargs="?", metavar="NAME", help="a planner scenario: travel, orders or research")
    demo.add_argument("--db", metavar="PATH", help="with NAME: keep the scenario's memory in this new SQLite file")
    demo.add_argument("--sample", action="store_true", help="print the sample memory (a graph file) and stop")
