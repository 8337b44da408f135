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
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample, Unsatisfiable

from hgm_engine.errors import HGMError, RequestError, TransactionError
from hgm_engine.memory import Memory
from hgm_engine.model import DEFAULT_SCHEMA, Schema
from hgm_engine.query import parse_rule_file
from hgm_engine.query import syntax as S
from hgm_engine.rules import parse_rules
from hgm_engine.testing.strategies import graphs, transactions

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


def _vocabulary(rule_file: S.RuleFile) -> dict[str, st.SearchStrategy]:
    """The attributes a rule file reads or sets, each with the values it names (and null):
    random transactions that use them reach the rules' conditions far more often."""
    values: dict[str, list] = {}

    def literal(node: Any) -> Any:
        return [literal(i) for i in node.items] if isinstance(node, S.ListLiteral) else node.value

    def visit(node: Any) -> None:
        if isinstance(node, S.Compare) and isinstance(node.left, S.AttrRef):
            found = values.setdefault(node.left.name, [])
            if isinstance(node.right, (S.Literal, S.ListLiteral)):
                value = literal(node.right)
                found.extend(value if node.op in ("in", "not in") and isinstance(value, list) else [value])
        elif isinstance(node, S.AttrRef):
            values.setdefault(node.name, [True])
        elif isinstance(node, S.FuncCall) and node.name == "has" and node.path is not None:
            values.setdefault(node.path.steps[0].name, []).append(1)
        elif isinstance(node, S.Assignment):
            values.setdefault(node.name, []).append(literal(node.value))
        if attrs.has(type(node)):
            for field in attrs.fields(type(node)):
                visit(getattr(node, field.name))
        elif isinstance(node, tuple):
            for item in node:
                visit(item)

    visit(rule_file.statements)
    json_ok = lambda v: v is None or isinstance(v, (bool, int, float, str, list))  # noqa: E731
    return {
        name: st.sampled_from([v for v in dict.fromkeys(map(json.dumps, found)) if json_ok(json.loads(v))] or ["null"]).map(json.loads)
        for name, found in values.items() if name not in ("id", "type", "dirty", "dirty_marks")
    }


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


def _scenarios(schema: Schema, constraints_hold: Callable[[dict], bool], vocabulary: dict, prefer: list[str]) -> st.SearchStrategy:
    @st.composite
    def scenario(draw) -> _Scenario:
        doc = draw(st.one_of(st.just({"format": "hgm-graph/1", "nodes": [], "edges": []}),
                             graphs(schema, attributes=vocabulary, prefer=prefer)).filter(constraints_hold))
        ids = [n["id"] for n in doc["nodes"]]
        edges = [(e["from"], e["to"], e["type"]) for e in doc["edges"]]
        transaction = transactions(schema, ids=ids, edges=edges, attributes=vocabulary, max_ops=3)
        return _Scenario(doc, draw(transaction.filter(lambda tx: _applies(schema, doc, tx))))

    return scenario()


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
        self.vocabulary = _vocabulary(self.file)
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

    def search(self, predicate: Callable[[_Scenario], bool], *, shrink: bool = True) -> _Scenario | None:
        """The first scenario of ``examples`` random ones that meets ``predicate``, made
        minimal by :meth:`shrink`; None when none does."""
        try:
            found = find(
                _scenarios(self.schema, self.holds, self.vocabulary, self.prefer), predicate,
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
        by_type: dict[str, list[str]] = {}
        for c in self.rule_set.constraints:
            by_type.setdefault(_constraint_type(c.text), []).append(c.name)
        pairs = [(t, a, b) for t, names in by_type.items() for i, a in enumerate(names) for b in names[i + 1:]]
        if not pairs:
            return None
        seen: dict[tuple[str, str], set[str]] = {}

        def new_nodes(s: _Scenario, report: Any) -> dict[str, str]:
            return {c["id"]: c["node"]["type"] for c in report.to_json()["changes"] if c["kind"] == "node_added"}

        def met(s: _Scenario) -> tuple[Any, dict[str, set[str]]] | None:
            report = self.dry_run(s, self.constraints_only)
            if report is None or isinstance(report, HGMError):
                return None
            broken: dict[str, set[str]] = {}
            for v in report.violations:
                broken.setdefault(v.node, set()).add(v.constraint)
            return report, broken

        def record(s: _Scenario) -> bool:
            outcome = met(s)
            if outcome is not None:
                report, broken = outcome
                for node, node_type in new_nodes(s, report).items():
                    for t, a, b in pairs:
                        if node_type == t:
                            holding = {a, b} - broken.get(node, set())
                            seen.setdefault((a, b), set()).update({"a"} if holding == {a} else {"b"} if holding == {b} else {"both"} if holding == {a, b} else set())
            return False

        self.search(record, shrink=False)
        for t, a, b in pairs:
            kinds = seen.get((a, b), set())
            if {"a", "b"} <= kinds and "both" not in kinds:
                def one_not_other(s: _Scenario, t=t, a=a, b=b) -> bool:
                    outcome = met(s)
                    if outcome is None:
                        return False
                    report, broken = outcome
                    return any(nt == t and a not in broken.get(n, set()) and b in broken.get(n, set())
                               for n, nt in new_nodes(s, report).items())

                found = self.search(one_not_other)
                if found is not None:
                    return Finding("unsatisfiable", f"constraints {a} and {b} were each met by new {t} nodes, never both "
                                   f"by one in {self.examples} examples; here {a} holds and {b} breaks",
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
