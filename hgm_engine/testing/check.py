"""Property tests of a user's rule file against random memories and transactions of their
schema: what ``hgm check`` runs.

Four searches, each over ``examples`` random scenarios (a graph that loads, with the rule
file's constraints holding, and one transaction against it), each finding shrunk by
hypothesis to a minimal counterexample:

- ``rule-loop`` — the transaction makes the triggers run past the round cap;
- ``non-confluence`` — the triggers loaded in the reverse order reach another state;
- ``marks-refused`` — the transaction commits without the triggers and propagation, but
  their marks or sets make a constraint refuse it;
- ``unsatisfiable`` — two constraints on one node type that were each met by some new node
  of that type but never both by the same one (a search result, not a proof).

>>> result = check_rules('''
... rule settle: on add fact then set self with status = 'done'
... rule review: on add fact where status = 'done' then mark self as needs_review
... ''', examples=20, seed=1)
>>> [(f.kind, f.transaction["ops"]) for f in result.findings]
[('non-confluence', [{'op': 'add_node', 'type': 'fact'}])]
"""

from __future__ import annotations

import json
import random
from typing import Any, Callable

import attrs
from hypothesis import HealthCheck, Phase, assume, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample, Unsatisfiable

from hgm_engine.errors import HGMError, RequestError, TransactionError
from hgm_engine.memory import Memory
from hgm_engine.model import DEFAULT_SCHEMA, Schema
from hgm_engine.query import parse_rule_file
from hgm_engine.query import syntax as S
from hgm_engine.rules import parse_rules
from hgm_engine.testing.interpreter import subtrees
from hgm_engine.testing.jsonvalues import matching
from hgm_engine.testing.strategies import ATTRIBUTES, graphs, transactions

__all__ = ["check_rules", "CheckResult", "Finding", "KINDS"]

KINDS = ("rule-loop", "non-confluence", "marks-refused", "unsatisfiable")


@attrs.frozen
class Finding:
    """One problem found: its kind, what went wrong, and the minimal counterexample — a graph
    document (``hgm load``) and a transaction document (``hgm apply``)."""

    kind: str
    message: str
    graph: dict
    transaction: dict

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "graph": self.graph, "transaction": self.transaction}


@attrs.frozen
class CheckResult:
    """What :func:`check_rules` searched and found."""

    examples: int
    seed: int
    findings: tuple[Finding, ...]


@attrs.frozen
class _Scenario:
    graph: dict
    transaction: dict


def _vocabulary(rule_file: S.RuleFile, schema: Schema = DEFAULT_SCHEMA) -> dict[str, st.SearchStrategy]:
    """The attributes a rule file reads or sets, each with the values it names, numbers either
    side of and between the numbers it compares with, and the values the attribute takes
    anyway (the strategies' own, and those the schema's attribute schemas allow): random
    transactions that use them reach the rules' conditions far more often.

    >>> from hgm_engine.query import parse_rule_file
    >>> from hypothesis import find
    >>> words = _vocabulary(parse_rule_file("constraint c: each fact must weight > 0.3 and weight < 0.6"))
    >>> round(find(words["weight"], lambda v: 0.3 < v < 0.6), 2)  # between the two
    0.45
    """
    values: dict[str, list] = {}

    def visit(node: Any) -> None:
        if isinstance(node, S.Compare) and isinstance(node.left, S.AttrRef):
            found = values.setdefault(node.left.name, [])
            if isinstance(node.right, (S.Literal, S.ListLiteral)):
                value = _literal(node.right)
                found.extend(value if node.op in ("in", "not in") and isinstance(value, list) else [value])
            visit(node.right)
            return
        if isinstance(node, S.AttrRef):  # a bare attribute as a condition: truthy
            values.setdefault(node.name, []).append(True)
        elif isinstance(node, S.FuncCall) and node.name == "has" and node.path is not None:
            values.setdefault(node.path.steps[0].name, [])
            return
        elif isinstance(node, S.Assignment):
            values.setdefault(node.name, []).append(_literal(node.value))
        for child in subtrees(node):
            visit(child)

    visit(rule_file.statements)
    for found in values.values():  # numbers either side of each number compared, and between two
        numbers = [v for v in found if isinstance(v, (int, float)) and not isinstance(v, bool)]
        for value in numbers:
            found.extend([value - 1, value + 1, value / 2, (value + 1) / 2])
        found.extend((a + b) / 2 for i, a in enumerate(numbers) for b in numbers[i + 1:])
    json_ok = lambda v: v is None or isinstance(v, (bool, int, float, str, list))  # noqa: E731
    vocabulary = {}
    for name, found in values.items():
        if name in ("id", "type", "dirty", "dirty_marks"):
            continue
        named = [json.loads(v) for v in dict.fromkeys(map(json.dumps, found)) if json_ok(json.loads(v))]
        usual = [ATTRIBUTES[name]] if name in ATTRIBUTES else []
        usual += [matching(properties[name]) for properties in
                  (s.get("properties", {}) for s in schema.attribute_schemas.values()) if isinstance(properties.get(name), dict)]
        # the named values at least as often as all the usual ones together
        choices = ([st.sampled_from(named)] * max(1, len(usual)) if named else []) + usual
        vocabulary[name] = st.one_of(*choices) if choices else st.sampled_from([1, "x", True])
    return vocabulary


def _applies(schema: Schema, doc: dict, transaction: dict) -> bool:
    """Whether the transaction's ops apply to the graph as written (refusals are fine)."""
    memory = Memory(schema)
    try:
        if doc["nodes"]:
            memory.load(doc)
        memory.apply(transaction, dry_run=True)
    except HGMError:
        return False
    return True


def _meeting(condition: Any) -> list[dict[str, Any]]:
    """Attribute values that make a trigger's condition hold, as alternatives (a heuristic
    over ``attr OP literal``, ``has(attr)``, a bare ``attr``, ``and`` and ``or``; whatever
    else the condition says is left to chance).

    >>> from hgm_engine.query import parse_rule_file
    >>> trigger = parse_rule_file("rule r: on update action where status = 'failed' and priority > 1 then mark self as blocked").statements[0]
    >>> _meeting(trigger.condition)
    [{'status': 'failed', 'priority': 2}, {'status': 'failed', 'priority': 1.0}]
    """
    if condition is None:
        return [{}]
    if isinstance(condition, S.And):
        merged = [{}]
        for operand in condition.operands:
            merged = [{**a, **b} for a in merged for b in _meeting(operand)][:8]
        return merged
    if isinstance(condition, S.Or):
        return [m for operand in condition.operands for m in _meeting(operand)][:8]
    if isinstance(condition, S.AttrRef):
        return [{condition.name: True}]
    if isinstance(condition, S.FuncCall) and condition.name == "has" and condition.path is not None and len(condition.path.steps) == 1:
        return [{condition.path.steps[0].name: 1}]
    if isinstance(condition, S.Compare) and isinstance(condition.left, S.AttrRef) and isinstance(condition.right, (S.Literal, S.ListLiteral)):
        value = _literal(condition.right)
        name, op = condition.left.name, condition.op
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if op in ("=", "<=", ">=", "=~"):
            return [{name: value}]
        if op == "contains":
            return [{name: [value]}]
        if op == "in" and isinstance(value, list) and value:
            return [{name: value[0]}]
        if op == "<" and number:
            return [{name: value - 1}, {name: value / 2}]
        if op == ">" and number:
            return [{name: value + 1}, {name: (value + 1) / 2}]
    return [{}]


def _literal(node: Any) -> Any:
    return [_literal(i) for i in node.items] if isinstance(node, S.ListLiteral) else node.value


def _directed_op(draw, aim: Any, doc: dict, vocabulary: dict) -> dict[str, Any] | None:
    """An op aimed at a statement of the rule file: for a trigger, one that makes its event
    happen on a node its condition (probably) holds on; for a constraint, a new node of its
    type with values of the attributes it names. The random ops alone seldom hit a rule's
    exact event, type and condition together."""
    if isinstance(aim, S.ConstraintStatement):
        definition = aim.definition
        names = [n for n in sorted(vocabulary) if n in definition.text]
        values = {n: draw(vocabulary[n]) for n in names if draw(st.integers(0, 3))}
        trigger = S.TriggerStatement(aim.name, aim.name_span, "add", definition.node_type, definition.type_span,
                                     None, (), aim.span)
    else:
        trigger, values = aim, None
    of_type = [n["id"] for n in doc["nodes"] if n["type"] == trigger.node_type]
    values = dict(draw(st.sampled_from(_meeting(trigger.condition)))) if values is None else values
    if not values and vocabulary:
        name = draw(st.sampled_from(sorted(vocabulary)))
        values = {name: draw(vocabulary[name])}
    if trigger.event == "update":
        if not of_type:
            return None
        op = {"op": "update_node", "id": draw(st.sampled_from(of_type)), "set": values or {"note": "x"}}
        others = sorted(set(vocabulary) - set(values))
        if others and draw(st.booleans()):  # and drop an attribute the file speaks of
            op["unset"] = [draw(st.sampled_from(others))]
        return op
    if trigger.event == "delete":
        if not of_type:
            return None
        return {"op": "delete_node", "id": draw(st.sampled_from(of_type)), "cascade": draw(st.booleans())}
    op = {"op": "add_node", "type": trigger.node_type, **values}
    parents = [n["id"] for n in doc["nodes"] if n["type"] in ("goal", "action")]
    if parents and (trigger.node_type == "action" or draw(st.booleans())):
        op["parent"] = draw(st.sampled_from(parents))
    return op


def _scenarios(schema: Schema, constraints_hold: Callable[[dict], bool], vocabulary: dict, prefer: list[str],
               aims: tuple[Any, ...] = (), always: bool = False) -> st.SearchStrategy:
    """Scenarios: a graph the file's constraints hold on and a transaction whose ops apply to
    it. Half the time (``always``: every time) one or two of the ops are aimed at statements of
    the file (``aims``, see :func:`_directed_op`), with a node of the statement's type added to the graph when it
    has none to aim at."""

    @st.composite
    def scenario(draw) -> _Scenario:
        empty = {"format": "hgm-graph/1", "nodes": [], "edges": []}
        doc = draw(st.one_of(st.just(empty), graphs(schema, attributes=vocabulary, prefer=prefer),
                             graphs(schema, attributes=vocabulary, prefer=prefer)).filter(constraints_hold))
        aimed = draw(st.lists(st.sampled_from(aims), min_size=1, max_size=2)) if aims and (always or draw(st.booleans())) else []
        for aim in aimed:
            bigger = _with_a_node_for(draw, aim, doc, schema, vocabulary)
            if bigger is not doc and constraints_hold(bigger):
                doc = bigger
        # the nodes of the types the rule file is about are the ops' targets three times as often
        ids = [n["id"] for n in doc["nodes"] for _ in range(3 if n["type"] in prefer else 1)]
        edges = [(e["from"], e["to"], e["type"]) for e in doc["edges"]]
        tx = draw(transactions(schema, ids=ids, edges=edges, attributes=vocabulary, max_ops=3, prefer=prefer))
        ops = list(tx["ops"])
        for aim in aimed:
            op = _directed_op(draw, aim, doc, vocabulary)
            if op is not None:
                ops[draw(st.integers(0, len(ops) - 1))] = op
        tx = {**tx, "ops": ops}
        assume(_applies(schema, doc, tx))
        return _Scenario(doc, tx)

    return scenario()


def _with_a_node_for(draw, aim: Any, doc: dict, schema: Schema, vocabulary: dict) -> dict:
    """``doc`` with a node of the type a trigger on updates or deletions is about (under a new
    goal when it is an action), when it has none; otherwise ``doc`` itself."""
    if not isinstance(aim, S.TriggerStatement) or aim.event == "add" or aim.node_type not in schema.node_types:
        return doc
    if any(n["type"] == aim.node_type for n in doc["nodes"]) or aim.node_type == "result":
        return doc
    taken = {n["id"] for n in doc["nodes"]}
    node_id = next(f"t{i}" for i in range(len(taken) + 1) if f"t{i}" not in taken)
    names = sorted(vocabulary)
    chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=2)) if names else []
    node = {"id": node_id, "type": aim.node_type, **{n: draw(vocabulary[n]) for n in chosen}}
    nodes, edges = [*doc["nodes"], node], list(doc["edges"])
    if aim.node_type == "action":
        parent = {"id": node_id + "g", "type": "goal"}
        nodes.insert(len(nodes) - 1, parent)
        edges.append({"from": parent["id"], "to": node_id, "type": "parent_of"})
    return {**doc, "nodes": nodes, "edges": edges}


def _simpler(value: Any) -> list[Any]:
    """Shorter values of the same kind to try in a counterexample.

    >>> _simpler(0.28370114621978587)
    [0, 1, 0.3, 0.28]
    >>> _simpler(2), _simpler(True)
    ([0, 1], [])
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return []
    size = lambda v: (len(json.dumps(v)), abs(v))  # noqa: E731
    found = []
    for candidate in (0, 1, round(value), round(value, 1), round(value, 2)):
        if size(candidate) < size(value) and candidate not in found:
            found.append(candidate)
    return found


class _Checker:
    def __init__(self, text: str, schema: Schema, examples: int, seed: int):
        self.text = text
        self.schema = schema
        self.rule_set = parse_rules(text, schema)  # the errors of ``hgm rules check``
        self.file = parse_rule_file(text)
        self.examples = examples
        self.seed = seed
        constraints = [s for s in self.file.statements if isinstance(s, S.ConstraintStatement)]
        self.constraints_only = "\n".join(self.file.source(s) for s in constraints)
        self.vocabulary = _vocabulary(self.file, schema)
        self.aims = tuple(s for s in self.file.statements if isinstance(s, (S.TriggerStatement, S.ConstraintStatement)))
        self.prefer = list(dict.fromkeys(
            s.node_type if not isinstance(s, (S.PropagateStatement, S.ConstraintStatement)) else
            s.definition.node_type if isinstance(s, S.ConstraintStatement) else (s.from_type or s.to_type)
            for s in self.file.statements))
        self.prefer = [t for t in self.prefer if t is not None]

    def memory(self, doc: dict, rules: str | None) -> Memory | None:
        memory = Memory(self.schema)
        try:
            if doc["nodes"]:
                memory.load(doc)
            if rules and rules.strip():
                memory.load_rules(rules)
        except HGMError:
            return None
        return memory

    def holds(self, doc: dict) -> bool:
        return self.memory(doc, self.constraints_only) is not None

    def search(self, predicate: Callable[[_Scenario], bool], *, shrink: bool = True, aims: tuple | None = None) -> _Scenario | None:
        """The first scenario of ``examples`` random ones that meets ``predicate``, made
        minimal by :meth:`shrink`; None when none does. ``aims``: aim every scenario at these
        statements instead of half of them at the file's."""
        scenarios = (_scenarios(self.schema, self.holds, self.vocabulary, self.prefer, self.aims) if aims is None
                     else _scenarios(self.schema, self.holds, self.vocabulary, self.prefer, aims, always=True))
        try:
            found = find(
                scenarios, predicate,
                settings=settings(max_examples=self.examples, database=None, deadline=None,
                                  suppress_health_check=list(HealthCheck), phases=[Phase.generate]),
                random=random.Random(self.seed),
            )
        except (NoSuchExample, Unsatisfiable):
            return None
        return self.shrink(found, predicate) if shrink else found

    def shrink(self, scenario: _Scenario, predicate: Callable[[_Scenario], bool]) -> _Scenario:
        """Drop ops, nodes (with their edges), edges and attributes one at a time while the
        scenario stays valid and keeps meeting ``predicate`` (hypothesis' own shrinker is
        slow on predicates that run a memory twice)."""

        def candidates(s: _Scenario):
            ops = s.transaction["ops"]
            for i in range(len(ops)):
                yield _Scenario(s.graph, {**s.transaction, "ops": ops[:i] + ops[i + 1:]})
            nodes, edges = s.graph["nodes"], s.graph["edges"]
            for node in nodes:
                yield _Scenario({**s.graph, "nodes": [n for n in nodes if n is not node],
                                 "edges": [e for e in edges if node["id"] not in (e["from"], e["to"])]}, s.transaction)
            for edge in edges:
                yield _Scenario({**s.graph, "edges": [e for e in edges if e is not edge]}, s.transaction)
            for i, node in enumerate(nodes):
                for key in node:
                    if key not in ("id", "type"):
                        smaller = {k: v for k, v in node.items() if k != key}
                        yield _Scenario({**s.graph, "nodes": nodes[:i] + [smaller] + nodes[i + 1:]}, s.transaction)
            for i, op in enumerate(ops):
                fixed = ("op", "type", "from", "to", "with") + (() if op.get("op") == "add_node" else ("id",))
                for key in [k for k in op if k not in fixed]:
                    smaller = {k: v for k, v in op.items() if k != key}
                    yield _Scenario(s.graph, {**s.transaction, "ops": ops[:i] + [smaller] + ops[i + 1:]})
                for key in ("set", "unset"):  # one attribute fewer in an update
                    if isinstance(op.get(key), (dict, list)) and len(op[key]) > 1:
                        for name in list(op[key]):
                            less = {k: v for k, v in op[key].items() if k != name} if key == "set" else [n for n in op[key] if n != name]
                            yield _Scenario(s.graph, {**s.transaction, "ops": ops[:i] + [{**op, key: less}] + ops[i + 1:]})

            for i, node in enumerate(nodes):  # simpler values: 0.28370114621978587 -> 0.3
                for key, value in node.items():
                    for simpler in _simpler(value):
                        yield _Scenario({**s.graph, "nodes": nodes[:i] + [{**node, key: simpler}] + nodes[i + 1:]}, s.transaction)
            for i, op in enumerate(ops):
                for key, value in op.items():
                    if key in ("op", "id", "type", "from", "to", "parent", "with"):
                        continue
                    if key == "set" and isinstance(value, dict):
                        for name, inner in value.items():
                            for simpler in _simpler(inner):
                                yield _Scenario(s.graph, {**s.transaction, "ops": ops[:i] + [{**op, "set": {**value, name: simpler}}] + ops[i + 1:]})
                    for simpler in _simpler(value):
                        yield _Scenario(s.graph, {**s.transaction, "ops": ops[:i] + [{**op, key: simpler}] + ops[i + 1:]})

        changed = True
        while changed:
            changed = False
            for candidate in candidates(scenario):
                if (candidate.transaction["ops"] and self.holds(candidate.graph)
                        and _applies(self.schema, candidate.graph, candidate.transaction) and predicate(candidate)):
                    scenario, changed = candidate, True
                    break
        return scenario

    def dry_run(self, scenario: _Scenario, rules: str | None) -> Any:
        memory = self.memory(scenario.graph, rules)
        if memory is None:
            return None
        try:
            return memory.apply(scenario.transaction, dry_run=True)
        except TransactionError as err:
            return err

    # -- the four searches -----------------------------------------------------------------

    def rule_loop(self) -> Finding | None:
        if not self.rule_set.triggers:
            return None

        def loops(s: _Scenario) -> bool:
            outcome = self.dry_run(s, self.text)
            return isinstance(outcome, TransactionError) and outcome.category == "rule-loop"

        found = self.search(loops)
        if found is None:
            return None
        return Finding("rule-loop", self.dry_run(found, self.text).message, found.graph, found.transaction)

    def reversed_text(self) -> str:
        return "\n".join(self.file.source(s) for s in reversed(self.file.statements))

    def state_after(self, scenario: _Scenario, rules: str) -> Any:
        memory = self.memory(scenario.graph, rules)
        if memory is None:
            return None
        try:
            report = memory.apply(scenario.transaction)
        except TransactionError as err:
            return ("error", err.category)
        nodes = []
        for node in memory.export()["nodes"]:
            if "dirty_marks" in node:
                node = {**node, "dirty_marks": sorted(node["dirty_marks"], key=lambda m: json.dumps(m, sort_keys=True))}
            nodes.append(node)
        return (report.committed, nodes, memory.export()["edges"])

    def non_confluence(self) -> Finding | None:
        if len(self.rule_set.triggers) < 2:
            return None
        other = self.reversed_text()

        def differs(s: _Scenario) -> bool:
            first, second = self.state_after(s, self.text), self.state_after(s, other)
            return first is not None and second is not None and first != second

        found = self.search(differs)
        if found is None:
            return None
        return Finding("non-confluence", "the triggers in file order and in reverse order leave different states "
                       "after this transaction", found.graph, found.transaction)

    def marks_refused(self) -> Finding | None:
        if not self.constraints_only or not (self.rule_set.triggers or self.rule_set.propagations):
            return None

        def refused(s: _Scenario) -> bool:
            plain = self.dry_run(s, self.constraints_only)
            ruled = self.dry_run(s, self.text)
            if plain is None or ruled is None or isinstance(plain, HGMError) or isinstance(ruled, HGMError):
                return False
            return not plain.violations and bool(ruled.violations)

        found = self.search(refused)
        if found is None:
            return None
        report = self.dry_run(found, self.text)
        broken = ", ".join(sorted({f"{v.constraint} at {v.node}" for v in report.violations}))
        rules = ", ".join(report.fired_rules) or "propagation"
        return Finding("marks-refused", f"without the triggers this transaction commits; with them ({rules}) "
                       f"it is refused: {broken}", found.graph, found.transaction)

    def unsatisfiable(self) -> Finding | None:
        """A constraint of the file and another constraint on the same node type (of the file,
        built in, or the type's attribute schema) that new nodes of the type met one at a time
        but never together."""
        by_type: dict[str, list[str]] = {}
        for c in self.rule_set.constraints:
            by_type.setdefault(_constraint_type(c.text), []).append(c.name)
        if not by_type:
            return None
        observed: dict[str, list[frozenset[str]]] = {}  # node type -> the constraints each new node broke

        def broken_by_new_nodes(s: _Scenario) -> list[tuple[str, str, frozenset[str], int]] | None:
            report = self.dry_run(s, self.constraints_only)
            if report is None or isinstance(report, HGMError):
                return None
            broken: dict[str, set[str]] = {}
            for v in report.violations:
                broken.setdefault(v.node, set()).add(v.constraint)
            added = [(c["id"], c["node"]["type"]) for c in report.to_json()["changes"] if c["kind"] == "node_added"]
            return [(n, t, frozenset(broken.get(n, ())), len(report.violations)) for n, t in added if t in by_type]

        def record(s: _Scenario) -> bool:
            for _, node_type, broken, _ in broken_by_new_nodes(s) or ():
                observed.setdefault(node_type, []).append(broken)
            return False

        self.search(record, shrink=False)
        for node_type, names in by_type.items():
            seen = observed.get(node_type, [])
            others = list(dict.fromkeys([*names, *sorted({c for broken in seen for c in broken})]))
            for a in names:
                for b in others:
                    if b == a:
                        continue
                    only_a = any(broken == {b} for broken in seen)
                    only_b = any(broken == {a} for broken in seen)
                    both = any(a not in broken and b not in broken for broken in seen)
                    if not (only_a and only_b) or both:
                        continue

                    def both_hold(s: _Scenario, t=node_type, a=a, b=b) -> bool:
                        return any(nt == t and a not in broken and b not in broken for _, nt, broken, _ in broken_by_new_nodes(s) or ())

                    # a second search, every scenario adding nodes aimed at the two constraints
                    aims = tuple(st_ for st_ in self.aims if isinstance(st_, S.ConstraintStatement) and st_.name in (a, b))
                    if self.search(both_hold, shrink=False, aims=aims) is not None:
                        continue

                    def a_holds_b_breaks(s: _Scenario, t=node_type, b=b) -> bool:
                        return any(nt == t and broken == {b} and count == 1 for _, nt, broken, count in broken_by_new_nodes(s) or ())

                    found = self.search(a_holds_b_breaks)
                    if found is not None:
                        return Finding("unsatisfiable", f"constraints {a} and {b} were each met by new {node_type} nodes, "
                                       f"never both by one in {self.examples} examples; here {a} holds and {b} breaks",
                                       found.graph, found.transaction)
        return None


def _constraint_type(text: str) -> str:
    """The node type a constraint's text is about (``each TYPE ...``)."""
    return text.split()[1]


def check_rules(text: str, schema: Schema = DEFAULT_SCHEMA, *, examples: int = 100, seed: int | None = None) -> CheckResult:
    """Search ``examples`` random scenarios for each problem of the module docstring; the rule
    file's errors raise as :func:`~hgm_engine.rules.parse_rules` raises them."""
    if examples < 1:
        raise RequestError.single("invalid-argument", f"the number of examples must be at least 1, not {examples}")
    seed = random.randrange(2**32) if seed is None else seed
    checker = _Checker(text, schema, examples, seed)
    found = [checker.rule_loop(), checker.non_confluence(), checker.marks_refused(), checker.unsatisfiable()]
    return CheckResult(examples, seed, tuple(f for f in found if f is not None))
