"""Hypothesis strategies for hgm: schemas, graphs of any schema, queries of every construct,
transactions and rule files.

``graphs(schema)`` draws graph documents (``hgm-graph/1``) that load into a memory of that
schema (every built-in constraint and attribute schema holds); ``graphs(schema, valid=False)``
draws any shape the graph file allows (cycles, several parents), for query tests.
``queries(schema)`` draws :class:`QueryCase` values: a well-formed expression, the parameters
it uses and a focus. ``transactions(schema, ids)`` draws transaction documents against a set
of existing ids; ``rule_files(schema)`` draws rule files.

>>> from hypothesis import given, settings
>>> from hgm_engine import Memory
>>> @settings(max_examples=5)
... @given(graphs(), queries(allow_bad=False))
... def test(doc, case):
...     Memory.from_document(doc).query(case.text, focus=case.focus, params=case.params)
>>> test()
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import attrs
import jsonschema
from hypothesis import strategies as st

from hgm_engine.model import DEFAULT_SCHEMA, STATUSES, Closure, EdgeRule, Hop, Schema
from hgm_engine.testing.jsonvalues import json_values, matching

__all__ = [
    "schemas",
    "graphs",
    "queries",
    "QueryCase",
    "transactions",
    "ops",
    "rule_files",
    "node_ids",
    "ATTRIBUTES",
    "TEXT_AND_TIME",
    "TEXTS",
    "SEARCH_TEXTS",
    "INSTANTS",
]

node_ids = ("n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "a b", "x-1")

# Attribute names and the values a drawn node may carry; "score" takes any JSON kind.
ATTRIBUTES = {
    "status": st.sampled_from(STATUSES[:5]),
    "priority": st.one_of(st.integers(0, 3), st.just(1.5)),
    "content": st.sampled_from(["Visit the palace", "Book a hotel", "hotel", "closed on Mondays", ""]),
    "tags": st.lists(st.sampled_from(["hotel", "food", "x"]), max_size=2),
    "ok": st.booleans(),
    "day": st.sampled_from(["Mon", "Tue"]),
    "confidence": st.sampled_from([0, 0.5, 0.9, 1]),
    "score": json_values(),
}

# Version 1.1 (spec §8): texts for search and rank, search texts that share their words, and
# valid-time bounds. TEXTS mixes stems (hotel/hotels, closed/closes), stop words, camel and
# snake case, digits, CJK characters and case; INSTANTS are the ISO 8601 spellings whose
# meaning the spec fixes (dates; date-times with seconds, a fraction, Z, an offset or nothing)
# and some that are no time at all.
TEXTS = (
    "Visit the Forbidden City", "Book a hotel near Wangfujing", "The hotel is closed on Mondays", "hotels closed",
    "Hotel hotel HOTEL", "call GetMovieCredit", "snake_case_name", "北京 hotel", "Museum tickets for Monday",
    "order A1001 refunded", "the of", "", "HTTPServer logs", "A rate of 780 CNY", "closes at noon",
    "2rooms booked", "caféBar menu", "İstanbul Straße",
)
SEARCH_TEXTS = (
    "hotel", "hotels", "closed", "Monday", "museum tickets", "Forbidden City", "movie credit", "getmoviecredit",
    "the hotel", "北京", "order A1001", "snake", "closed hotel Monday", "rate 780", "noon", "zebra", "HOTEL closes",
    "server", "case name", "rooms", "2rooms", "café bar", "strasse istanbul",
)
_BAD_SEARCH_LITERALS = ("3", "''", "'the of'", "true", "['hotel']")
INSTANTS = (
    "2026-01-01", "2026-03-01", "2026-06-01", "2026-06-01T00:00:00Z", "2026-06-01T02:00:00+02:00",
    "2026-05-31T23:59:59.999999Z", "2026-06-01T00:00:00.5", "2026-07-01T09:30:00-05:00", "2026-06-01T00:00Z",
    "2025-12-31T23:00:00-01:00", "2027-01-01",
)
_NOT_INSTANTS = ("yesterday", "2026-02-30", "2026-13-01", "soon", "")
TEXT_AND_TIME = {
    "content": st.sampled_from(TEXTS),
    "name": st.sampled_from(TEXTS[:6]),
    "title": st.sampled_from(TEXTS[5:]),
    "description": st.one_of(st.sampled_from(TEXTS), st.integers(0, 2)),
    "tags": st.lists(st.sampled_from(["hotel", "food", "Monday", "closedSundays", "x", 3]), max_size=3),
    "valid_from": st.one_of(st.sampled_from(INSTANTS), st.sampled_from(_NOT_INSTANTS + (None, 5))),
    "valid_to": st.one_of(st.sampled_from(INSTANTS), st.sampled_from(_NOT_INSTANTS[:2] + (None,))),
}
"""Attribute names with strategies for their values (pass as ``attributes=`` to :func:`graphs`,
:func:`ops`, :func:`transactions`): the text search reads and the valid-time bounds."""

_EXTRA_NODE_TYPES = ("tool", "place", "note")
_COMMON_EDGES = ("parent_of", "parent_of", "before", "related_to", "replaces", "derived_from")
_COMMON_RELATIONS = ("children", "parent", "descendants", "ancestors", "related", "next", "siblings", "subgoals", "actions", "latest", "versions", "following")
_EXTRA_EDGE_TYPES = ("uses", "near", "cites")


# -- schemas -------------------------------------------------------------------------------


@st.composite
def schemas(draw, base: Schema = DEFAULT_SCHEMA) -> Schema:
    """``base`` extended with up to three node types, three edge types, four relations (hops
    and closures over any edge types, some restricted to a node type), an attribute schema
    for some new node types and an endpoint rule for some new edge types.

    >>> from hypothesis import find
    >>> schema = find(schemas(), lambda s: len(s.node_types) > 5 and len(s.relations) > len(DEFAULT_SCHEMA.relations))
    >>> schema.node_types[5], sorted(set(schema.relations) - set(DEFAULT_SCHEMA.relations))
    ('tool', ['r0'])
    """
    node_types = draw(st.lists(st.sampled_from(_EXTRA_NODE_TYPES), unique=True, max_size=3))
    edge_types = draw(st.lists(st.sampled_from(_EXTRA_EDGE_TYPES), unique=True, max_size=3))
    all_nodes = (*base.node_types, *node_types)
    all_edges = (*base.edge_types, *edge_types)
    relations = {}
    for i in range(draw(st.integers(0, 4))):
        hop = Hop(
            draw(st.sampled_from(["out", "in", "both"])),
            draw(st.one_of(st.none(), st.lists(st.sampled_from(all_edges), min_size=1, max_size=2, unique=True).map(tuple))),
            draw(st.one_of(st.none(), st.sampled_from(all_nodes))),
        )
        relations[f"r{i}"] = Closure(hop) if draw(st.integers(0, 3)) == 0 else hop
    attribute_schemas = {}
    for node_type in node_types:
        if draw(st.booleans()):
            attribute_schemas[node_type] = {
                "type": "object",
                "required": draw(st.sampled_from([[], ["cost"]])),
                "properties": {"cost": {"type": "number", "minimum": 0}, "status": {"enum": ["pending", "done"]}},
            }
    edge_rules = {}
    for edge_type in edge_types:
        if draw(st.booleans()):
            sources = draw(st.one_of(st.none(), st.lists(st.sampled_from(all_nodes), min_size=1, max_size=3, unique=True).map(frozenset)))
            targets = draw(st.one_of(st.none(), st.lists(st.sampled_from(all_nodes), min_size=1, max_size=3, unique=True).map(frozenset)))
            edge_rules[edge_type] = EdgeRule(sources, targets, draw(st.booleans()))
    return base.extend(
        node_types=node_types, edge_types=edge_types, relations=relations,
        attribute_schemas=attribute_schemas, edge_rules=edge_rules,
    )


# -- graphs --------------------------------------------------------------------------------


def _validator(schema: Schema, node_type: str):
    attribute_schema = schema.attribute_schemas.get(node_type)
    if attribute_schema is None:
        return None
    return jsonschema.validators.validator_for(attribute_schema)(attribute_schema)


def _attributes(draw, schema: Schema, node_type: str, valid: bool, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    validator = _validator(schema, node_type) if valid else None
    attributes = dict(draw(matching(schema.attribute_schemas[node_type]))) if validator is not None else {}
    pool = {**ATTRIBUTES, **(extra or {})}
    names = sorted(extra) if extra and draw(st.booleans()) else sorted(pool)
    for name in draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=4)):
        value = draw(pool[name] if valid or draw(st.integers(0, 4)) else json_values())
        candidate = {**attributes, name: value}
        if validator is None or validator.is_valid(candidate):
            attributes = candidate
    return attributes


def _edge_attributes(draw) -> dict[str, Any]:
    choice = draw(st.integers(0, 9))
    if choice < 4:
        return {}
    if choice < 8:
        return {"order": draw(st.integers(0, 3))}
    return {"order": draw(st.sampled_from([1.5, True, "2", None])), "note": "x"}


def _allowed(schema: Schema, edge_type: str, source_type: str, target_type: str) -> bool:
    rule = schema.edge_rules.get(edge_type)
    return rule is None or rule.allows(source_type, target_type)


@st.composite
def graphs(draw, schema: Schema = DEFAULT_SCHEMA, *, valid: bool = True, max_nodes: int = 8, max_edges: int = 16,
           attributes: Mapping[str, Any] | None = None, prefer: Iterable[str] = ()) -> dict[str, Any]:
    """A graph document of ``schema``. With ``valid`` (the default) it loads: every action has
    one parent (a goal or an action), every result is produced by an action, the acyclic edge
    types form no cycle, every edge keeps to its endpoint rule and every node's attributes
    match its type's JSON Schema. Without, only ``replaces`` stays acyclic (so that ``latest``
    and ``versions`` have a meaning); everything else goes. ``attributes`` adds attribute
    names with strategies for their values (see :func:`ops`); ``prefer`` names node types to
    draw more often (with goals, so that actions have parents).

    >>> from hypothesis import find
    >>> doc = find(graphs(), lambda d: len(d["edges"]) >= 2)
    >>> doc["format"], len(doc["edges"])
    ('hgm-graph/1', 2)
    """
    count = draw(st.integers(0, max_nodes))
    pool = node_ids + tuple(f"n{i}" for i in range(8, max_nodes))  # more than node_ids: n8, n9, ...
    ids = draw(st.permutations(pool[:count]))
    if count and draw(st.integers(0, 4)) == 0:  # now and then an id that needs quotes
        spare = [i for i in node_ids[-2:] if i not in ids]
        if spare:
            ids[-1] = draw(st.sampled_from(spare))
    common = schema.node_types[:5]
    preferred = [t for t in (*prefer, "goal") if t in schema.node_types]
    types = [draw(st.sampled_from(preferred if preferred and draw(st.booleans()) else common if draw(st.integers(0, 3)) else schema.node_types)) for _ in ids]
    planners = {"goal", "action"} & set(schema.node_types)
    edges: dict[tuple, dict] = {}
    position = {node: i for i, node in enumerate(ids)}

    def acyclic_ok(edge_type: str, source: str, target: str) -> bool:
        if edge_type == "replaces" or (valid and edge_type in schema.acyclic_edge_types):
            return position[source] < position[target] if edge_type != "replaces" else position[source] > position[target]
        return True

    if valid:
        for i, node in enumerate(ids):
            if types[i] == "action":
                parents = [ids[j] for j in range(i) if types[j] in planners]
                if not parents:
                    types[i] = "goal" if "goal" in schema.node_types else types[i]
                    continue
                edges[(draw(st.sampled_from(parents)), node, "parent_of")] = _edge_attributes(draw)
        actions = [n for n, t in zip(ids, types) if t == "action"]
        for i, node in enumerate(ids):
            if types[i] == "result":
                if not actions:
                    types[i] = "fact"
                    continue
                edges[(draw(st.sampled_from(actions)), node, "produces")] = {}
    kinds = dict(zip(ids, types))
    if ids:
        for _ in range(draw(st.integers(min(max_edges, len(ids)), min(max_edges, 2 * len(ids) + 2)))):
            edge_type = draw(st.sampled_from(_COMMON_EDGES if draw(st.integers(0, 2)) else schema.edge_types))
            source, target = draw(st.sampled_from(ids)), draw(st.sampled_from(ids))
            if (source, target, edge_type) in edges or (source == target and edge_type == "replaces"):
                continue
            if not acyclic_ok(edge_type, source, target):
                continue
            if valid:
                if not _allowed(schema, edge_type, kinds[source], kinds[target]):
                    continue
                if edge_type == "parent_of" and kinds[target] == "action":
                    continue
                if source == target and edge_type in schema.acyclic_edge_types:
                    continue
            edges[(source, target, edge_type)] = _edge_attributes(draw) if edge_type in ("parent_of", "before", "uses") else {}
    nodes = [{"id": node, "type": kinds[node], **_attributes(draw, schema, kinds[node], valid, attributes)} for node in ids]
    keys = draw(st.permutations(list(edges)))  # creation order of the edges
    return {
        "format": "hgm-graph/1",
        "nodes": nodes,
        "edges": [{"from": s, "to": t, "type": k, **edges[(s, t, k)]} for (s, t, k) in keys],
    }


# -- queries -------------------------------------------------------------------------------


@attrs.frozen
class QueryCase:
    """A query to run: its text, the parameters it uses, and a focus (or None)."""

    text: str
    params: dict = attrs.field(factory=dict)
    focus: str | None = None

    def __str__(self) -> str:
        parts = [self.text]
        if self.params:
            parts.append(f"params={self.params!r}")
        if self.focus is not None:
            parts.append(f"focus={self.focus!r}")
        return "  ".join(parts)


def quote(text: str) -> str:
    """A string literal of the language for ``text``."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _literal_text(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, list):
        return "[" + ", ".join(_literal_text(v) for v in value) + "]"
    return repr(value)


_LITERALS = st.one_of(
    st.sampled_from([None, True, False, 0, 1, 2, 3, 1.5, 1.0, -1, "pending", "done", "hotel", "Mon", "", "a"]),
    st.lists(st.sampled_from(["hotel", "pending", 1, None, "x"]), max_size=3),
)
# Literal spellings _literal_text does not write: number forms, escapes, double quotes, nesting.
_SPELLINGS = ("-0.5", ".5", "1e3", "1E-1", "-3", "1.50", "'a\\nb'", "'\\u0068otel'", "'tab\\there'", '"hotel"',
              "'\\/'", "'it\\'s'", '"say \\"x\\""', "[1, 'a', [true]]", "[]", "null", "false", "[null, 1.0]")
_REGEXES = ("^Visit", "hotel$", "o.*l", "(?i)VISIT", "[ab]", "Mon|Tue", "", "\\d", "^$", "a+")
_COMPARISONS = ("=", "==", "!=", "<", "<=", ">", ">=")


class _Writer:
    """Draws the text of one query, collecting the parameters it uses."""

    def __init__(self, draw, schema: Schema, ids: Iterable[str], allow_bad: bool, text_and_time: bool = False):
        self.draw = draw
        # How often (one in N) a start is a search, a list step a rank, a term a valid_at.
        self.v11 = 3 if text_and_time else 12
        self.schema = schema
        self.ids = tuple(ids)
        self.allow_bad = allow_bad
        self.params: dict[str, Any] = {}
        self.uses_focus = False

    def param(self, value: Any) -> str:
        name = f"p{len(self.params)}"
        self.params[name] = value
        return "$" + name

    def bad(self) -> bool:
        return self.allow_bad and self.draw(st.integers(0, 19)) == 0

    def an_id(self) -> str:
        return self.draw(st.sampled_from(self.ids[:4] + self.ids))

    def attribute(self) -> str:
        return self.draw(st.sampled_from([*ATTRIBUTES, "id", "type", "missing"]))

    # -- queries, paths, starts ---------------------------------------------------------------

    def query(self, depth: int, final: bool) -> str:
        branches = 1 if final or depth <= 0 else self.draw(st.integers(1, 2))
        if branches == 1:
            return self.path(depth, final)
        return " | ".join(self.path(depth - 1, False) for _ in range(branches))

    def path(self, depth: int, final: bool) -> str:
        text = self.start(depth)
        if self.draw(st.integers(0, 9)) == 9:  # a comment runs to the end of the line
            text += " // a note\n  "
        text += self.steps(depth, self.draw(st.sampled_from([0, 1, 1, 2, 2, 3, 4])))
        if final and self.draw(st.integers(0, 2)) == 0:
            text += "." + self.draw(st.sampled_from(["count", "exists", "paths"])) + "()"
        return text

    def start(self, depth: int) -> str:
        if self.draw(st.integers(0, self.v11 - 1)) == self.v11 - 1:  # shrinks to the v1 construct
            return f"search({self.search_text()})"
        choices = ["root", "nodes", "nodes", "scan", "focus", "current_goal", "id", "id", "typed id", "quoted id", "id param", "ids param",
                   "typed quoted id", "typed id param"]
        if depth > 0:
            choices.append("subquery")
        choice = self.draw(st.sampled_from(choices))
        if choice in ("focus", "current_goal"):
            self.uses_focus = True
            return choice
        if choice in ("root", "nodes"):
            return choice
        if choice == "scan":  # what the optimizer turns into index scans
            text = f"nodes.where(type = {quote(self.draw(st.sampled_from(self.schema.node_types)))}"
            if self.draw(st.booleans()):
                text += f", {self.draw(st.sampled_from(['status', 'ok', 'priority']))} = {self.value()}"
            return text + ")"
        if choice == "id":
            # ids that need quoting cannot follow a bare # (none may: then an id nothing has)
            return "#" + self.draw(st.sampled_from([i for i in self.ids[:4] + self.ids if " " not in i] or ["nope"]))
        if choice == "typed id":
            return self.draw(st.sampled_from(self.schema.node_types[:5])) + "#" + self.draw(st.sampled_from([i for i in self.ids if " " not in i] or ["nope"]))
        if choice == "quoted id":
            return '#"' + self.an_id() + '"'
        if choice == "typed quoted id":
            return self.draw(st.sampled_from(self.schema.node_types)) + '#"' + self.an_id() + '"'
        if choice == "typed id param":
            return self.draw(st.sampled_from(self.schema.node_types[:5])) + "#" + self.param(self.an_id())
        if choice == "id param":
            return "#" + self.param(3 if self.bad() else self.an_id())
        if choice == "ids param":
            if self.bad():
                return self.param(["n0", 1])
            return self.param(self.draw(st.one_of(st.sampled_from(self.ids), st.lists(st.sampled_from(self.ids + ("nope",)), max_size=4))))
        return "(" + self.query(depth - 1, False) + ")"

    # -- steps ----------------------------------------------------------------------------

    def steps(self, depth: int, count: int, relative: bool = False) -> str:
        text = ""
        for i in range(count):
            kind = "nav" if relative and i == 0 else self.draw(st.sampled_from(["nav", "nav", "nav", "nav", "predicate", "list"]))
            dot = "" if relative and i == 0 else "."
            if kind == "nav":
                text += self.navigation(depth, dot)
            elif kind == "predicate":
                text += self.predicate(depth)
            else:
                text += self.list_step()
        return text

    def navigation(self, depth: int, dot: str) -> str:
        relations = sorted(self.schema.relations)
        if self.draw(st.integers(0, 3)) == 0:
            types = self.draw(st.lists(st.sampled_from(self.schema.edge_types), max_size=2, unique=True))
            step, single = f"{self.draw(st.sampled_from(['out', 'in', 'both']))}({', '.join(types)})", True
        else:
            name = self.draw(st.sampled_from(_COMMON_RELATIONS if self.draw(st.booleans()) else relations))
            step, single = name, isinstance(self.schema.relation(name), Hop)
        text = dot + step
        if single and self.draw(st.integers(0, 3)) == 0:
            low = self.draw(st.integers(0, 2))
            text += self.draw(st.sampled_from([f"{{{low}}}", f"{{{low},}}", f"{{{low},{low + self.draw(st.integers(0, 2))}}}"]))
        for _ in range(self.draw(st.sampled_from([0, 0, 0, 1, 1, 2]))):
            text += self.predicate(depth)
        return text

    def predicate(self, depth: int) -> str:
        choice = self.draw(st.integers(0, 4))
        if choice <= 2:
            return ".where(" + self.condition(depth) + ")"
        if choice == 3:
            return f"[{self.draw(st.integers(-3, 3))}]"
        low = self.draw(st.one_of(st.none(), st.integers(-3, 3)))
        high = self.draw(st.one_of(st.none(), st.integers(-3, 3)))
        return f"[{'' if low is None else low}:{'' if high is None else high}]"

    def list_step(self) -> str:
        if self.draw(st.integers(0, self.v11 - 1)) == self.v11 - 1:  # shrinks to the v1 construct
            return f".rank({self.search_text()})"
        choice = self.draw(st.sampled_from(["first", "last", "limit", "limit param", "sort_by"]))
        if choice in ("first", "last"):
            return f".{choice}()"
        if choice == "limit":
            return f".limit({self.draw(st.integers(0, 4))})"
        if choice == "limit param":
            return f".limit({self.param(self.draw(st.sampled_from([-1, 1.5, True])) if self.bad() else self.draw(st.integers(0, 4)))})"
        direction = self.draw(st.sampled_from(["", ", 'asc'", ", 'desc'"]))
        return f".sort_by({self.attribute()}{direction})"

    # -- conditions -----------------------------------------------------------------------

    def condition(self, depth: int) -> str:
        return ", ".join(self.term(depth, 2) for _ in range(self.draw(st.integers(1, 2))))

    def term(self, depth: int, budget: int) -> str:
        if self.draw(st.integers(0, self.v11 - 1)) == self.v11 - 1:  # shrinks to the v1 construct
            return self.valid_at()
        choice = self.draw(st.integers(0, 9 if budget > 0 else 6))
        if choice == 0:
            left = self.attribute() if self.draw(st.integers(0, 4)) else self.value()
            return f"{left} {self.draw(st.sampled_from(_COMPARISONS))} {self.value()}"
        if choice == 1:
            right = self.param(self.draw(_LITERALS)) if self.draw(st.integers(0, 3)) == 0 else _literal_text(self.draw(st.lists(self.draw_literal(), max_size=3)))
            return f"{self.attribute()} {self.draw(st.sampled_from(['in', 'not in']))} {right}"
        if choice == 2:
            return f"{self.attribute()} contains {self.value()}"
        if choice == 3:
            pattern = self.draw(st.sampled_from(_REGEXES))
            right = self.param("(" if self.bad() else pattern) if self.draw(st.integers(0, 3)) == 0 else quote(pattern)
            return f"{self.attribute()} =~ {right}"
        if choice == 4:
            return f"has({self.attribute()})"
        if choice == 5:
            return self.draw(st.sampled_from(["ok", "not ok", "true", "score", "not has(status)"]))
        if choice == 6:
            if depth <= 0:
                return f"{self.attribute()} = {self.value()}"
            inner = self.steps(depth - 1, self.draw(st.integers(1, 3)), relative=True)
            if self.draw(st.booleans()):
                return f"exists({inner})"
            return f"count({inner}) {self.draw(st.sampled_from(_COMPARISONS))} {self.draw(st.integers(0, 3))}"
        if choice == 7:
            return f"not {self.term(depth, budget - 1)}"
        if choice == 8:
            return f"{self.term(depth, budget - 1)} {self.draw(st.sampled_from(['and', 'or']))} {self.term(depth, budget - 1)}"
        return f"({self.term(depth, budget - 1)})"

    # -- version 1.1 (spec §8) ------------------------------------------------------------

    def search_text(self) -> str:
        """A TEXT argument: a string literal or a parameter (now and then one with no word,
        or not a string)."""
        if self.bad():
            if self.draw(st.booleans()):
                return self.draw(st.sampled_from(_BAD_SEARCH_LITERALS))
            return self.param(self.draw(st.sampled_from([5, "the", "", ["hotel"], None])))
        text = self.draw(st.sampled_from(SEARCH_TEXTS))
        return self.param(text) if self.draw(st.integers(0, 3)) == 0 else quote(text)

    def valid_at(self) -> str:
        """``valid_at(T)``: T a literal or a parameter (now and then not an instant, or missing)."""
        if self.bad():
            return self.draw(st.sampled_from([
                "valid_at('yesterday')", "valid_at(5)", "valid_at()", "valid_at(null)", "valid_at(['2026-01-01'])",
                "valid_at('2026-02-30')", f"valid_at({self.param(self.draw(st.sampled_from([5, 'soon', None, '2026-13-01'])))})",
            ]))
        moment = self.draw(st.sampled_from(INSTANTS))
        return f"valid_at({self.param(moment) if self.draw(st.integers(0, 3)) == 0 else quote(moment)})"

    def draw_literal(self) -> st.SearchStrategy:
        return st.sampled_from([None, True, 1, 1.0, "pending", "done", "hotel", "x", "Mon"])

    def value(self) -> str:
        choice = self.draw(st.integers(0, 9))
        if choice <= 1:
            return self.param(self.draw(json_values()))
        if choice == 9:  # the other spellings of literals (language.md §10)
            return self.draw(st.sampled_from(_SPELLINGS))
        return _literal_text(self.draw(_LITERALS))


@st.composite
def queries(draw, schema: Schema = DEFAULT_SCHEMA, *, ids: Iterable[str] = node_ids, depth: int = 2, allow_bad: bool = True,
            text_and_time: bool = False) -> QueryCase:
    """A well-formed query of ``schema`` with its parameters and focus: every start (named,
    by id, quoted, by parameter, typed, a parenthesised union), relations of the schema, generic
    steps, repetitions, ``where`` with every operator and function, indexes, slices, list
    steps and finals, comments, and every spelling of a literal; and version 1.1's
    ``search(TEXT)`` start, ``.rank(TEXT)`` step and ``valid_at(T)`` condition (more often with
    ``text_and_time``; their texts and times are :data:`SEARCH_TEXTS` and :data:`INSTANTS`).
    With ``allow_bad`` a few parameters have the wrong kind for their place, a few v1.1
    arguments are wrong (a TEXT with no word, a T that is no time) and a few queries use the
    focus without one (the errors of language.md §11).

    >>> from hypothesis import find
    >>> find(queries(), lambda q: ".paths()" in q.text).text
    'root.paths()'
    """
    writer = _Writer(draw, schema, ids, allow_bad, text_and_time)
    text = writer.query(depth, True)
    focus = None
    if writer.uses_focus and not (allow_bad and draw(st.integers(0, 19)) == 0):
        focus = draw(st.sampled_from(tuple(ids) + ("nope",)))
    return QueryCase(text, writer.params, focus)


# -- transactions ----------------------------------------------------------------------------


@st.composite
def ops(draw, schema: Schema = DEFAULT_SCHEMA, *, ids: Iterable[str] = node_ids[:6], edges: Iterable[tuple] = (),
        fresh: Iterable[str] = ("m0", "m1", "m2"), attributes: Mapping[str, Any] | None = None,
        prefer: Iterable[str] = (), invalidate: bool = False) -> dict[str, Any]:
    """One op in transaction-file form, mostly one that can apply to a memory holding ``ids``
    (and the ``edges``, as ``(from, to, type)``), now and then one that cannot: a missing
    node, a duplicate id, an unknown type, an op that does not exist. ``attributes`` maps
    more attribute names to strategies for their values (those of a rule file, say), drawn
    as often as the built-in ones (:data:`ATTRIBUTES`); ``prefer`` names node types an
    ``add_node`` draws more often (those a rule file is about, say). With ``invalidate`` it
    also draws ``invalidate`` ops (an ``at`` from :data:`INSTANTS`, now and then no time; a
    ``by`` and a ``reason`` half the time): pass :data:`TEXT_AND_TIME` as ``attributes`` too,
    so that the nodes carry the bounds it reads.

    >>> from hypothesis import find
    >>> find(ops(), lambda op: op["op"] == "replace_branch")["op"]
    'replace_branch'
    """
    ids, edges, fresh = list(ids), list(edges), list(fresh)
    preferred = [t for t in prefer if t in schema.node_types]
    known = ids or ["nope"]
    pool = {**ATTRIBUTES, **(attributes or {})}
    names = sorted(attributes or ()) or sorted(ATTRIBUTES)

    def some(minimum: int) -> list[str]:
        return draw(st.lists(st.sampled_from(names if draw(st.booleans()) else sorted(pool)), unique=True, min_size=minimum, max_size=2))

    # With a vocabulary (a rule file's attributes), most ops write those attributes.
    focused = ["add_node", "update_node", "update_node"] * 3 if attributes else []
    kind = draw(st.sampled_from(
        ["add_node"] * 4 + ["update_node"] * 4 + focused + ["delete_node", "add_edge", "add_edge", "update_edge",
         "delete_edge", "replace_branch", "confirm", "confirm", "bad"] + ["invalidate"] * (2 if invalidate else 0)
    ))
    if kind == "add_node":
        choices = preferred if preferred and draw(st.booleans()) else schema.node_types[:5] if draw(st.integers(0, 3)) else schema.node_types
        node_type = draw(st.sampled_from(choices))
        op: dict[str, Any] = {"op": "add_node", "type": node_type}
        if draw(st.integers(0, 5)):
            op["id"] = draw(st.sampled_from(fresh + known[:1]))
        if ids and (node_type == "action" or draw(st.booleans())) and draw(st.integers(0, 7)):
            op["parent"] = draw(st.sampled_from(ids))
            if draw(st.booleans()):
                op["order"] = draw(st.integers(0, 3))
        for name in some(0):
            op[name] = draw(pool[name])
        return op
    if kind == "update_node":
        op = {"op": "update_node", "id": draw(st.sampled_from(known)), "set": {n: draw(pool[n]) for n in some(1)}}
        if draw(st.integers(0, 3)) == 0:
            op["unset"] = [draw(st.sampled_from(sorted(pool)))]
        return op
    if kind == "delete_node":
        return {"op": "delete_node", "id": draw(st.sampled_from(known)), "cascade": draw(st.booleans())}
    if kind == "add_edge":
        op = {"op": "add_edge", "from": draw(st.sampled_from(known)), "to": draw(st.sampled_from(known)),
              "type": draw(st.sampled_from(_COMMON_EDGES + ("produces",) if draw(st.integers(0, 3)) else schema.edge_types))}
        if draw(st.integers(0, 3)) == 0:
            op["order"] = draw(st.integers(0, 3))
        return op
    if kind in ("update_edge", "delete_edge") and edges:
        source, target, edge_type = draw(st.sampled_from(edges))
        op = {"op": kind, "from": source, "to": target, "type": edge_type}
        if kind == "update_edge":
            op["set"] = {"order": draw(st.integers(0, 3))}
        return op
    if kind == "replace_branch" and ids:
        plan = [{"type": "action", "status": "pending",
                 "children": [{"type": "action"}] if draw(st.booleans()) else []}
                for _ in range(draw(st.integers(0, 2)))]
        return {"op": "replace_branch", "id": draw(st.sampled_from(ids)), "with": plan,
                "set": {"status": draw(st.sampled_from(STATUSES[:4]))}}
    if kind == "confirm":
        return {"op": "confirm", "id": draw(st.sampled_from(known))}
    if kind == "invalidate":
        op = {"op": "invalidate", "id": draw(st.sampled_from(known)),
              "at": draw(st.sampled_from(INSTANTS) if draw(st.integers(0, 5)) else st.sampled_from(_NOT_INSTANTS[:3]))}
        if draw(st.booleans()):
            op["by"] = draw(st.sampled_from(known + fresh[:1]))
        if draw(st.booleans()):
            op["reason"] = draw(st.sampled_from(["summer season", "a newer rate"]))
        return op
    return draw(st.sampled_from([
        {"op": "fly"}, {"op": "add_node", "type": "gaol"}, {"op": "update_node", "id": "nope", "set": {"x": 1}},
        {"op": "delete_edge", "from": known[0], "to": known[-1], "type": "causes"} if not edges else {"op": "confirm"},
    ]))


@st.composite
def transactions(draw, schema: Schema = DEFAULT_SCHEMA, *, ids: Iterable[str] = node_ids[:6], edges: Iterable[tuple] = (),
                 max_ops: int = 4, attributes: Mapping[str, Any] | None = None, prefer: Iterable[str] = (),
                 invalidate: bool = False) -> dict[str, Any]:
    """A transaction document (``author``, ``reason``, ``ops``) of 1 to ``max_ops`` ops for
    a memory holding ``ids`` and ``edges`` (see :func:`ops`; an id listed more than once is
    drawn more often; ``invalidate`` adds ``invalidate`` ops).

    >>> from hypothesis import find
    >>> len(find(transactions(), lambda doc: len(doc["ops"]) == 3)["ops"])
    3
    """
    ids, edges = list(ids), list(edges)
    prefer = list(prefer)
    drawn = [draw(ops(schema, ids=ids, edges=edges, attributes=attributes, prefer=prefer, invalidate=invalidate))
             for _ in range(draw(st.integers(1, max_ops)))]
    return {"author": "hypothesis", "reason": "a random transaction", "ops": drawn}


# -- rule files ------------------------------------------------------------------------------

_TARGETS = (
    "self", "parent", "children", "children.where(status = 'pending')", "following", "next", "related",
    "derived", "derived{1,2}", "ancestors[0]", "siblings", "produced_by", "sources", "actions.where(ok)",
)
_RULE_CONDITIONS = (
    "status = 'failed'", "status = 'done'", "status != 'pending'", "has(priority)", "ok", "priority > 1",
    "exists(children)", "not exists(parent)", "tags contains 'hotel'", "content =~ 'hotel'",
)
_SETS = ("status = 'done'", "status = 'failed'", "status = 'pending'", "ok = true", "ok = false", "priority = 2", "flag = 1", "tags = ['x']")
_MUSTS = ("has(status)", "status != 'bogus'", "count(children) < 4", "priority <= 3", "not ok", "exists(parent) or type = 'goal'")


@st.composite
def rule_files(draw, schema: Schema = DEFAULT_SCHEMA, *, max_statements: int = 4, constraints: bool = True) -> str:
    """A rule file of triggers (``mark`` and ``set`` effects on relative targets),
    propagation declarations and (with ``constraints``) constraints over ``schema``'s types.
    Some files are refused when loaded (a trigger cycle): that is part of what they test.

    >>> from hypothesis import find
    >>> print(find(rule_files(), lambda text: text.startswith("propagate") and " from " not in text and " to " not in text))
    propagate parent_of forward
    """
    lines = []
    types = schema.node_types[:5] if "action" in schema.node_types else schema.node_types
    for i in range(draw(st.integers(1, max_statements))):
        kind = draw(st.sampled_from(["propagate", "rule", "rule", "rule"] + (["constraint"] if constraints else [])))
        if kind == "propagate":
            text = f"propagate {draw(st.sampled_from(_COMMON_EDGES + schema.edge_types))} {draw(st.sampled_from(['forward', 'backward', 'both']))}"
            if draw(st.booleans()):
                text += f" depth {draw(st.integers(1, 3))}"
            if draw(st.integers(0, 3)) == 0:
                text += f" from {draw(st.sampled_from(types))}"
            if draw(st.integers(0, 3)) == 0:
                text += f" to {draw(st.sampled_from(types))}"
        elif kind == "rule":
            text = f"rule r{i}: on {draw(st.sampled_from(['add', 'update', 'delete']))} {draw(st.sampled_from(types))}"
            if draw(st.booleans()):
                text += f" where {draw(st.sampled_from(_RULE_CONDITIONS))}"
            effects = []
            for _ in range(draw(st.integers(1, 2))):
                target = draw(st.sampled_from(_TARGETS))
                if draw(st.integers(0, 2)):
                    state = draw(st.sampled_from(["needs_review", "blocked"]))
                    because = draw(st.sampled_from(["", " because 'a reason'"]))
                    effects.append(f"mark {target} as {state}{because}")
                else:
                    effects.append(f"set {target} with {draw(st.sampled_from(_SETS))}")
            text += " then " + "; ".join(effects)
        else:
            text = f"constraint c{i}: each {draw(st.sampled_from(types))}"
            if draw(st.booleans()):
                text += f" where {draw(st.sampled_from(_RULE_CONDITIONS))}"
            text += f" must {draw(st.sampled_from(_MUSTS))}"
        lines.append(text)
    return "\n".join(lines)
