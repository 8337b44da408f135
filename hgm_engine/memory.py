"""Memory: the object an agent holds — a graph, its schema, its history and its store.

Reading is ``query`` (optionally ``as_of`` an earlier ``t`` or a snapshot name); changing is
only through transactions: ``with memory.transaction(...) as tx`` or ``memory.apply(doc)``.

>>> m = Memory()
>>> with m.transaction(author="planner", reason="start a plan") as tx:
...     trip = tx.add_node("goal", id="trip", content="Plan a trip")
...     _ = tx.add_node("action", id="visit", parent="trip", status="pending")
>>> tx.report.t
1
>>> with m.transaction(author="planner", reason="visited") as tx:
...     tx.update_node("visit", set={"status": "done"})
>>> m.query("root.actions.where(status = 'pending')").ids
[]
>>> m.query("root.actions.where(status = 'pending')", as_of=1).ids
['visit']
>>> m.diff(1, 2)
[{'kind': 'node_updated', 'id': 'visit', 'before': {'status': 'pending'}, 'after': {'status': 'done'}}]
"""

from __future__ import annotations

import contextlib
import pathlib
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any, Callable, Iterable, Iterator, Mapping

from hgm_engine.rules import ConstraintChecker, UserConstraint
from hgm_engine.errors import GraphFileError, HGMError, PathError, Problem, RequestError
from hgm_engine.query import DEFAULT_LIMITS
from hgm_engine.model import MemoryGraph, Node, bulk_allocation
from hgm_engine.txn import Commit, historical_view, net_changes
from hgm_engine.model import Change, GraphOverlay, apply_changes
from hgm_engine.rules import RuleEngine
from hgm_engine.rules import RuleSet, parse_rules
from hgm_engine.query import CompiledQuery, Limits, QueryCache, QueryResult
from hgm_engine.model import DEFAULT_SCHEMA, Schema
from hgm_engine.store.base import InMemoryStore, Store
from hgm_engine.store.graphfile import graph_from_document, parse_graph_text
from hgm_engine.txn import (
    AddEdge,
    AddNode,
    OpContext,
    TransactionDoc,
    TransactionReport,
    Violation,
    apply_op,
    change_to_json,
    orphan_violations,
    parse_op,
    parse_transaction,
)
from hgm_engine.errors import ConflictError, TransactionError, TransactionRefused

__all__ = ["Memory", "Transaction", "FRONTIER_QUERY"]

FRONTIER_QUERY = (
    "#$goal.descendants.where(type = 'action', status = 'pending', not has(dirty), "
    "not exists(prev.where(status != 'done')))"
)


def _fail(category: str, message: str, where: str | None = None) -> RequestError:
    return RequestError([Problem(category, message, where=where)])


class _ReadWriteLock:
    """Many readers or one writer: queries never see a commit half-applied."""

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._condition:
            while self._writer:
                self._condition.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._condition:
                self._readers -= 1
                if not self._readers:
                    self._condition.notify_all()

    @contextlib.contextmanager
    def writing(self, *, blocking: bool = True) -> Iterator[bool]:
        """Exclusive access; with ``blocking=False`` yields False at once instead of waiting
        for readers or a writer (and nothing is held)."""
        with self._condition:
            if not blocking and (self._writer or self._readers):
                acquired = False
            else:
                while self._writer or self._readers:
                    self._condition.wait()
                self._writer = acquired = True
        try:
            yield acquired
        finally:
            if acquired:
                with self._condition:
                    self._writer = False
                    self._condition.notify_all()

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds after a writer finished (or ``timeout`` passed)."""
        with self._condition:
            return self._condition.wait_for(predicate, timeout)


class Memory:
    """A task memory: typed hierarchical graph, schema, constraints, history and a store.

    ``Memory()`` is empty and lives in the process; ``Memory.open(path)`` uses a SQLite file.
    """

    def __init__(
        self,
        schema: Schema = DEFAULT_SCHEMA,
        *,
        limits: Limits = DEFAULT_LIMITS,
        store: Store | None = None,
    ):
        self.schema = schema
        self.limits = limits
        self._store = store if store is not None else InMemoryStore()
        # Read before the state: a commit landing in between shows as news, never as nothing.
        self._seen_token = self._store.change_token()
        self._graph, self._t = self._store.load_state()
        self._cache = QueryCache(schema)
        self._checker = ConstraintChecker(schema)
        for name, text in self._store.constraints().items():
            self._checker.add(UserConstraint.compile(name, text, schema))
        self._write_lock = threading.RLock()
        # Held while other processes' commits are applied, and by a commit of this process
        # from the moment it holds the store's write lock until it is visible and announced:
        # a reader may catch up while a local writer still queues for the store.
        self._catch_up_lock = threading.RLock()
        # True while a commit of this process holds the store's write lock and has applied
        # every other process's commit: until its own is applied, the state lacks only that
        # commit, which no client has been told of yet.
        self._only_own_commit_pending = False
        self._state = _ReadWriteLock()
        self._views: OrderedDict[int, tuple[int, int, Any]] = OrderedDict()
        self._listeners: list[Callable[[Commit], None]] = []
        self._rules = RuleEngine(schema)
        self._load_stored_rules()
        # Hooks run inside every commit, before constraints, on the transaction's overlay.
        self.commit_hooks: list[Callable] = [self._rules]

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def open(cls, location: str | pathlib.Path, schema: Schema = DEFAULT_SCHEMA, **kwargs: Any) -> "Memory":
        """Open (or create) a durable memory: a SQLite file path, or a ``postgresql://`` URL
        (several engine processes, on any machines, can share one PostgreSQL memory).

        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "memory.db")
        >>> with Memory.open(path) as m:
        ...     m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]}).t
        1
        >>> Memory.open(path).query("root").ids
        ['g']
        """
        from hgm_engine.store import open_store

        return cls(schema, store=open_store(str(location)), **kwargs)

    @classmethod
    def from_file(cls, path: str | pathlib.Path, schema: Schema = DEFAULT_SCHEMA) -> "Memory":
        """An in-process memory loaded from a graph file (all or nothing, as one transaction)."""
        path = pathlib.Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise GraphFileError([Problem("io", f"cannot read {path}: {exc.strerror}", where=str(path))]) from None
        memory = cls(schema)
        with bulk_allocation():  # parsing and building allocate millions of objects that stay
            doc = parse_graph_text(text, str(path))
            memory.load(doc, reason=f"load {path.name}")
        return memory

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], schema: Schema = DEFAULT_SCHEMA) -> "Memory":
        """An in-process memory built from a graph document already parsed from JSON."""
        memory = cls(schema)
        memory.load(doc)
        return memory

    def close(self) -> None:
        self._close_paths()  # the path index is saved with the store
        self._store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- reading ------------------------------------------------------------------------------

    @property
    def t(self) -> int:
        """The ``t`` of the last commit this memory has applied (0 when nothing yet)."""
        return self._t

    @property
    def graph(self) -> MemoryGraph:
        """The current graph (read it; change memory only through transactions)."""
        return self._graph

    @property
    def store(self) -> Store:
        return self._store

    def __len__(self) -> int:
        return len(self._graph)

    def reading(self) -> contextlib.AbstractContextManager[None]:
        """Hold the state still: no commit is applied while inside (other readers may be).

        >>> m = Memory()
        >>> with m.reading():
        ...     len(m.graph)
        0
        """
        return self._state.reading()

    def exclusive(self) -> contextlib.AbstractContextManager[bool]:
        """No commit of this process starts while inside (for work that must see every
        commit exactly once from a fixed ``t``, such as building an index of the state).

        >>> with Memory().exclusive():
        ...     pass
        """
        return self._write_lock

    def commit_built(
        self,
        build: Callable[[GraphOverlay, OpContext], list[str]],
        *,
        author: str | None = None,
        reason: str | None = None,
        kind: str = "transaction",
        base_t: int | None = None,
        dry_run: bool = False,
    ) -> TransactionReport:
        """Commit the transaction that ``build(overlay, ctx)`` makes, through the same pipeline
        as every other (rules, constraints, conflicts, durability); ``build`` returns the ids
        it created and may run again on a newer state. For components that build
        transactions in code (ingest, path rewrite); ``kind`` is recorded with the commit.

        >>> from hgm_engine.txn.ops import AddNode, apply_op
        >>> m = Memory()
        >>> m.commit_built(lambda overlay, ctx: apply_op(overlay, AddNode("g", "goal", {}), ctx, "ops[0]"), kind="demo").created
        ('g',)
        """
        return self._commit(build, author=author, reason=reason, base_t=base_t, dry_run=dry_run, kind=kind)

    def compile(self, expr: str) -> CompiledQuery:
        """The compiled form of ``expr`` for this memory's schema (cached by text)."""
        return self._cache.get(expr)

    def query(
        self,
        expr: str,
        *,
        focus: str | None = None,
        params: Mapping[str, Any] | None = None,
        as_of: int | str | None = None,
    ) -> QueryResult:
        """Evaluate a path expression on the current state, or ``as_of`` an earlier ``t`` or a
        snapshot name. Errors are raised before anything runs.

        >>> Memory().query("nodes.count()").value
        0
        """
        compiled = self._cache.get(expr)
        with self._state.reading():
            t = self._t if as_of is None else self.resolve_t(as_of)
            view = self._graph if as_of is None else self._view_at(t)
            return compiled.run(
                view, focus=focus, params=params, limits=self.limits, payloads=lambda ids: self._payloads(ids, t)
            )

    def _payloads(self, ids: list[str], t: int) -> tuple[Node, ...]:
        """Node payloads as they were at ``t`` (for results read after later commits)."""
        with self._state.reading():
            view = self._graph if t == self._t else self._view_at(t)
            nodes = view.node_map()
            return tuple(nodes[i] for i in ids)

    def explain(self, expr: str) -> str:
        """The optimized plan of ``expr`` as text.

        >>> print(Memory().explain("#x.children").splitlines()[1])
        rules applied: id_lookup
        """
        return self._cache.get(expr).explain()

    def node(self, node_id: str, *, as_of: int | str | None = None) -> dict[str, Any] | None:
        """One node as a JSON object, or None."""
        with self._state.reading():
            view = self._graph if as_of is None else self._view_at(self.resolve_t(as_of))
            node = view.node(node_id)
            return None if node is None else node.to_json()

    def export(self, *, as_of: int | str | None = None) -> dict[str, Any]:
        """The whole memory as a graph document (formats.md), now or at an earlier state."""
        with self._state.reading():
            view = self._graph if as_of is None else self._view_at(self.resolve_t(as_of))
            nodes = [view.node_map()[n] for n in view.node_map()]
            edges = []
            for node in nodes:
                edges.extend(view.out_edges(node.id))
            edges.sort(key=lambda e: e.seq)
            return {
                "format": "hgm-graph/1",
                "nodes": [n.to_json() for n in nodes],
                "edges": [e.to_json() for e in edges],
            }

    # -- history ------------------------------------------------------------------------------

    def resolve_t(self, as_of: int | str) -> int:
        """The ``t`` that ``as_of`` names: a ``t`` of this memory's history or a snapshot name.

        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> m.snapshot("start"), m.resolve_t("start"), m.resolve_t(0)
        (1, 1, 0)
        """
        if isinstance(as_of, str) and not as_of.lstrip("-").isdigit():
            snapshots = self._store.snapshots()
            if as_of not in snapshots:
                known = ", ".join(sorted(snapshots)) or "none"
                raise _fail("unknown-snapshot", f"no snapshot named {as_of!r} (known: {known})")
            return snapshots[as_of]
        t = int(as_of)
        if not 0 <= t <= self._t:
            raise _fail("invalid-argument", f"t={t} is outside the history (0..{self._t})")
        return t

    def _view_at(self, t: int):
        if t == self._t:
            return self._graph
        cached = self._views.get(t)
        if cached is not None and cached[0] == self._graph.version and cached[1] == self._t:
            self._views.move_to_end(t)
            return cached[2]
        # Read on the store's second connection: this runs under the read lock, and a commit
        # of this process may hold the first one while it waits for readers to finish.
        view = historical_view(self._graph, self._store.read_commits(t, self._t))
        self._views[t] = (self._graph.version, self._t, view)
        if len(self._views) > 8:
            self._views.popitem(last=False)
        return view

    def _extend_views(self, changes: list[Change]) -> None:
        """Carry the cached historical views over a commit instead of dropping them."""
        for t, (_, _, view) in list(self._views.items()):
            if isinstance(view, GraphOverlay):
                view.undo_later(changes)
            self._views[t] = (self._graph.version, self._t, view)

    def as_of(self, t: int | str) -> "HistoricalMemory":
        """A read-only memory fixed at ``t`` (or a snapshot name)."""
        return HistoricalMemory(self, self.resolve_t(t))

    def diff(self, t1: int | str, t2: int | str) -> list[dict[str, Any]]:
        """What changed from state ``t1`` to state ``t2``: one entry per node or edge."""
        low, high = self.resolve_t(t1), self.resolve_t(t2)
        with self._state.reading():
            before, after = self._view_at(low), self._view_at(high)
            commits = self._store.read_commits(min(low, high), max(low, high))
            return net_changes(before, after, commits)

    def commits(self, since: int = 0) -> list[Commit]:
        """The commits after ``since``, oldest first."""
        return self._store.read_commits(since, self._t)

    def history(self, node_id: str) -> list[dict[str, Any]]:
        """Every commit that touched ``node_id`` (its attributes or its edges), oldest first."""
        return self.histories([node_id])[node_id]

    def histories(self, node_ids: Iterable[str], *, upto: int | None = None) -> dict[str, list[dict[str, Any]]]:
        """:meth:`history` of several nodes in one pass over the journal (up to ``upto``).

        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}, {"op": "add_node", "id": "a", "type": "action", "parent": "g"}]})
        >>> _ = m.apply({"ops": [{"op": "update_node", "id": "a", "set": {"status": "done"}}]})
        >>> {node: [entry["t"] for entry in entries] for node, entries in m.histories(["g", "a"]).items()}
        {'g': [1], 'a': [1, 2]}
        """
        ids = list(dict.fromkeys(node_ids))
        wanted = set(ids)
        found: dict[str, list[dict[str, Any]]] = {node_id: [] for node_id in ids}
        for commit in self._store.read_commits(0, self._t if upto is None else min(upto, self._t)):
            if commit.genesis:
                with self._state.reading():
                    view = self._view_at(commit.t)
                    present = [node_id for node_id in ids if view.node(node_id) is not None]
                for node_id in present:
                    found[node_id].append(_history_entry(commit, [{"kind": "loaded", "id": node_id}]))
                continue
            mine: dict[str, list[dict[str, Any]]] = {}
            for change in commit.changes:
                doc = None
                for node_id in dict.fromkeys(change.touched):
                    if node_id in wanted:
                        if doc is None:
                            doc = change_to_json(change)
                        mine.setdefault(node_id, []).append(doc)
            for node_id, changes in mine.items():
                found[node_id].append(_history_entry(commit, changes))
        return found

    def snapshot(self, name: str, t: int | None = None) -> int:
        """Name a state (the current one by default); returns its ``t``. Costs O(1)."""
        if not isinstance(name, str) or not name or name.lstrip("-").isdigit():
            raise _fail("invalid-argument", "a snapshot name is a non-empty string that is not a number")
        t = self._t if t is None else self.resolve_t(t)
        self._store.set_snapshot(name, t)
        return t

    def snapshots(self) -> dict[str, int]:
        return self._store.snapshots()

    # -- constraints --------------------------------------------------------------------------

    def add_constraint(self, name: str, text: str, *, check_existing: bool = True) -> None:
        """Add a user constraint ``each TYPE [where COND] must COND``; it must already hold
        (every violation is listed otherwise, and nothing is added).

        >>> m = Memory()
        >>> m.add_constraint("done_has_result", "each action where status = 'done' must exists(results)")
        >>> sorted(m.constraints())
        ['done_has_result']
        """
        constraint = UserConstraint.compile(name, text, self.schema)
        if check_existing:
            with self._state.reading():
                violations = constraint.violations(self._graph, None)
            if violations:
                raise TransactionRefused(
                    TransactionReport(False, None, None, None, f"add constraint {name}", violations=tuple(violations))
                )
        self._store.set_constraint(name, text)
        self._checker.add(constraint)

    def remove_constraint(self, name: str) -> None:
        if name not in self._checker.user:
            raise _fail("unknown-name", f"no constraint named {name!r}")
        self._store.set_constraint(name, None)
        self._checker.remove(name)

    def constraints(self) -> dict[str, str]:
        return {name: c.text for name, c in self._checker.user.items()}

    def violations(self) -> list[Violation]:
        """Every violation in the current state (normally none)."""
        with self._state.reading():
            return self._checker.check_all(self._graph)

    # -- rules ---------------------------------------------------------------------------------

    def _load_stored_rules(self) -> None:
        stored = self._stored_rule_texts()
        for name in [n for n in self._rules.rule_sets if n not in stored]:
            self._rules.set(name, None)
        for name, text in stored.items():
            current = self._rules.rule_sets.get(name)
            if current is None or current.text != text:
                self._rules.set(name, parse_rules(text, self.schema))

    def _stored_rule_texts(self) -> dict[str, str]:
        import json

        names = json.loads(self._store.get_meta("rule_sets") or "[]")
        return {name: self._store.get_meta(f"rules:{name}") or "" for name in names}

    def load_rules(self, text: str, name: str = "default") -> RuleSet:
        """Load a rule file (constraints, triggers, propagation) under ``name``, replacing a
        set of that name. Nothing changes unless the whole file is valid, its trigger graph
        has no cycle and its constraints already hold.

        >>> m = Memory()
        >>> rs = m.load_rules("propagate derived_from backward depth 2")
        >>> [p.edge_type for p in rs.propagations]
        ['derived_from']
        """
        import json

        rule_set = parse_rules(text, self.schema)
        previous_set = self._rules.rule_sets.get(name)
        own = {c.name for c in previous_set.constraints} if previous_set else set()
        taken = [c.name for c in rule_set.constraints if c.name in self._checker.user and c.name not in own]
        if taken:
            raise _fail(
                "invalid-argument",
                f"constraint name(s) {', '.join(repr(n) for n in taken)} already in use; rename them in the rule file",
            )
        compiled = [UserConstraint.compile(c.name, c.text, self.schema) for c in rule_set.constraints]
        with self._state.reading():
            violations = [v for c in compiled for v in c.violations(self._graph, None)]
        if violations:
            raise TransactionRefused(
                TransactionReport(False, None, None, None, f"load rules {name}", violations=tuple(violations))
            )
        previous = self._rules.rule_sets.get(name)
        names = list(self._stored_rule_texts())
        if name not in names:
            names.append(name)
        self._store.set_meta(f"rules:{name}", text)
        self._store.set_meta("rule_sets", json.dumps(names))
        for constraint in previous.constraints if previous else ():
            if constraint.name in self._checker.user:
                self._store.set_constraint(constraint.name, None)
                self._checker.remove(constraint.name)
        for constraint, rule in zip(compiled, rule_set.constraints):
            self._store.set_constraint(rule.name, rule.text)
            self._checker.add(constraint)
        self._rules.set(name, rule_set)
        return rule_set

    def remove_rules(self, name: str) -> None:
        import json

        rule_set = self._rules.rule_sets.get(name)
        if rule_set is None:
            raise _fail("unknown-name", f"no rule set named {name!r}")
        for constraint in rule_set.constraints:
            if constraint.name in self._checker.user:
                self._store.set_constraint(constraint.name, None)
                self._checker.remove(constraint.name)
        names = [n for n in self._stored_rule_texts() if n != name]
        self._store.set_meta(f"rules:{name}", None)
        self._store.set_meta("rule_sets", json.dumps(names))
        self._rules.set(name, None)

    def rules(self) -> dict[str, str]:
        """Loaded rule sets: name → text."""
        return {name: rule_set.text for name, rule_set in self._rules.rule_sets.items()}

    # -- planner views --------------------------------------------------------------------------

    def frontier(self, goal: str, *, as_of: int | str | None = None) -> list[str]:
        """Pending actions under ``goal`` that can run now: every ``before`` predecessor is
        done, and the action is neither blocked nor stale (no ``dirty`` mark).

        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"},
        ...     {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "pending"},
        ...     {"op": "add_node", "id": "b", "type": "action", "parent": "g", "status": "pending"},
        ...     {"op": "add_edge", "from": "a", "to": "b", "type": "before"}]})
        >>> m.frontier("g")
        ['a']
        """
        return self.query(FRONTIER_QUERY, params={"goal": goal}, as_of=as_of).ids

    def stale(self, *, as_of: int | str | None = None) -> list[dict[str, Any]]:
        """Nodes marked ``needs_review`` or ``blocked``, with every mark's rule, cause and t."""
        result = self.query("nodes.where(has(dirty))", as_of=as_of)
        return [
            {"id": node["id"], "type": node["type"], "state": node["dirty"], "marks": node.get("dirty_marks", [])}
            for node in result.nodes
        ]

    def changes_since(self, t: int | str) -> dict[str, Any]:
        """What happened after ``t``: the commits (with their reports' rules) and the net diff."""
        since = self.resolve_t(t)
        return {
            "since": since,
            "t": self._t,
            "commits": [c.summary() for c in self._store.read_commits(since, self._t)],
            "changes": self.diff(since, self._t),
        }

    def focus_path(self, node_id: str, *, as_of: int | str | None = None) -> list[str]:
        """The path from a root down to ``node_id``, following first parents (edge order).

        >>> m = Memory.from_document({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"},
        ...     {"id": "a", "type": "action"}], "edges": [{"from": "g", "to": "a", "type": "parent_of"}]})
        >>> m.focus_path("a")
        ['g', 'a']
        """
        with self._state.reading():
            view = self._graph if as_of is None else self._view_at(self.resolve_t(as_of))
            if view.node(node_id) is None:
                return []
            path = [node_id]
            while True:
                parents = view.in_adjacency(path[-1]).by_type.get("parent_of", ())
                if not parents or parents[0] in path:
                    return list(reversed(path))
                path.append(parents[0])

    def confirm(self, node_id: str, *, author: str | None = None, reason: str | None = None) -> TransactionReport:
        """Clear ``node_id``'s staleness marks (recorded as a commit)."""
        return self.apply({"author": author, "reason": reason or f"confirm {node_id}", "ops": [{"op": "confirm", "id": node_id}]})

    # -- paths (issue 5) ------------------------------------------------------------------------
    # Path-level localization and versioned path rewrite. Thin wrappers: the logic is in
    # hgm_engine/pathmemory.py (PathMemory), created on first use; docs/paths.md.

    @property
    def path_memory(self) -> "PathMemory":
        """This memory's paths (ingest, locate, versions, guards, the path index), made on
        first use; it follows every commit from then on."""
        found = self.__dict__.get("_path_memory")
        if found is None:
            from hgm_engine.paths import PathMemory

            with self._write_lock:
                found = self.__dict__.get("_path_memory")
                if found is None:
                    found = self.__dict__["_path_memory"] = PathMemory(self)
        return found

    @property
    def path_guards(self) -> "PathGuards":
        """Rewrite-storm guards (``PathGuards(max_versions, max_rewrites, max_failed_rewrites)``)."""
        return self.path_memory.guards

    @path_guards.setter
    def path_guards(self, guards: "PathGuards") -> None:
        self.path_memory.guards = guards

    def ingest(
        self,
        trajectories: Iterable[Mapping[str, Any]],
        *,
        skip_invalid: bool = False,
        author: str | None = None,
        scenario: str | None = None,
        lines: list[int] | None = None,
    ) -> "IngestReport":
        """Store trajectories (formats.md) as paths, all in one transaction: per trajectory a
        goal (``kind: "path"``, id = the trajectory id) with one action per step
        (``{id}/{i}``, ``parent_of`` with ``order``) and ``before`` along ``edges``; under the
        goal ``scenario`` (created if missing) when given. Every line is checked first: with
        problems nothing is stored and :class:`~hgm_engine.PathError` lists them
        with their line numbers (``lines`` gives them; default 1, 2, ...), unless
        ``skip_invalid``, which stores the valid ones and lists the rest in the report.

        >>> m = Memory()
        >>> r = m.ingest([{"id": "a", "goal": "x", "steps": ["s"]}, {"steps": []}], skip_invalid=True)
        >>> r.ingested, [(p.line, p.category) for p in r.problems]
        (['a'], [(2, 'bad-trajectory')])
        """
        return self.path_memory.ingest(
            trajectories, skip_invalid=skip_invalid, author=author, scenario=scenario, lines=lines
        )

    def ingest_file(
        self, path: str | pathlib.Path, *, skip_invalid: bool = False, author: str | None = None, scenario: str | None = None
    ) -> "IngestReport":
        """:meth:`ingest` the trajectories of a JSON Lines file (line numbers are the file's)."""
        from hgm_engine.paths import read_jsonl
        from hgm_engine.errors import PathError

        try:
            text = pathlib.Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise PathError([Problem("io", f"cannot read {path}: {reason}", where=str(path))]) from None
        docs, lines = read_jsonl(text)
        return self.path_memory.ingest(
            docs, skip_invalid=skip_invalid, author=author, scenario=scenario, lines=lines, reason=f"ingest {path}"
        )

    def ingest_taskplan(
        self,
        directory: str | pathlib.Path,
        *,
        ids: Iterable[str] | str | None = None,
        skip_invalid: bool = False,
        author: str | None = None,
        scenario: str | None = None,
        prefix: str | None = None,
    ) -> "IngestReport":
        """:meth:`ingest` a task-plan data set folder (``data.json`` JSON Lines; tool domains of
        ``graph_desc.json`` become tags). Path ids are ``{prefix}{request id}``, the prefix
        ``"{folder name}-"`` by default; ``ids`` keeps some requests (a list, or ``"memory"`` /
        ``"test"`` for the two sides of ``split_ids.json``)."""
        return self.path_memory.ingest_taskplan(
            directory, ids=ids, skip_invalid=skip_invalid, author=author, scenario=scenario, prefix=prefix
        )

    def locate(
        self,
        text: str,
        tags: Iterable[str] | str | None = None,
        k: int = 5,
        *,
        scenario: str | None = None,
        cross_scenario: bool = False,
        steps: list[str] | None = None,
        hops: int | None = None,
    ) -> "LocateResult":
        """The ``k`` stored paths that best fit ``text``, best first, each with the score's
        ``breakdown`` (hgm_engine.paths.localize). Candidates recalled by text, entry steps and
        ``tags`` are expanded through the graph from the entry paths within ``hops``
        (default 4), never into another scenario unless ``cross_scenario``; ``scenario``
        keeps to one scenario's paths (and paths without one). No network call with the
        default embedder.

        >>> m = Memory()
        >>> _ = m.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
        >>> [(match.path, sorted(match.breakdown)[:3]) for match in m.locate("refund my order").matches]
        [('r1', ['completeness', 'freshness', 'reward'])]
        """
        return self.path_memory.locate(
            text, tags, k, scenario=scenario, cross_scenario=cross_scenario, steps=steps, hops=hops
        )

    def path(self, path_id: str) -> dict[str, Any]:
        """One path: goal, steps, edges, tags, status, version, lineage, replaces, reward,
        result, counters, and every version of its lineage. A lineage's first id names its
        current version; ``ID@v1`` the first version itself."""
        return self.path_memory.path(path_id)

    def paths(self, *, all_versions: bool = False) -> list[dict[str, Any]]:
        """A summary of every path: one per lineage (its current version), or every version."""
        return self.path_memory.paths(all_versions=all_versions)

    def rewrite_path(
        self, path_id: str, steps_or_ops: Any, reason: str, *, author: str | None = None
    ) -> TransactionReport:
        """A new version of a path, in one transaction: goal ``{root}@v{n}`` with new actions,
        a ``replaces`` edge to the current version, which becomes ``superseded`` with its reward
        × ``supersede_factor``; ``version``, ``lineage``, ``rewrite_reason`` recorded.
        ``steps_or_ops`` is a full list of steps or edit ops (``keep``/``change``/``add``/
        ``remove``; :func:`hgm_engine.paths.pathmemory.resolve_steps`). Returns the report (refused
        by constraints: ``committed`` false with the violations); an unknown path, a bad
        step list, a guard (``rewrite-cap``, ``version-cap``, ``needs-human``) raise
        :class:`~hgm_engine.PathError`. Nothing changes unless it commits."""
        return self.path_memory.rewrite_path(path_id, steps_or_ops, reason, author=author)

    def record_outcome(
        self, path_id: str, outcome: str, *, reward: float | None = None, author: str | None = None
    ) -> TransactionReport:
        """Record a run of a path version: ``success`` or ``failure``. ``reward`` (in [0, 1],
        default 1 or 0) enters the version's reward as a moving average with weight
        ``outcome_rate``; ``result``, ``successes``/``failures`` are updated. Failures of a
        current rewritten version count towards ``max_failed_rewrites`` (a success resets the
        streak); reaching it turns the lineage ``needs_human``."""
        return self.path_memory.record_outcome(path_id, outcome, reward=reward, author=author)

    def rollback_path(
        self, path_id: str, version: int | str, *, author: str | None = None, reason: str | None = None
    ) -> TransactionReport:
        """Make an older version current again: a NEW version copying its steps (with
        ``restored_from``), replacing the current one (so ``replaces`` stays acyclic)."""
        return self.path_memory.rollback_path(path_id, version, author=author, reason=reason)

    def reset_path(self, path_id: str, *, author: str | None = None, reason: str | None = None) -> TransactionReport:
        """A human has looked: clear the lineage's ``needs_human`` and failure streak."""
        return self.path_memory.reset_path(path_id, author=author, reason=reason)

    def path_metrics(self) -> dict[str, Any]:
        """Counters to watch: rewrites, versions per lineage, consecutive failures, the
        ``needs_human`` list, guard refusals, and the path index's state."""
        return self.path_memory.metrics()

    def save_index(self) -> int | None:
        """Write the path index state (and the ``t`` it reflects) to the store now."""
        found = self.__dict__.get("_path_memory")
        return None if found is None else found.save()

    def _close_paths(self) -> None:
        """Save the path index if commits arrived since it was last saved (for ``close``)."""
        found = self.__dict__.get("_path_memory")
        if found is not None:
            found.close()

    # -- end of paths (issue 5) -----------------------------------------------------------------

    # -- changing -----------------------------------------------------------------------------

    def transaction(
        self,
        author: str | None = None,
        reason: str | None = None,
        *,
        base_t: int | None = None,
        dry_run: bool = False,
    ) -> "Transaction":
        """A transaction to fill with ops; it commits when the ``with`` block ends.

        Constraint violations raise :class:`TransactionRefused` (its ``report`` lists them);
        an exception inside the block drops every op.
        """
        return Transaction(self, author, reason, base_t, dry_run)

    def apply(self, doc: Mapping[str, Any], *, dry_run: bool = False) -> TransactionReport:
        """Apply a transaction document (formats.md). Returns the report: committed, or
        refused with every violation. Malformed documents and conflicts raise
        :class:`TransactionError` / :class:`ConflictError` and change nothing."""
        parsed = parse_transaction(doc)
        dry_run = dry_run or bool(doc.get("dry_run", False))
        return self._commit(
            _ops_builder(parsed.ops), author=parsed.author, reason=parsed.reason, base_t=parsed.base_t, dry_run=dry_run
        )

    def load(self, doc: Any, *, author: str | None = None, reason: str | None = None) -> TransactionReport:
        """Load a graph document as one transaction: all or nothing, every problem named.

        Into an empty memory this is a *genesis* commit (the history starts there)."""
        from hgm_engine.store.graphfile import check_document

        with self._write_lock, self._store.write():
            # Decided under the store's write lock: two processes loading one empty store at
            # once must not both take it for empty.
            self._catch_up()
            if self._t == 0 and len(self._graph) == 0:
                return self._genesis(doc, author, reason)
        with self._state.reading():
            problems = check_document(doc, self.schema, existing=self._graph.node_map())
        if problems:
            raise GraphFileError(problems)
        # Built as ops directly: an attribute called "parent" or "order" stays an attribute.
        ops: list = [
            AddNode(node["id"], node["type"], {k: v for k, v in node.items() if k not in ("id", "type")})
            for node in doc.get("nodes", [])
        ]
        ops += [
            AddEdge(edge["from"], edge["to"], edge["type"], {k: v for k, v in edge.items() if k not in ("from", "to", "type")})
            for edge in doc.get("edges", [])
        ]
        report = self._commit(
            _ops_builder(ops), author=author, reason=reason or "load", base_t=None, dry_run=False, kind="load"
        )
        if not report.committed:
            raise GraphFileError(
                [Problem("constraint-violation", f"{v.constraint}: {v.message}", where=v.node) for v in report.violations]
            )
        return report

    def _genesis(self, doc: Any, author: str | None, reason: str | None) -> TransactionReport:
        # One pause of the collector over building and checking: in between, the first
        # allocations would make it walk every payload just made.
        with bulk_allocation():
            graph = graph_from_document(doc, self.schema)
            violations = self._checker.check_all(graph)
        if violations:
            raise GraphFileError(
                [Problem("constraint-violation", f"{v.constraint}: {v.message}", where=v.node) for v in violations]
            )
        commit = Commit(1, author, reason or "load", None, time.time(), (), genesis=True, kind="load")
        with self._store.write():
            if hasattr(self._store, "write_genesis"):
                self._store.write_genesis(commit, graph)
            else:
                self._store.append(commit)
        with self._state.writing():
            self._graph = graph
            self._t = 1
            self._views.clear()
        self._notify(commit)
        return TransactionReport(True, 1, None, author, commit.reason)

    def revert(self, t: int, *, author: str | None = None, reason: str | None = None) -> TransactionReport:
        """Append a transaction that undoes commit ``t`` (history is never rewritten).

        Refused as a conflict when a later commit changed the same nodes or edges again."""
        if not isinstance(t, int) or not 1 <= t <= self._t:
            raise _fail("invalid-argument", f"t={t!r} is not a commit (1..{self._t})")

        def build(overlay: GraphOverlay, ctx: OpContext) -> list[str]:
            (commit,) = self._store.commits_after(t - 1, t)
            if commit.genesis:
                raise TransactionError(
                    [Problem("invalid-argument", f"t={t} loaded the memory; delete nodes instead of reverting it")]
                )
            added_edges = {c.after.key for c in commit.changes if c.kind == "edge_added"}
            for change in commit.changes:
                payload = change.after if change.after is not None else change.before
                current = overlay.node(payload.id) if isinstance(payload, Node) else overlay.edge(*payload.key)
                later_edges = []
                if change.kind == "node_added" and current is not None:
                    # Removing the node would silently drop edges later commits gave it.
                    later_edges = [e for e in overlay.edges_of(payload.id) if e.key not in added_edges]
                if _content(current) != _content(change.after) or later_edges:
                    later = [c.t for c in self._store.commits_after(t, self._t) if set(change.touched) & c.touched]
                    raise ConflictError(
                        [
                            Problem(
                                "conflict",
                                f"cannot revert t={t}: {change.kind} of {change.touched[0]!r} was changed again "
                                f"at t={later[0] if later else '?'}",
                            )
                        ]
                    )
            for change in reversed(commit.changes):
                undo = change.inverse()
                # What the revert re-creates is created now: it gets a new creation number.
                if undo.kind == "node_added":
                    overlay.add_node(undo.after.id, undo.after.type, undo.after.attrs)
                elif undo.kind == "node_updated":
                    overlay.set_node_attrs(undo.after.id, undo.after.attrs)  # keeps today's creation number
                elif undo.kind == "edge_added":
                    overlay.add_edge(undo.after.source, undo.after.target, undo.after.type, undo.after.attrs)
                else:
                    apply_changes(overlay, [undo])
            return []

        return self._commit(build, author=author, reason=reason or f"revert t={t}", base_t=None, dry_run=False, kind="revert")

    # -- the commit pipeline ------------------------------------------------------------------

    def _catch_up(self, *, wait: bool = True) -> bool:
        """Apply commits another process wrote to the store since we last looked (under the
        write lock). With ``wait=False`` nothing happens and False is returned when queries
        in other threads would have to finish first."""
        with self._catch_up_lock:
            return self._catch_up_locked(wait)

    def _catch_up_locked(self, wait: bool) -> bool:
        token = self._store.change_token()
        latest = self._store.latest_t()
        if latest <= self._t:
            self._sync_rules_and_constraints()
            self._seen_token = token
            return True
        commits = self._store.commits_after(self._t, latest)
        with self._state.writing(blocking=wait) as acquired:
            if not acquired:
                return False
            if any(c.genesis for c in commits):
                self._graph, self._t = self._store.load_state()
                self._views.clear()
            else:
                self._apply_commits(commits)
        self._sync_rules_and_constraints()
        self._seen_token = token
        for commit in commits:
            self._notify(commit)
        return True

    def _sync_rules_and_constraints(self) -> None:
        """Constraints and rule sets other processes added or removed (they are not commits)."""
        stored = self._store.constraints()
        for name, text in stored.items():
            current = self._checker.user.get(name)
            if current is None or current.text != text:
                self._checker.add(UserConstraint.compile(name, text, self.schema))
        for name in [n for n in self._checker.user if n not in stored]:
            self._checker.remove(name)
        self._load_stored_rules()

    def store_changed(self) -> bool:
        """Whether another process may have written to the store (commits, constraints, rule
        sets) since this memory last looked; cheap (SQLite: one PRAGMA, no table read).

        >>> Memory().store_changed()
        False
        """
        return self._store.change_token() != self._seen_token

    def behind_store(self) -> bool:
        """Whether the store holds commits another process made that this memory has not
        applied yet. Never waits for a commit of this process in progress (the store answers
        on a second connection), so a server can ask before every read.

        >>> Memory().behind_store()
        False
        """
        return self._store.committed_t() > self._t

    def refresh(self, *, wait: bool = True) -> int | None:
        """Catch up with commits (and constraints, rule sets) other processes wrote to the
        store; returns the new ``t``. Cheap when there is nothing new.

        While a commit of this process is under way, that commit applies what others
        committed before it (it holds the store's write lock), so this waits only until the
        state has reached the store's latest ``t`` — not for the commit to finish. With
        ``wait=False`` it returns None instead of waiting at all (a server's event loop).

        >>> memory = Memory()
        >>> memory.refresh(), memory.refresh(wait=False)
        (0, 0)
        """
        target = self._store.committed_t()  # never waits for a commit of this process
        while True:
            if self._write_lock.acquire(blocking=False):
                try:
                    if self.store_changed() and not self._catch_up(wait=wait):
                        return None
                finally:
                    self._write_lock.release()
                return self._t
            if self._t >= target:
                return self._t
            # A commit of this process holds the write lock. Until it holds the store's too,
            # other processes' commits can be applied from here (read on the second connection).
            # (Never waiting for readers while holding the catch-up lock: a commit of this
            # process may be waiting for that lock while those readers wait for the commit.)
            if self._apply_committed(target):
                return self._t
            if self._only_own_commit_pending:
                # The store is ahead only by the commit under way here, which no client has
                # been told of: a read from this state comes before that commit.
                return self._t
            if not wait:
                return None
            self._state.wait_until(lambda: self._t >= target, 0.05)

    def _apply_committed(self, target: int) -> bool:
        """Apply the store's commits up to ``target`` without the write lock; False when a
        commit of this process is past its catch-up (it applies them) or when queries in
        other threads would have to finish first. Not with commit listeners (the path
        index): they may write to the store, which that commit holds."""
        if self._listeners or not self._catch_up_lock.acquire(blocking=False):
            return False
        try:
            if self._t >= target:
                return True
            commits = self._store.read_commits(self._t, target)
            if not commits or commits[0].t != self._t + 1 or any(c.genesis for c in commits):
                return False  # a reload: left to the full catch-up
            with self._state.writing(blocking=False) as acquired:
                if not acquired:
                    return False
                self._apply_commits(commits)
            return True
        finally:
            self._catch_up_lock.release()

    def _apply_commits(self, commits: list[Commit]) -> None:
        """Other processes' commits onto the state (under the state's write lock)."""
        for commit in commits:
            changes = list(commit.changes)
            apply_changes(self._graph, changes)
            self._t = commit.t
            self._extend_views(changes)

    def _build(self, build: Callable, id_prefix: str | None = None) -> tuple[GraphOverlay, OpContext, list[str]]:
        overlay = GraphOverlay(self._graph)
        ctx = OpContext(self.schema, id_prefix=id_prefix if id_prefix is not None else f"{self._t + 1}-")
        created = build(overlay, ctx)
        return overlay, ctx, created

    def _check_conflict(self, base_t: int | None, overlay: GraphOverlay, ctx: OpContext, changes: list[Change]) -> None:
        if base_t is None or base_t == self._t:
            return
        if base_t > self._t:
            raise TransactionError([Problem("invalid-argument", f"base_t={base_t} is after the last commit t={self._t}")])
        mine = set(ctx.read_ids)
        for change in changes:
            mine.update(change.touched)
        for commit in self._store.commits_after(base_t, self._t):
            if commit.genesis:
                raise ConflictError(
                    [Problem("conflict", f"t={commit.t} loaded the whole memory after base_t={base_t}; read again and retry", where=f"t={commit.t}")]
                )
            overlap = mine & commit.touched
            if overlap:
                names = ", ".join(repr(i) for i in sorted(overlap)[:5])
                raise ConflictError(
                    [
                        Problem(
                            "conflict",
                            f"t={commit.t} changed {names} after base_t={base_t}; read again and retry",
                            where=f"t={commit.t}",
                        )
                    ]
                )

    def _commit(
        self,
        build: Callable,
        *,
        author: str | None,
        reason: str | None,
        base_t: int | None,
        dry_run: bool,
        prepared: tuple[GraphOverlay, OpContext, list[str], int] | None = None,
        kind: str = "transaction",
        id_prefix: str | None = None,
    ) -> TransactionReport:
        with self._write_lock, contextlib.ExitStack() as announced:
            with self._store.write():
                # From here no other process can commit; readers of this process stop
                # catching up until this commit is applied and announced (then released).
                announced.enter_context(self._catch_up_lock)
                self._catch_up()
                self._only_own_commit_pending = True
                announced.callback(setattr, self, "_only_own_commit_pending", False)
                if prepared is not None and prepared[3] == self._graph.version:
                    overlay, ctx, created = prepared[:3]
                else:
                    overlay, ctx, created = self._build(build, id_prefix)
                fired: list[str] = []
                dirtied: list[Mapping[str, Any]] = []
                for hook in self.commit_hooks:
                    more_fired, more_dirtied = hook(self, overlay, ctx)
                    fired.extend(more_fired)
                    dirtied.extend(more_dirtied)
                changes = overlay.changes()
                self._check_conflict(base_t, overlay, ctx, changes)
                violations = self._checker.check(overlay, changes, ctx.violations + orphan_violations(overlay, ctx))
                def report(t: int | None) -> TransactionReport:
                    return TransactionReport(
                        t is not None,
                        t,
                        base_t,
                        author,
                        reason,
                        tuple(changes),
                        tuple(fired),
                        tuple(dirtied),
                        tuple(violations),
                        dry_run=dry_run,
                        created=tuple(created),
                        cleared=tuple(ctx.cleared),
                    )

                if violations or dry_run:
                    return report(None)
                t = self._t + 1
                commit = Commit(t, author, reason, base_t, time.time(), tuple(changes), tuple(fired), tuple(dirtied), kind=kind)
                self._store.append(commit)
            # Durable now; make it visible.
            with self._state.writing():
                apply_changes(self._graph, changes)
                self._t = t
                self._extend_views(changes)
            self._notify(commit)
        return report(t)

    # -- listeners ----------------------------------------------------------------------------

    def on_commit(self, listener: Callable[[Commit], None]) -> None:
        """Call ``listener(commit)`` after every commit this memory applies (its own or caught up)."""
        self._listeners.append(listener)

    def _notify(self, commit: Commit) -> None:
        for listener in self._listeners:
            listener(commit)


def _content(payload) -> tuple | None:
    """What a node or edge holds, ignoring its creation number (a re-created node is the same)."""
    if payload is None:
        return None
    if isinstance(payload, Node):
        return (payload.id, payload.type, payload.attrs)
    return (payload.key, payload.attrs)


def _ops_builder(ops) -> Callable[[GraphOverlay, OpContext], list[str]]:
    def build(overlay: GraphOverlay, ctx: OpContext) -> list[str]:
        created: list[str] = []
        for index, op in enumerate(ops):
            created.extend(apply_op(overlay, op, ctx, f"ops[{index}]"))
        return created

    return build


def _history_entry(commit: Commit, changes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "t": commit.t,
        "author": commit.author,
        "reason": commit.reason,
        "timestamp": commit.timestamp,
        "kind": commit.kind,
        "changes": changes,
    }


class HistoricalMemory:
    """A read-only memory fixed at one ``t``."""

    def __init__(self, memory: Memory, t: int):
        self._memory = memory
        self.t = t

    @property
    def memory(self) -> Memory:
        """The memory this is a state of."""
        return self._memory

    def query(self, expr: str, *, focus: str | None = None, params: Mapping[str, Any] | None = None) -> QueryResult:
        return self._memory.query(expr, focus=focus, params=params, as_of=self.t)

    def node(self, node_id: str) -> dict[str, Any] | None:
        return self._memory.node(node_id, as_of=self.t)

    def export(self) -> dict[str, Any]:
        return self._memory.export(as_of=self.t)


class Transaction:
    """Ops applied in order, each seeing the ones before; committed when the block ends.

    Reads inside the transaction (``tx.query``) see its own changes; other readers keep
    seeing the committed state until the commit.
    """

    def __init__(self, memory: Memory, author: str | None, reason: str | None, base_t: int | None, dry_run: bool):
        self.memory = memory
        self.author = author
        self.reason = reason
        self.base_t = base_t
        self.dry_run = dry_run
        self.ops: list = []
        self.report: TransactionReport | None = None
        self._overlay: GraphOverlay | None = None
        self._ctx: OpContext | None = None
        self._created: list[str] = []
        self._built_at = -1
        self._done = False
        # Generated ids must not change if the ops are replayed on a newer state at commit.
        self._id_prefix = uuid.uuid4().hex[:6] + "-"

    def __enter__(self) -> "Transaction":
        self._start()
        return self

    def _start(self) -> None:
        memory = self.memory
        with memory._state.reading():
            self._built_at = memory.graph.version
            self._overlay = GraphOverlay(memory.graph)
        self._ctx = OpContext(memory.schema, id_prefix=self._id_prefix)

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self._done = True
            return
        if not self._done:  # commit() or rollback() inside the block already ended it
            self.commit()

    # ops
    def op(self, doc: Mapping[str, Any]) -> list[str]:
        """Apply one op in transaction-file form; returns the ids it created."""
        if self._done:
            raise _fail("invalid-argument", "this transaction has already ended")
        if self._overlay is None:
            self._start()
        op = parse_op(dict(doc), f"ops[{len(self.ops)}]")
        created = apply_op(self._overlay, op, self._ctx, f"ops[{len(self.ops)}]")
        self.ops.append(op)
        self._created.extend(created)
        return created

    def add_node(self, type: str, *, id: str | None = None, parent: str | None = None, order: float | None = None, **attributes: Any) -> str:  # noqa: A002
        """Add a node (under ``parent`` when given); returns its id (generated if not given)."""
        doc: dict[str, Any] = dict(attributes, op="add_node", type=type)
        if id is not None:
            doc["id"] = id
        if parent is not None:
            doc["parent"] = parent
        if order is not None:
            doc["order"] = order
        return self.op(doc)[0]

    def update_node(self, id: str, *, set: Mapping[str, Any] | None = None, unset: list[str] | tuple = ()) -> None:  # noqa: A002
        self.op({"op": "update_node", "id": id, "set": dict(set or {}), "unset": list(unset)})

    def delete_node(self, id: str, *, cascade: bool = False) -> None:  # noqa: A002
        self.op({"op": "delete_node", "id": id, "cascade": cascade})

    def add_edge(self, source: str, target: str, type: str, **attributes: Any) -> None:  # noqa: A002
        self.op(dict(attributes, op="add_edge", **{"from": source, "to": target, "type": type}))

    def update_edge(self, source: str, target: str, type: str, *, set: Mapping[str, Any] | None = None, unset: list[str] | tuple = ()) -> None:  # noqa: A002
        self.op({"op": "update_edge", "from": source, "to": target, "type": type, "set": dict(set or {}), "unset": list(unset)})

    def delete_edge(self, source: str, target: str, type: str) -> None:  # noqa: A002
        self.op({"op": "delete_edge", "from": source, "to": target, "type": type})

    def replace_branch(self, id: str, plan: list[Mapping[str, Any]], *, set: Mapping[str, Any] | None = None) -> list[str]:  # noqa: A002
        """Replace everything below ``id`` with a nested plan; returns the new top ids."""
        doc: dict[str, Any] = {"op": "replace_branch", "id": id, "with": list(plan)}
        if set:
            doc["set"] = dict(set)
        return self.op(doc)

    def query(self, expr: str, *, focus: str | None = None, params: Mapping[str, Any] | None = None) -> QueryResult:
        """Read the memory as this transaction has changed it so far."""
        if self._overlay is None:
            self._start()
        return self.memory.compile(expr).run(self._overlay, focus=focus, params=params, limits=self.memory.limits)

    def commit(self) -> TransactionReport:
        """Commit now (the ``with`` block does this); raises TransactionRefused on violations."""
        if self._done:
            raise _fail("invalid-argument", "this transaction has already ended")
        self._done = True
        ops = tuple(self.ops)
        prepared = None
        if self._overlay is not None:
            prepared = (self._overlay, self._ctx, self._created, self._built_at)
        report = self.memory._commit(
            _ops_builder(ops),
            author=self.author,
            reason=self.reason,
            base_t=self.base_t,
            dry_run=self.dry_run,
            prepared=prepared,
            id_prefix=self._id_prefix,
        )
        self.report = report
        if report.violations:
            raise TransactionRefused(report)
        return report

    def rollback(self) -> None:
        """Drop every op; nothing is committed."""
        self._done = True


