"""The commit pipeline: every change to a memory goes through :meth:`CommitPipeline.commit`.

A commit builds its changes on an overlay over the current state, runs the memory's commit
hooks (the rule engine) on it, checks for conflicts against ``base_t`` and the constraints on
the final state, appends the commit to the store, applies it and announces it to the
listeners — or commits nothing and reports why. When another commit landed while a
transaction was being filled, its ops are built again on the newer state. The locks it holds
meanwhile are :class:`~hgm_engine.txn.sync.MemoryState`'s.

Loading a graph document into an empty memory is a *genesis* commit (the history starts
there); reverting a commit appends the commit that undoes it.

>>> from hgm_engine import Memory
>>> m = Memory()
>>> m.load({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []}).t
1
>>> m.commits()[0].genesis
True
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Mapping

from hgm_engine.errors import ConflictError, GraphFileError, Problem, RequestError, TransactionError
from hgm_engine.model import Change, GraphOverlay, Node, apply_changes, bulk_allocation, text_problem
from hgm_engine.store import check_document, graph_from_document
from hgm_engine.model import Commit
from hgm_engine.txn.ops import AddEdge, AddNode, OpContext, apply_op, op_places, orphan_violations
from hgm_engine.txn.report import TransactionReport
from hgm_engine.txn.sync import MemoryState

__all__ = ["CommitPipeline", "Build", "ops_builder"]

Build = Callable[[GraphOverlay, OpContext], list[str]]
"""What a commit is made of: ``build(overlay, ctx)`` makes its changes on the overlay and
returns the ids it created; it may run again on a newer state."""


def ops_builder(ops: Iterable[Any]) -> Build:
    """The :data:`Build` that applies parsed ops in order (their ``where`` is ``ops[i]``).

    >>> from hgm_engine.model import MemoryGraph, DEFAULT_SCHEMA
    >>> overlay = GraphOverlay(MemoryGraph())
    >>> ops_builder([AddNode("g", "goal", {})])(overlay, OpContext(DEFAULT_SCHEMA))
    ['g']
    """
    ops = tuple(ops)
    places = op_places(len(ops))

    def build(overlay: GraphOverlay, ctx: OpContext) -> list[str]:
        created: list[str] = []
        for op, where in zip(ops, places):
            created.extend(apply_op(overlay, op, ctx, where))
        return created

    return build


class CommitPipeline:
    """How one memory commits: ``memory`` gives the schema and the commit hooks (called as
    ``hook(memory, overlay, ctx)``), ``state`` the state and its locks, ``checker`` the
    constraints.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}], "dry_run": True}).committed
    False
    """

    def __init__(self, memory: Any, state: MemoryState, checker: Any) -> None:
        self.memory = memory
        self.state = state
        self.checker = checker
        self._last_stamp: tuple[int, float] | None = None  # (t, time) of this pipeline's last commit

    def commit(
        self,
        build: Build,
        *,
        author: str | None,
        reason: str | None,
        base_t: int | None,
        dry_run: bool,
        prepared: tuple[GraphOverlay, OpContext, list[str], int] | None = None,
        kind: str = "transaction",
        id_prefix: str | None = None,
    ) -> TransactionReport:
        """Commit what ``build`` makes (``prepared``: an overlay a transaction already built,
        with its context, created ids and the graph version it was built on, used when no
        other commit landed since). Returns the report; refused or ``dry_run``: not committed."""
        _check_texts(author, reason)
        state = self.state

        def write() -> tuple[Commit | None, TransactionReport]:
            if prepared is not None and prepared[3] == state.graph.version:
                overlay, ctx, created = prepared[:3]
            else:
                overlay, ctx, created = self._build(build, id_prefix)
            fired: list[str] = []
            dirtied: list[Mapping[str, Any]] = []
            for hook in self.memory.commit_hooks:
                more_fired, more_dirtied = hook(self.memory, overlay, ctx)
                fired.extend(more_fired)
                dirtied.extend(more_dirtied)
            changes = overlay.changes()
            self._check_conflict(base_t, ctx, changes)
            violations = self.checker.check(overlay, changes, ctx.violations + orphan_violations(overlay, ctx))
            changes = tuple(changes)  # one tuple for the commit and its report

            def report(t: int | None) -> TransactionReport:
                return TransactionReport(
                    t is not None,
                    t,
                    base_t,
                    author,
                    reason,
                    changes,
                    tuple(fired),
                    tuple(dirtied),
                    tuple(violations),
                    dry_run=dry_run,
                    created=tuple(created),
                    cleared=tuple(ctx.cleared),
                )

            if violations or dry_run:
                return None, report(None)
            t = state.t + 1
            stamp = self._timestamp()
            commit = Commit(t, author, reason, base_t, stamp, changes, tuple(fired), tuple(dirtied), kind=kind)
            state.store.append(commit)
            # In the same store transaction: what keeps an index with the state (the node
            # index); one that raises fails the whole commit, nothing written.
            for hook in getattr(self.memory, "store_hooks", ()):
                hook(commit, overlay)
            self._last_stamp = (t, stamp)
            return commit, report(t)

        return state.commit(write)

    def _timestamp(self) -> float:
        """The wall-clock time of the next commit: now, or the last commit's time when the
        clock reads earlier (a clock set back), so commit times never go backwards in one
        memory and an ISO 8601 ``as_of`` names one state. Called with the store's write lock
        held and every other commit applied."""
        now = time.time()
        t = self.state.t
        if t == 0:
            return now
        cached = self._last_stamp
        if cached is not None and cached[0] == t:
            last = cached[1]
        else:  # another process committed last, or this pipeline has not committed yet
            commits = self.state.store.commits_after(t - 1, t)  # on the writing connection, as the conflict check
            last = commits[0].timestamp if commits else now
        return max(now, last)

    def _build(self, build: Build, id_prefix: str | None) -> tuple[GraphOverlay, OpContext, list[str]]:
        overlay = GraphOverlay(self.state.graph)
        ctx = OpContext(self.memory.schema, id_prefix=id_prefix if id_prefix is not None else f"{self.state.t + 1}-")
        created = build(overlay, ctx)
        return overlay, ctx, created

    def _check_conflict(self, base_t: int | None, ctx: OpContext, changes: list[Change]) -> None:
        now = self.state.t
        if base_t is None or base_t == now:
            return
        if base_t > now:
            raise TransactionError([Problem("invalid-argument", f"base_t={base_t} is after the last commit t={now}")])
        mine = set(ctx.read_ids)
        for change in changes:
            mine.update(change.touched)
        for commit in self.state.store.commits_after(base_t, now):
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

    # -- loading ------------------------------------------------------------------------------

    def load(
        self,
        doc: Any,
        *,
        author: str | None = None,
        reason: str | None = None,
        progress: Callable[[str, int, int | None], None] | None = None,
    ) -> TransactionReport:
        """Load a graph document as one transaction: all or nothing, every problem named.

        Into an empty memory this is a *genesis* commit (the history starts there).
        ``progress(phase, done, total)``, when given, hears of each phase (checking and
        building the graph, checking constraints, writing; ``total`` None when not counted).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> doc = {"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []}
        >>> m.load(doc).t, m.load({"format": "hgm-graph/1", "nodes": [{"id": "h", "type": "goal"}], "edges": []}).t
        (1, 2)
        """
        _check_texts(author, reason)
        state = self.state

        def genesis_if_empty() -> TransactionReport | None:
            # Decided under the store's write lock: two processes loading one empty store at
            # once must not both take it for empty.
            if state.t == 0 and len(state.graph) == 0:
                return self._genesis(doc, author, reason, progress)
            return None

        report = state.alone(genesis_if_empty)
        if report is not None:
            return report
        (progress or _no_progress)("checking the graph", 0, None)
        with state.lock.reading():
            problems = check_document(doc, self.memory.schema, existing=state.graph.node_map())
        if problems:
            raise GraphFileError(problems)
        (progress or _no_progress)("adding nodes and edges", 0, None)
        # Built as ops directly: an attribute called "parent" or "order" stays an attribute.
        ops: list = [
            AddNode(node["id"], node["type"], {k: v for k, v in node.items() if k not in ("id", "type")})
            for node in doc.get("nodes", [])
        ]
        ops += [
            AddEdge(edge["from"], edge["to"], edge["type"], {k: v for k, v in edge.items() if k not in ("from", "to", "type")})
            for edge in doc.get("edges", [])
        ]
        apply_ops = ops_builder(ops)

        def build(overlay: GraphOverlay, ctx: OpContext) -> list[str]:
            ctx.graph_file = True  # a graph file's values are taken as they are (as at genesis)
            return apply_ops(overlay, ctx)

        report = self.commit(build, author=author, reason=reason or "load", base_t=None, dry_run=False, kind="load")
        if not report.committed:
            raise GraphFileError(
                [Problem("constraint-violation", f"{v.constraint}: {v.message}", where=v.node) for v in report.violations]
            )
        return report

    def _genesis(self, doc: Any, author: str | None, reason: str | None, progress: Any = None) -> TransactionReport:
        report = progress or _no_progress
        # One pause of the collector over building and checking: in between, the first
        # allocations would make it walk every payload just made.
        with bulk_allocation():
            graph = graph_from_document(doc, self.memory.schema, progress=progress)
            report("checking constraints", 0, None)
            violations = self.checker.check_all(graph)
        if violations:
            raise GraphFileError(
                [Problem("constraint-violation", f"{v.constraint}: {v.message}", where=v.node) for v in violations]
            )
        commit = Commit(1, author, reason or "load", None, time.time(), (), genesis=True, kind="load")
        # Inside load()'s store transaction (state.alone): the store hooks' rows commit with the
        # genesis, and one that raises leaves nothing, as above.
        for hook in getattr(self.memory, "store_hooks", ()):
            hook(commit, graph)
        report("writing to the store", 0, None)
        self.state.replace(commit, graph)
        report("writing to the store", 1, 1)
        return TransactionReport(True, 1, None, author, commit.reason)

    # -- reverting ----------------------------------------------------------------------------

    def revert(self, t: int, *, author: str | None = None, reason: str | None = None) -> TransactionReport:
        """Append a transaction that undoes commit ``t`` (history is never rewritten).

        Refused as a conflict when a later commit changed the same nodes or edges again.

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> m.revert(1).t, m.query("nodes.count()").value
        (2, 0)
        """
        if not isinstance(t, int) or not 1 <= t <= self.state.t:
            raise RequestError([Problem("invalid-argument", f"t={t!r} is not a commit (1..{self.state.t})")])
        return self.commit(
            self.revert_builder(t), author=author, reason=reason or f"revert t={t}", base_t=None, dry_run=False, kind="revert"
        )

    def revert_builder(self, t: int) -> Build:
        """The :data:`Build` that undoes commit ``t``; a :class:`ConflictError` when a later
        commit changed the same nodes or edges again."""
        store = self.state.store

        def build(overlay: GraphOverlay, ctx: OpContext) -> list[str]:
            (commit,) = store.commits_after(t - 1, t)
            if commit.genesis:
                raise TransactionError(
                    [Problem("invalid-argument", f"t={t} loaded the memory; delete nodes instead of reverting it")]
                )
            added_edges = {c.after.key for c in commit.changes if c.kind == "edge_added"}
            removed_nodes = {c.before.id for c in commit.changes if c.kind == "node_removed"}
            for change in commit.changes:
                payload = change.after if change.after is not None else change.before
                current = overlay.node(payload.id) if isinstance(payload, Node) else overlay.edge(*payload.key)
                later_edges = []
                if change.kind == "node_added" and current is not None:
                    # Removing the node would silently drop edges later commits gave it.
                    later_edges = [e for e in overlay.edges_of(payload.id) if e.key not in added_edges]
                if _content(current) != _content(change.after) or later_edges:
                    later = [c.t for c in store.commits_after(t, self.state.t) if set(change.touched) & c.touched]
                    raise ConflictError(
                        [
                            Problem(
                                "conflict",
                                f"cannot revert t={t}: {change.kind} of {change.touched[0]!r} was changed again "
                                f"at t={later[0] if later else '?'}",
                            )
                        ]
                    )
                if change.kind == "edge_removed":
                    # The edge comes back only between nodes that exist: a later commit may have
                    # deleted an end (this revert re-creates the ones commit t itself deleted).
                    for end in (payload.source, payload.target):
                        if end not in removed_nodes and overlay.node(end) is None:
                            later = [c.t for c in store.commits_after(t, self.state.t) if end in c.touched]
                            raise ConflictError(
                                [
                                    Problem(
                                        "conflict",
                                        f"cannot revert t={t}: the removed edge {payload.source!r} -{payload.type}-> "
                                        f"{payload.target!r} needs node {end!r}, "
                                        f"deleted at t={later[0] if later else '?'}",
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

        return build


def _no_progress(phase: str, done: int, total: int | None) -> None:
    """The progress callback of a load nobody watches."""


def _check_texts(author: Any, reason: Any) -> None:
    """``author`` and ``reason`` are stored with the commit: they follow the value rules."""
    for key, text in (("author", author), ("reason", reason)):
        if text is not None:
            problem = text_problem(text, key)
            if problem is not None:
                raise TransactionError([problem])


def _content(payload: Any) -> tuple | None:
    """What a node or edge holds, ignoring its creation number (a re-created node is the same)."""
    if payload is None:
        return None
    if isinstance(payload, Node):
        return (payload.id, payload.type, payload.attrs)
    return (payload.key, payload.attrs)
