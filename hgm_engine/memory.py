"""Memory: the object an agent holds — a graph, its schema, its history and its store.

Reading is ``query`` (optionally ``as_of`` an earlier ``t`` or a snapshot name); changing is
only through transactions: ``with memory.transaction(...) as tx`` or ``memory.apply(doc)``.
``Memory`` is the facade: the state and its locks are :class:`~hgm_engine.txn.MemoryState`'s,
history reads :class:`~hgm_engine.txn.MemoryHistory`'s, commits
:class:`~hgm_engine.txn.CommitPipeline`'s, constraints and rule sets
:class:`~hgm_engine.rules.RuleRegistry`'s, paths :class:`~hgm_engine.paths.PathMemory`'s.

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
import weakref
from typing import TYPE_CHECKING, Any, Callable, Mapping

from hgm_engine.facade import PathVerb, forward
from hgm_engine.model import DEFAULT_SCHEMA, Commit, GraphOverlay, MemoryGraph, Schema, forget_hold, release_kept
from hgm_engine.query import DEFAULT_LIMITS, Limits
from hgm_engine.retrieval import ReadVerbs, SearchVerbs
from hgm_engine.rules import MAX_ROUNDS, PlannerViews, RuleRegistry, SchemaKeeper
from hgm_engine.store import InMemoryStore, Store, load_graph_file, open_memory_store
from hgm_engine.txn import (
    MAX_OPS,
    CommitPipeline,
    HistoricalMemory,
    ForgetVerbs,
    LevelVerbs,
    MemoryHistory,
    MemoryState,
    OpContext,
    Transaction,
    TransactionReport,
    ops_builder,
    parse_transaction,
)

# hgm_engine.paths.INDEX_META_KEY, where the path index saves its state (not imported here:
# the paths package loads on first use; tests/test_memories.py checks the two agree).
PATH_INDEX_META = "path_index"

if TYPE_CHECKING:
    from hgm_engine.paths import PathGuards, PathMemory

__all__ = ["Memory", "HistoricalMemory"]


class Memory:
    """A task memory: typed hierarchical graph, schema, constraints, history and a store.

    ``Memory()`` is empty and lives in the process; ``Memory.open(path)`` uses a SQLite file.
    ``max_rule_rounds`` caps the rounds of rule triggers in one transaction (docs/rules.md).
    A stored constraint or rule set that does not compile never stops a memory from opening:
    it is inactive and listed by :meth:`broken` until it is removed or replaced.
    """

    def __init__(
        self,
        schema: Schema | None = None,
        *,
        limits: Limits = DEFAULT_LIMITS,
        store: Store | None = None,
        max_rule_rounds: int = MAX_ROUNDS,
        max_ops: int = MAX_OPS,
    ):
        self.limits = limits
        self.max_ops = max_ops  # ops per transaction (apply and transaction()); loads and ingests are not ops
        self._store = store if store is not None else InMemoryStore()
        # The schema stored with the memory (docs/memories.md); a schema given here that
        # differs from it is a schema change, checked against what the memory holds.
        self._schema_keeper = SchemaKeeper(self, self._use_schema)
        stored = self.schema = self._schema_keeper.stored()
        # empty until synced with the store, after the state
        self._rules = RuleRegistry(self, max_rounds=max_rule_rounds)
        self._state = MemoryState(self._store, sync_meta=self._sync_meta)
        # Loading the state froze what it made (bulk_allocation.keep): a hold, given back by
        # close, or forgotten when this memory is collected without being closed.
        self._hold: weakref.finalize | None = None
        if self._state.kept:
            self._hold = weakref.finalize(self, forget_hold)
            self._hold.atexit = False
        try:
            self._build(schema, stored, max_rule_rounds)
        except BaseException:
            self._give_back()  # a failed open holds nothing
            raise

    def _build(self, schema: Schema | None, stored: Schema, max_rule_rounds: int) -> None:
        """What ``__init__`` makes once the state is loaded."""
        self._rules.sync()
        self._history = MemoryHistory(self._state)
        # The node index (search, rank): kept by every commit in its store transaction.
        self._search = SearchVerbs(self)
        self._reads = ReadVerbs(self, self._search, self.schema)  # and the compiled queries
        self._pipeline = CommitPipeline(self, self._state, self._rules.checker)
        # Hooks run inside every commit, before constraints, on the transaction's overlay.
        self.commit_hooks: list[Callable] = [self._rules.engine]
        self.store_hooks: list[Callable] = [self._search.store_hook]
        self._levels = LevelVerbs(self)
        self._forget = ForgetVerbs(self, derived_meta=(PATH_INDEX_META,), on_purged=self._purged)
        self._views = PlannerViews(self)
        if schema is not None and schema != stored:
            self.set_schema(schema)

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def open(
        cls, location: str | pathlib.Path, schema: Schema | None = None, *, memory: str | None = None, **kwargs: Any
    ) -> "Memory":
        """Open (or create) a durable memory: a SQLite file path, or a ``postgresql://`` URL
        (several engine processes, on any machines, can share one PostgreSQL memory).

        ``memory`` names one of the store's memories (docs/memories.md); without it, the
        memory ``default``, which is created on its first commit. Other names are made with
        ``hgm_engine.open_store(location).create(name)``; an unknown one is a
        :class:`RequestError` ``unknown-memory`` suggesting the closest names.

        Without ``schema`` the memory's stored schema is used (the default schema when none
        was stored); a ``schema`` that differs from the stored one replaces it, after
        :meth:`set_schema`'s checks.

        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "memory.db")
        >>> with Memory.open(path) as m:
        ...     m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]}).t
        1
        >>> Memory.open(path).query("root").ids
        ['g']
        >>> Memory.open(path, memory="acme/alice")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hgm_engine.errors.RequestError: unknown-memory at acme/alice: no memory 'acme/alice' in ...
        """
        store = open_memory_store(location, memory)
        try:
            return cls(schema, store=store, **kwargs)
        except BaseException:
            store.close()
            raise

    # -- the schema (hgm_engine.rules.SchemaKeeper) and forgetting (hgm_engine.txn.ForgetVerbs) ---

    set_schema = forward("_schema_keeper", SchemaKeeper.set_schema)
    purge = forward("_forget", ForgetVerbs.purge)

    def _sync_meta(self) -> None:
        """What other processes changed besides commits: the schema, constraints, rule sets."""
        self._schema_keeper.sync()
        self._rules.sync()

    def _purged(self) -> None:
        """Rebuild what this process derived from purged nodes: history views, the node index."""
        self._history = MemoryHistory(self._state)
        self._search.reset()

    def _use_schema(self, schema: Schema) -> None:
        """Rebuild what is compiled for the schema: queries, constraints, rules, the pipeline."""
        if schema == self.schema and hasattr(self, "_pipeline"):
            return
        rounds = self._rules.engine.max_rounds
        old_engine = self._rules.engine
        self.schema = schema
        self._rules = RuleRegistry(self, max_rounds=rounds)
        self._rules.sync()
        self._reads.use_schema(schema)
        self._pipeline = CommitPipeline(self, self._state, self._rules.checker)
        self.commit_hooks = [self._rules.engine if hook is old_engine else hook for hook in self.commit_hooks]

    @classmethod
    def from_file(cls, path: str | pathlib.Path, schema: Schema = DEFAULT_SCHEMA) -> "Memory":
        """An in-process memory loaded from a graph file (all or nothing, as one transaction).

        >>> import json, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "graph.json")
        >>> with open(path, "w") as f:
        ...     json.dump({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []}, f)
        >>> Memory.from_file(path).commits()[0].reason
        'load graph.json'
        """
        memory = cls(schema)
        load_graph_file(path, memory.load)
        return memory

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], schema: Schema = DEFAULT_SCHEMA) -> "Memory":
        """An in-process memory built from a graph document already parsed from JSON.

        >>> Memory.from_document({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []}).t
        1
        """
        memory = cls(schema)
        memory.load(doc)
        return memory

    def close(self) -> None:
        """Close the store, saving the path index first if commits arrived since its last save."""
        found = self.__dict__.get("_path_memory")
        if found is not None:
            found.close()
        self._store.close()
        self._give_back()

    def _give_back(self) -> None:
        """What loading moved out of the collector's reach can be freed again (once: a second
        close gives nothing back twice)."""
        hold, self._hold = self._hold, None
        release_kept(hold is not None and hold.detach() is not None)

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- reading ------------------------------------------------------------------------------

    @property
    def t(self) -> int:
        """The ``t`` of the last commit this memory has applied (0 when nothing yet)."""
        return self._state.t

    @property
    def graph(self) -> MemoryGraph:
        """The current graph (read it; change memory only through transactions)."""
        return self._state.graph

    @property
    def store(self) -> Store:
        return self._store

    @property
    def state(self) -> MemoryState:
        """The state and its locks (:mod:`hgm_engine.txn.sync` writes down their order), for
        code that coordinates with commits; readers use :meth:`reading`."""
        return self._state

    def __len__(self) -> int:
        return len(self._state.graph)

    def reading(self) -> contextlib.AbstractContextManager[None]:
        """Hold the state still: no commit is applied while inside (other readers may be).

        >>> m = Memory()
        >>> with m.reading():
        ...     len(m.graph)
        0
        """
        return self._state.lock.reading()

    def exclusive(self) -> contextlib.AbstractContextManager[bool]:
        """No commit of this process starts while inside (for work that must see every
        commit exactly once from a fixed ``t``, such as building an index of the state).

        >>> with Memory().exclusive():
        ...     pass
        """
        return self._state.write_lock

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

        >>> from hgm_engine.txn import AddNode, apply_op
        >>> m = Memory()
        >>> m.commit_built(lambda overlay, ctx: apply_op(overlay, AddNode("g", "goal", {}), ctx, "ops[0]"), kind="demo").created
        ('g',)
        """
        return self._pipeline.commit(build, author=author, reason=reason, base_t=base_t, dry_run=dry_run, kind=kind)

    # -- reading (hgm_engine.retrieval.ReadVerbs) ------------------------------------------------

    compile = forward("_reads", ReadVerbs.compile)
    view = forward("_reads", ReadVerbs.view)
    query = forward("_reads", ReadVerbs.query)
    explain = forward("_reads", ReadVerbs.explain)
    node = forward("_reads", ReadVerbs.node)
    export = forward("_reads", ReadVerbs.export)

    # -- search (hgm_engine.retrieval.SearchVerbs; docs/language.md §8) -------------------------

    search = forward("_search", SearchVerbs.search)
    configure_search = forward("_search", SearchVerbs.configure_search)
    search_status = forward("_search", SearchVerbs.search_status)

    # -- valid time and levels (hgm_engine.txn.LevelVerbs; docs/time.md) ------------------------

    facts = forward("_levels", LevelVerbs.facts)
    summarize = forward("_levels", LevelVerbs.summarize)
    summary_of = forward("_levels", LevelVerbs.summary_of)

    # -- history (hgm_engine.txn.MemoryHistory) ------------------------------------------------

    resolve_t = forward("_history", MemoryHistory.resolve_t)
    t_at = forward("_history", MemoryHistory.t_at)
    commit_time = forward("_history", MemoryHistory.commit_time)
    diff = forward("_history", MemoryHistory.diff)
    commits = forward("_history", MemoryHistory.commits)
    history = forward("_history", MemoryHistory.history)
    histories = forward("_history", MemoryHistory.histories)
    snapshot = forward("_history", MemoryHistory.snapshot)
    snapshots = forward("_history", MemoryHistory.snapshots)
    changes_since = forward("_history", MemoryHistory.changes_since)

    def as_of(self, t: int | str) -> HistoricalMemory:
        """A read-only memory fixed at ``t`` (or a snapshot name).

        >>> Memory().as_of(0).query("nodes.count()").value
        0
        """
        return HistoricalMemory(self, self.resolve_t(t))

    # -- constraints and rules (hgm_engine.rules.RuleRegistry) --------------------------------

    add_constraint = forward("_rules", RuleRegistry.add_constraint)
    remove_constraint = forward("_rules", RuleRegistry.remove_constraint)
    constraints = forward("_rules", RuleRegistry.constraints)
    violations = forward("_rules", RuleRegistry.violations)
    load_rules = forward("_rules", RuleRegistry.load_rules)
    remove_rules = forward("_rules", RuleRegistry.remove_rules)
    rules = forward("_rules", RuleRegistry.rules)
    broken = forward("_rules", RuleRegistry.broken)

    @property
    def max_rule_rounds(self) -> int:
        """The cap on rule trigger rounds in one transaction (default 32); settable.

        >>> m = Memory(max_rule_rounds=64)
        >>> m.max_rule_rounds
        64
        >>> m.max_rule_rounds = 100
        """
        return self._rules.engine.max_rounds

    @max_rule_rounds.setter
    def max_rule_rounds(self, value: int) -> None:
        self._rules.engine.max_rounds = value

    # -- planner views --------------------------------------------------------------------------

    frontier = forward("_views", PlannerViews.frontier)
    stale = forward("_views", PlannerViews.stale)
    focus_path = forward("_views", PlannerViews.focus_path)

    def confirm(self, node_id: str, *, author: str | None = None, reason: str | None = None) -> TransactionReport:
        """Clear ``node_id``'s staleness marks (recorded as a commit)."""
        return self.apply({"author": author, "reason": reason or f"confirm {node_id}", "ops": [{"op": "confirm", "id": node_id}]})

    # -- paths (hgm_engine.paths.PathMemory; docs/paths.md) ---------------------------------------

    @property
    def path_memory(self) -> "PathMemory":
        """This memory's paths (ingest, locate, versions, guards, the path index), made on
        first use; it follows every commit from then on."""
        found = self.__dict__.get("_path_memory")
        if found is None:
            from hgm_engine.paths import PathMemory

            with self._state.write_lock:
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

    ingest = PathVerb("ingest")
    ingest_file = PathVerb("ingest_file")
    ingest_taskplan = PathVerb("ingest_taskplan")
    locate = PathVerb("locate")
    path = PathVerb("path")
    paths = PathVerb("paths")
    rewrite_path = PathVerb("rewrite_path")
    record_outcome = PathVerb("record_outcome")
    rollback_path = PathVerb("rollback_path")
    reset_path = PathVerb("reset_path")
    path_metrics = PathVerb("metrics")

    def save_index(self) -> int | None:
        """Write the path index state (and the ``t`` it reflects) to the store now."""
        found = self.__dict__.get("_path_memory")
        return None if found is None else found.save()

    # -- changing (hgm_engine.txn.CommitPipeline) -----------------------------------------------

    def transaction(
        self, author: str | None = None, reason: str | None = None, *, base_t: int | None = None, dry_run: bool = False
    ) -> Transaction:
        """A transaction to fill with ops; it commits when the ``with`` block ends.

        Constraint violations raise :class:`TransactionRefused` (its ``report`` lists them);
        an exception inside the block drops every op.
        """
        return Transaction(self, self._pipeline, author, reason, base_t, dry_run)

    def apply(self, doc: Mapping[str, Any], *, dry_run: bool = False) -> TransactionReport:
        """Apply a transaction document (formats.md). Returns the report: committed, or
        refused with every violation. Malformed documents and conflicts raise
        :class:`TransactionError` / :class:`ConflictError` and change nothing."""
        parsed = parse_transaction(doc, max_ops=self.max_ops)
        dry_run = dry_run or bool(doc.get("dry_run", False))
        return self._pipeline.commit(
            ops_builder(parsed.ops), author=parsed.author, reason=parsed.reason, base_t=parsed.base_t, dry_run=dry_run
        )

    load = forward("_pipeline", CommitPipeline.load)
    revert = forward("_pipeline", CommitPipeline.revert)

    # -- other processes (hgm_engine.txn.MemoryState) ------------------------------------------

    store_changed = forward("_state", MemoryState.store_changed)
    behind_store = forward("_state", MemoryState.behind_store)
    refresh = forward("_state", MemoryState.refresh)

    def on_commit(self, listener: Callable[[Commit], None]) -> None:
        """Call ``listener(commit)`` after every commit this memory applies (its own or caught up)."""
        self._state.listeners.append(listener)
