"""Constraints: what must hold after every transaction, checked only where it changed.

Built in for the default schema: every action has exactly one parent and it is a goal or an
action; every result is produced by at least one action; ``parent_of``, ``before`` and
``replaces`` are acyclic; each edge type connects only the node types its rule allows; node
attributes match their type's JSON Schema. User constraints are written in the path
language — ``each TYPE [where COND] must COND`` — and are checked on the nodes of that type
within reach of the change (how far a constraint looks is computed from its conditions).

>>> c = UserConstraint.compile("done_has_result", "each action where status = 'done' must exists(results)")
>>> c.radius
1
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import attrs

from hgm_engine.errors import Problem, QueryAnalysisError
from hgm_engine.model import thaw
from hgm_engine.model import compile_schema
from hgm_engine.model import Change
from hgm_engine.query import analyze_constraint, parse_constraint
from hgm_engine.query import Program, build
from hgm_engine.query import optimize
from hgm_engine.query.plan import (
    AllNodes,
    AllOf,
    AnyOf,
    Attr,
    Cmp,
    Const,
    Filter,
    Navigate,
    Negate,
    ParamNodes,
    PathCount,
    PathExists,
    PathPlan,
    QueryPlan,
    Truthy,
    plan_condition,
)
from hgm_engine.model import DEFAULT_ATTRIBUTE_SCHEMAS, DEFAULT_SCHEMA, Closure, Hop, Schema
from hgm_engine.txn import Violation

__all__ = ["UserConstraint", "ConstraintChecker", "check_full", "UNCOMPILABLE", "uncompilable_problem"]

# What compiling a condition can raise besides hgm's own errors when the text is nested deeper
# than Python can follow: the recursion limit in the planner, or the generated code's nesting
# limits (``too many nested parentheses``). They mean the same thing to the user.
UNCOMPILABLE = (RecursionError, SyntaxError, MemoryError)


def uncompilable_problem(exc: BaseException) -> Problem:
    """The ``limit-exceeded`` problem for one of :data:`UNCOMPILABLE` (no position: the caller
    places it).

    >>> uncompilable_problem(RecursionError("maximum recursion depth exceeded")).message
    'too deeply nested to compile (maximum recursion depth exceeded)'
    """
    detail = exc.msg if isinstance(exc, SyntaxError) and exc.msg else str(exc) or type(exc).__name__
    return Problem("limit-exceeded", f"too deeply nested to compile ({detail})")


def _path_radius(path: PathPlan) -> float:
    depth: float = 0
    for op in path.ops:
        if isinstance(op, Navigate):
            relation = op.relation
            if isinstance(relation, Hop):
                if op.repeat is None:
                    depth += 1
                elif op.repeat[1] is None:
                    return math.inf
                else:
                    depth += op.repeat[1]
            elif isinstance(relation, Closure):
                return math.inf
            else:  # siblings go up and down; version chains have no bound
                depth += 2 if type(relation).__name__ == "Siblings" else math.inf
            for predicate in op.predicates:
                if isinstance(predicate, Filter):
                    depth = max(depth, depth + _condition_radius(predicate.condition))
        elif isinstance(op, Filter):
            depth = max(depth, depth + _condition_radius(op.condition))
    return depth


def _condition_radius(cond: Any) -> float:
    """How many hops from the node a condition looks."""
    if isinstance(cond, (AllOf, AnyOf)):
        return max((_condition_radius(c) for c in cond.items), default=0)
    if isinstance(cond, Negate):
        return _condition_radius(cond.item)
    if isinstance(cond, Truthy):
        return _condition_radius(cond.operand)
    if isinstance(cond, Cmp):
        return max(_condition_radius(cond.left), _condition_radius(cond.right))
    if isinstance(cond, (PathCount, PathExists)):
        return _path_radius(cond.path)
    return 0


@attrs.frozen
class UserConstraint:
    """A constraint in the path language, compiled once."""

    name: str
    text: str
    node_type: str
    radius: float  # hops its conditions look; inf means "check every node of the type"
    scoped: Program = attrs.field(repr=False, eq=False)  # violators among $scope
    everywhere: Program = attrs.field(repr=False, eq=False)  # violators in the whole graph

    @classmethod
    def compile(cls, name: str, text: str, schema: Schema = DEFAULT_SCHEMA) -> "UserConstraint":
        """Parse and check ``text``; errors carry positions in ``text``. A text nested too
        deeply to compile is a ``limit-exceeded`` error, never a Python one.

        >>> from hgm_engine.errors import HGMError
        >>> try:
        ...     UserConstraint.compile("deep", "each fact must " + "not " * 200 + "has(content)")
        ... except HGMError as err:
        ...     print(isinstance(err, ValueError), bool(err.category))
        True True
        """
        if not isinstance(name, str) or not name:
            raise QueryAnalysisError([Problem("invalid-argument", "a constraint needs a non-empty name")])
        try:
            return cls._compile(name, text, schema)
        except UNCOMPILABLE as exc:
            raise QueryAnalysisError([attrs.evolve(uncompilable_problem(exc), line=1, column=1)], text) from None

    @classmethod
    def _compile(cls, name: str, text: str, schema: Schema) -> "UserConstraint":
        definition = parse_constraint(text)
        analyze_constraint(definition, schema)
        radius = max(
            _condition_radius(plan_condition(c, schema)) for c in (definition.where, definition.must) if c is not None
        )
        # Violators are the nodes of the type that meet ``where`` and fail ``must``.
        parts = [Cmp("=", Attr("type"), Const(definition.node_type))]
        if definition.where is not None:
            parts.append(plan_condition(definition.where, schema))
        parts.append(Negate(plan_condition(definition.must, schema)))
        violator = Filter(AllOf(tuple(parts)))
        scoped = optimize(QueryPlan((PathPlan(ParamNodes("scope"), (violator,)),)))
        everywhere = optimize(QueryPlan((PathPlan(AllNodes(), (violator,)),)))
        return cls(name, text, definition.node_type, radius, build(scoped), build(everywhere))

    def violations(self, view, scope: Iterable[str] | None) -> list[Violation]:
        """Nodes of ``view`` breaking this constraint (among ``scope``, or all when None)."""
        if scope is None or math.isinf(self.radius):
            ids = self.everywhere.run(view)
        else:
            ids = self.scoped.run(view, params={"scope": tuple(scope)})
        return [Violation(self.name, node_id, f"{node_id!r} breaks: {self.text}") for node_id in ids]


class ConstraintChecker:
    """Checks a transaction's net changes against the schema's rules and user constraints."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self.user: dict[str, UserConstraint] = {}
        # The compiled checks decide valid/invalid; jsonschema validators (built once, on first
        # need, since importing jsonschema costs start-up time) write the messages.
        self._fast = {node_type: compile_schema(spec) for node_type, spec in schema.attribute_schemas.items()}
        self._validators: dict[str, Any] = {}
        if schema.attribute_schemas is not DEFAULT_SCHEMA.attribute_schemas and any(
            spec is not DEFAULT_ATTRIBUTE_SCHEMAS.get(t) for t, spec in schema.attribute_schemas.items()
        ):
            import jsonschema

            for spec in schema.attribute_schemas.values():
                jsonschema.validators.validator_for(spec).check_schema(spec)

    def _validator(self, node_type: str):
        validator = self._validators.get(node_type)
        if validator is None:
            import jsonschema

            spec = self.schema.attribute_schemas[node_type]
            validator = self._validators[node_type] = jsonschema.validators.validator_for(spec)(spec)
        return validator

    def add(self, constraint: UserConstraint) -> None:
        self.user[constraint.name] = constraint

    def remove(self, name: str) -> None:
        del self.user[name]

    # -- checking -----------------------------------------------------------------------------

    def check(self, view, changes: list[Change], extra: Iterable[Violation] = ()) -> list[Violation]:
        """Every violation caused by ``changes`` in ``view`` (the state after them)."""
        violations = list(extra)
        touched: dict[str, None] = {}
        # The structure rules of a node (one parent for an action, of a goal or an action; a
        # producer for a result) read its type, its incoming edges and their sources' types;
        # types never change, so only a node added or one whose incoming edges changed can
        # break them (an attribute update, the source end of an edge cannot).
        placed: set[str] = set()
        created: set[str] = set()
        added_edges = []
        changed_nodes = []
        for change in changes:
            kind = change.kind
            # the ids each change touches (Change.touched, inlined), in order
            if kind == "edge_added" or kind == "edge_updated":
                edge = change.after
                touched[edge.source] = touched[edge.target] = None
                added_edges.append(edge)
                placed.add(edge.target)
            elif kind == "edge_removed":
                edge = change.before
                touched[edge.source] = touched[edge.target] = None
                placed.add(edge.target)
            elif kind == "node_added":
                node = change.after
                touched[node.id] = None
                changed_nodes.append(node)
                placed.add(node.id)
                created.add(node.id)
            elif kind == "node_updated":
                node = change.after
                touched[node.id] = None
                changed_nodes.append(node)
            else:
                for node_id in change.touched:
                    touched[node_id] = None
        # in the order the changes touch them, as before
        present = [node_id for node_id in touched if node_id in placed and node_id in view]
        # a node the commit made has only the commit's edges: its parents and producers are
        # read from them, without building its incoming adjacency
        into_created: dict[str, dict[str, list[str]]] = {node_id: {} for node_id in created}
        for edge in added_edges:
            found = into_created.get(edge.target)
            if found is not None:
                found.setdefault(edge.type, []).append(edge.source)
        violations.extend(self._structure(view, present, into_created))
        violations.extend(self._edges(view, added_edges, created=created))
        violations.extend(self._attributes(changed_nodes))
        if self.user:
            node_seeds = [c.after.id for c in changes if c.kind in ("node_added", "node_updated")]
            edge_seeds = [n for c in changes if c.kind.startswith("edge") for n in c.touched]
            violations.extend(self._user(view, node_seeds, edge_seeds))
        return _unique(violations)

    def check_all(self, view) -> list[Violation]:
        """Every violation in the whole of ``view`` (used when loading a graph file).

        One pass over the edges (endpoint types, parents, producers), attribute checks per
        node type, and one cycle search per acyclic edge type, so that checking a million
        nodes stays in seconds."""
        nodes = view.node_map()
        edges = list(view.iter_edges())
        rules = self.schema.edge_rules
        allowed: dict[tuple[str, str, str], bool] = {}
        first_parent_type: dict[str, str] = {}  # node -> the type of its first parent
        extra_parents: set[str] = set()
        produced: set[str] = set()
        refused: list = []
        for edge in edges:
            edge_type = edge.type
            source_type = nodes[edge.source].type
            target_type = nodes[edge.target].type
            key = (edge_type, source_type, target_type)
            ok = allowed.get(key)
            if ok is None:
                rule = rules.get(edge_type)
                ok = allowed[key] = rule is None or rule.allows(source_type, target_type)
            if not ok:
                refused.append(edge)
            if edge_type == "parent_of":
                if edge.target in first_parent_type:
                    extra_parents.add(edge.target)
                else:
                    first_parent_type[edge.target] = source_type
            elif edge_type == "produces" and source_type == "action":
                produced.add(edge.target)
        violations: list[Violation] = []
        misplaced = [
            node_id
            for node_id in view.ids_of_type("action")
            if first_parent_type.get(node_id) not in ("goal", "action") or node_id in extra_parents
        ]
        misplaced += [node_id for node_id in view.ids_of_type("result") if node_id not in produced]
        if misplaced:
            violations.extend(self._structure(view, sorted(misplaced, key=lambda n: nodes[n].seq)))
        for edge_type, cycle in view.find_cycles(self.schema.acyclic_edge_types).items():
            if cycle:
                violations.append(
                    Violation(f"{edge_type}_acyclic", cycle[0], f"{edge_type} cycle: {' -> '.join(cycle + cycle[:1])}")
                )
        violations.extend(self._edges(view, refused, check_cycles=False))
        attribute_violations = [v for node_type in self._fast for v in self._attributes(view.nodes_of_type(node_type))]
        attribute_violations.sort(key=lambda v: nodes[v.node].seq)  # creation order, as elsewhere
        violations.extend(attribute_violations)
        for constraint in self.user.values():
            violations.extend(constraint.violations(view, None))
        return _unique(violations)

    def _structure(self, view, node_ids: list[str], incoming: Mapping[str, Mapping[str, list[str]]] | None = None) -> list[Violation]:
        """The structure rules of ``node_ids`` (``incoming``: for some of them, the sources of
        their incoming edges by type, when known without their adjacency)."""
        out = []
        nodes = view.node_map()
        known = incoming or {}
        for node_id in node_ids:
            node = nodes[node_id]
            given = known.get(node_id)
            if node.type == "action":
                parents = view.in_adjacency(node_id).by_type.get("parent_of", ()) if given is None else given.get("parent_of", ())
                if len(parents) != 1:
                    out.append(
                        Violation(
                            "action_has_one_parent",
                            node_id,
                            f"action {node_id!r} has {len(parents)} parents; an action has exactly one",
                        )
                    )
                elif nodes[parents[0]].type not in ("goal", "action"):
                    out.append(
                        Violation(
                            "action_parent_is_goal_or_action",
                            node_id,
                            f"action {node_id!r} is under {nodes[parents[0]].type} {parents[0]!r}; "
                            "an action's parent is a goal or an action",
                        )
                    )
            elif node.type == "result":
                producers = view.in_adjacency(node_id).by_type.get("produces", ()) if given is None else given.get("produces", ())
                if not any(nodes[p].type == "action" for p in producers):
                    out.append(
                        Violation(
                            "result_is_produced",
                            node_id,
                            f"result {node_id!r} is produced by no action",
                        )
                    )
        return out

    def _edges(self, view, edges: list, check_cycles: bool = True, created: set[str] = frozenset()) -> list[Violation]:
        """Endpoint and cycle violations of ``edges`` (the commit's added and updated ones,
        ``created``: the nodes it added, whose every edge is among them)."""
        out = []
        nodes = view.node_map()
        allowed: dict[tuple[str, str, str], bool] = {}
        rules = self.schema.edge_rules
        closing: dict[str, set[tuple[str, str]]] = {}
        if check_cycles:
            # A node made by this commit has only the commit's edges: what it reaches is what
            # they reach from it. An edge into it closes no cycle when that stays among the
            # commit's new nodes without its source (a new subtree under its parent), and the
            # walk need not start there (_may_close).
            for edge_type in self.schema.acyclic_edge_types:
                typed = [  # the commit's edges: both ends are in the view
                    e for e in edges
                    if e is not None and e.type == edge_type
                ]
                if typed and created:
                    typed = _may_close(typed, created)
                if typed:
                    closing[edge_type] = _closing_cycles(view, typed, edge_type)
        for edge in edges:
            if edge is None:
                continue
            source, target = nodes.get(edge.source), nodes.get(edge.target)
            if source is None or target is None:
                continue
            source_type, target_type = source.type, target.type
            key = (edge.type, source_type, target_type)
            ok = allowed.get(key)
            if ok is None:
                rule = rules.get(edge.type)
                ok = allowed[key] = rule is None or rule.allows(source_type, target_type)
            if not ok:
                rule = rules[edge.type]
                out.append(
                    Violation(
                        f"{edge.type}_endpoints",
                        edge.source,
                        f"{edge.type} from {source_type} {edge.source!r} to {target_type} {edge.target!r}; "
                        f"allowed: {rule.describe()}",
                    )
                )
            if check_cycles and (edge.source, edge.target) in closing.get(edge.type, ()):
                out.append(
                    Violation(
                        f"{edge.type}_acyclic",
                        edge.source,
                        f"{edge.type} {edge.source!r} -> {edge.target!r} closes a cycle",
                    )
                )
        return out

    def _attributes(self, nodes: list) -> list[Violation]:
        out = []
        for node in nodes:
            if node.type not in self._fast:
                continue
            fast = self._fast[node.type]
            if fast is not None and fast(node.attrs):
                continue
            validator = self._validator(node.type)
            for error in sorted(validator.iter_errors(thaw(node.attrs)), key=lambda e: list(e.path)):
                where = ".".join(str(p) for p in error.absolute_path) or "attributes"
                out.append(
                    Violation(f"{node.type}_attributes", node.id, f"{node.id!r} {where}: {error.message}")
                )
        return out

    def _user(self, view, node_seeds: list[str], edge_seeds: list[str]) -> list[Violation]:
        """User constraints on the nodes whose view the changes can reach.

        A constraint that looks ``r`` hops from its node depends on the attributes of nodes
        up to ``r`` hops away and on edges whose ends are up to ``r - 1`` hops away; the scope
        is computed once per radius, however many constraints share it."""
        out = []
        scopes: dict[int, list[str]] = {}
        for constraint in self.user.values():
            if math.isinf(constraint.radius):
                out.extend(constraint.violations(view, None))
                continue
            radius = int(constraint.radius)
            scope = scopes.get(radius)
            if scope is None:
                nodes = [n for n in node_seeds if n in view]
                ends = [n for n in edge_seeds if n in view]
                scope = _neighbourhood(view, nodes, radius)
                if radius >= 1:
                    scope = list(dict.fromkeys(scope + _neighbourhood(view, ends, radius - 1)))
                scopes[radius] = scope
            out.extend(constraint.violations(view, scope))
        return out


def _may_close(edges: list, created: set[str]) -> list:
    """The ones of ``edges`` (the commit's added edges of one type) that may lie on a cycle of
    that type: all but an edge ``s -> t`` into a node ``t`` the commit made from which the
    commit's edges reach only nodes the commit made, when ``s`` is older (then it is not among
    them) or ``t`` leads nowhere. A node the commit made has no edge but the commit's, so that
    is all ``t`` reaches in the view: no path back to ``s``, no cycle. Linear in the edges:
    the nodes that reach an older one are found backwards from the edges into older nodes.

    >>> from types import SimpleNamespace as E
    >>> chain = [E(source="g", target="n1"), E(source="n1", target="n2")]
    >>> len(_may_close(chain, {"n1", "n2"})), len(_may_close(chain + [E(source="n2", target="g")], {"n1", "n2"}))
    (0, 3)
    """
    leaving: set[str] = set()
    into: dict[str, list[str]] = {}  # node made here -> the nodes made here with an edge into it
    escaping: list[str] = []  # nodes made here with an edge into an older node
    for edge in edges:
        source, target = edge.source, edge.target
        leaving.add(source)
        if source in created:
            if target in created:
                into.setdefault(target, []).append(source)
            else:
                escaping.append(source)
    reaches_older = set(escaping)
    while escaping:
        following = []
        for node_id in escaping:
            for earlier in into.get(node_id, ()):
                if earlier not in reaches_older:
                    reaches_older.add(earlier)
                    following.append(earlier)
        escaping = following
    return [
        edge for edge in edges
        if edge.source == edge.target or edge.target not in created or edge.target in reaches_older
        or (edge.source in created and edge.target in leaving)
    ]


def _closing_cycles(view, edges: list, edge_type: str) -> set[tuple[str, str]]:
    """``(source, target)`` of each of ``edges`` (all of ``edge_type``) that lies on a cycle of
    ``edge_type`` edges in ``view``: its target reaches its source (a self-loop included).

    One walk for all of them, not one per edge (a chain of n new steps would cost n²): a
    cycle through ``s -> t`` runs through ancestors of ``s`` only, so the strongly connected
    components of the ancestors of the edges' sources (Tarjan's algorithm along incoming
    edges, each ancestor visited once) say for every edge whether its ends share one. Walking
    backwards keeps a tree's check to its ancestors."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    component: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = 0
    for root in dict.fromkeys(e.source for e in edges):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(view.in_adjacency(root).by_type.get(edge_type, ())))]
        while work:
            node, previous = work[-1]
            for earlier in previous:
                if earlier not in index:
                    index[earlier] = low[earlier] = len(index)
                    stack.append(earlier)
                    on_stack.add(earlier)
                    work.append((earlier, iter(view.in_adjacency(earlier).by_type.get(edge_type, ()))))
                    break
                if earlier in on_stack and index[earlier] < low[node]:
                    low[node] = index[earlier]
            else:
                work.pop()
                if work and low[node] < low[work[-1][0]]:
                    low[work[-1][0]] = low[node]
                if low[node] == index[node]:
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component[member] = found
                        if member == node:
                            break
                    found += 1
    return {
        (e.source, e.target)
        for e in edges
        if e.source == e.target or (e.target in component and component[e.target] == component[e.source])
    }


def _neighbourhood(view, seeds: list[str], radius: int) -> list[str]:
    seen = dict.fromkeys(seeds)
    level = list(seeds)
    for _ in range(radius):
        following = []
        for node_id in level:
            for _, other in view.out_adjacency(node_id).pairs:
                if other not in seen:
                    seen[other] = None
                    following.append(other)
            for _, other in view.in_adjacency(node_id).pairs:
                if other not in seen:
                    seen[other] = None
                    following.append(other)
        level = following
    return list(seen)


def _unique(violations: list[Violation]) -> list[Violation]:
    return list(dict.fromkeys(violations))


def check_full(view, schema: Schema = DEFAULT_SCHEMA, constraints: Mapping[str, UserConstraint] | None = None) -> list[Violation]:
    """Every violation in a whole graph (for loading files and ``hgm validate``)."""
    checker = ConstraintChecker(schema)
    for constraint in (constraints or {}).values():
        checker.add(constraint)
    return checker.check_all(view)
