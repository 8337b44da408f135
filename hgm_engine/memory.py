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
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from attrs import evolve as attrs_evolve

from hgm_engine.facade import PathVerb, forward
from hgm_engine.errors import GraphFileError, Problem, QueryExecutionError, RequestError, SearchError
from hgm_engine.model import DEFAULT_SCHEMA, Commit, GraphOverlay, GraphView, MemoryGraph, Node, Schema, bulk_allocation, release_kept
from hgm_engine.model.nodeindex import query_terms, searcher_for, word_forms
from hgm_engine.query import DEFAULT_LIMITS, CompiledQuery, Limits, QueryCache, QueryResult
from hgm_engine.query.analyze import search_text_problem
from hgm_engine.query.plan import uses_search
from hgm_engine.retrieval import NodeSearch
from hgm_engine.rules import MAX_ROUNDS, RuleRegistry
from hgm_engine.store import InMemoryStore, Store, marks_problem, open_store, parse_graph_text
from hgm_engine.txn import (
    MAX_OPS,
    CommitPipeline,
    HistoricalMemory,
    MemoryHistory,
    MemoryState,
    OpContext,
    Transaction,
    MAX_ITEMS,
    MAX_SUMMARIZED,
    TransactionReport,
    extract,
    facts_about,
    ops_builder,
    parse_transaction,
    summary_id,
    write_summary,
)

if TYPE_CHECKING:
    from hgm_engine.paths import PathGuards, PathMemory

__all__ = ["Memory", "HistoricalMemory", "FRONTIER_QUERY", "MAX_PROMPT_EVENTS"]

MAX_PROMPT_EVENTS = 200
"""How many of a summary's events ``Memory.summarize`` shows a ``content`` writer (a model)."""

builtins_type = type  # Memory.search has an argument called ``type``

FRONTIER_QUERY = (
    "#$goal.descendants.where(type = 'action', status = 'pending', not has(dirty), "
    "not exists(prev.where(status != 'done')))"
)


class Memory:
    """A task memory: typed hierarchical graph, schema, constraints, history and a store.

    ``Memory()`` is empty and lives in the process; ``Memory.open(path)`` uses a SQLite file.
    ``max_rule_rounds`` caps the rounds of rule triggers in one transaction (docs/rules.md).
    A stored constraint or rule set that does not compile never stops a memory from opening:
    it is inactive and listed by :meth:`broken` until it is removed or replaced.
    """

    def __init__(
        self,
        schema: Schema = DEFAULT_SCHEMA,
        *,
        limits: Limits = DEFAULT_LIMITS,
        store: Store | None = None,
        max_rule_rounds: int = MAX_ROUNDS,
        max_ops: int = MAX_OPS,
    ):
        self.schema = schema
        self.limits = limits
        self.max_ops = max_ops  # ops per transaction (apply and transaction()); loads and ingests are not ops
        self._store = store if store is not None else InMemoryStore()
        # empty until synced with the store, after the state
        self._rules = RuleRegistry(self, max_rounds=max_rule_rounds)
        self._state = MemoryState(self._store, sync_meta=self._rules.sync)
        self._rules.sync()
        self._history = MemoryHistory(self._state)
        self._cache = QueryCache(schema)
        self._pipeline = CommitPipeline(self, self._state, self._rules.checker)
        # Hooks run inside every commit, before constraints, on the transaction's overlay.
        self.commit_hooks: list[Callable] = [self._rules.engine]
        # The node index (search, rank): kept by every commit in its store transaction.
        self._search = NodeSearch(self._state)
        self.store_hooks: list[Callable] = [self._search.store_hook]

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
        with bulk_allocation() as bulk:  # parsing and building allocate millions of objects that stay
            doc = parse_graph_text(text, str(path))
            memory.load(doc, reason=f"load {path.name}")
            del doc, text
            bulk.keep()
        return memory

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], schema: Schema = DEFAULT_SCHEMA) -> "Memory":
        """An in-process memory built from a graph document already parsed from JSON."""
        memory = cls(schema)
        memory.load(doc)
        return memory

    def close(self) -> None:
        """Close the store, saving the path index first if commits arrived since its last save."""
        found = self.__dict__.get("_path_memory")
        if found is not None:
            found.close()
        self._store.close()
        release_kept()  # what loading moved out of the collector's reach can be freed again

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

    def compile(self, expr: str) -> CompiledQuery:
        """The compiled form of ``expr`` for this memory's schema (cached by text)."""
        return self._cache.get(expr, self.limits)

    @contextlib.contextmanager
    def _view(self, as_of: int | str | None) -> Iterator[GraphView]:
        """The state now or ``as_of`` an earlier ``t`` or snapshot, held still while inside."""
        with self._state.lock.reading():
            yield self._state.graph if as_of is None else self._state.view_at(self._history.resolve_t(as_of))

    @contextlib.contextmanager
    def _view_at(self, t: int) -> Iterator[GraphView]:
        """The state at ``t`` (a ``t`` of the history), held still while inside."""
        with self._state.lock.reading():
            yield self._state.view_at(t)

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
        compiled = self._cache.get(expr, self.limits)
        with self._state.lock.reading():
            self._search.ensure()
            t = self._state.t if as_of is None else self._history.resolve_t(as_of)
            view = self._state.view_at(t)
            return compiled.run(
                view, focus=focus, params=params, limits=self.limits, payloads=lambda ids: self._payloads(ids, t)
            )

    def _payloads(self, ids: list[str], t: int) -> tuple[Node, ...]:
        """Node payloads as they were at ``t`` (for results read after later commits)."""
        with self._view_at(t) as view:
            nodes = view.node_map()
            return tuple(nodes[i] for i in ids)

    def explain(self, expr: str, *, physical: bool = False) -> str:
        """The optimized plan of ``expr`` as text; ``physical`` adds how each step runs.

        >>> print(Memory().explain("#x.children").splitlines()[1])
        rules applied: id_lookup
        >>> print(Memory().explain("#x.children", physical=True).splitlines()[-1].strip())
        physical: one-type hop: one loop over out(parent_of) of all sources
        """
        compiled = self._cache.get(expr, self.limits)
        text = compiled.explain(physical=physical)
        if uses_search(compiled.optimized_plan):
            text += f"\nindex: {self._search.describe()}"
        return text

    # -- search (hgm_engine.retrieval.NodeSearch; docs/language.md §8) --------------------------

    def search(
        self,
        text: str,
        *,
        type: str | None = None,
        limit: int | None = 10,
        as_of: int | str | None = None,
    ) -> list[dict[str, Any]]:
        """The nodes whose text matches ``text``, most relevant first: ``search(TEXT)``
        (docs/language.md §8) with each node's score and the words of ``text`` it contains.

        Each hit is ``{"id", "type", "score", "matched", "node"}``; with an embedder set, also
        ``similarity`` (cosine, None when not among the nearest texts) and ``lexical`` (the
        BM25 score, None when no word matched), ``score`` being the fused one. ``type`` keeps
        nodes of that type only, ``limit`` the first ``limit`` (None: all); ``as_of`` searches
        an earlier state. Bad input is a :class:`SearchError` (``invalid-argument``).

        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "h", "type": "entity", "name": "Beijing Hotel"},
        ...     {"op": "add_node", "id": "f", "type": "fact", "content": "The hotel costs 800 CNY per night"}]})
        >>> [(hit["id"], hit["matched"]) for hit in m.search("hotels in Beijing")]
        [('h', ['hotels', 'beijing']), ('f', ['hotels'])]
        >>> m.search("hotel", type="fact", limit=1)[0]["node"]["content"]
        'The hotel costs 800 CNY per night'
        """
        problem = search_text_problem(text, self.limits)
        if problem is not None:
            raise SearchError.single("limit-exceeded" if "Limits.max_search_length" in problem else "invalid-argument", problem)
        if limit is not None and (builtins_type(limit) is not int or limit < 0):
            raise SearchError.single("invalid-argument", f"limit must be an integer >= 0 or None, not {limit!r}")
        if type is not None and type not in self.schema.node_types:
            from hgm_engine.model import closest

            near = closest(type, self.schema.node_types) if isinstance(type, str) else None
            hint = f"; did you mean {near!r}?" if near else f" (known: {', '.join(self.schema.node_types)})"
            raise SearchError.single("invalid-argument", f"unknown node type {type!r}{hint}")
        terms = query_terms(text)
        forms = word_forms(text)
        budget = [self.limits.max_work]

        def charge(amount: int) -> None:
            if budget[0] is not None:
                budget[0] -= amount
                if budget[0] < 0:
                    raise QueryExecutionError(
                        [Problem("limit-exceeded", f"the search read more than {self.limits.max_work} postings (Limits.max_work)")]
                    )

        with self._state.lock.reading():
            self._search.ensure()
            t = self._state.t if as_of is None else self._history.resolve_t(as_of)
            view = self._state.view_at(t)
            hits = searcher_for(view).hits(view, text, terms, top=limit, node_type=type, charge=charge)
            nodes = view.node_map()
            out = []
            for hit in hits:
                node = nodes[hit.id]
                entry: dict[str, Any] = {
                    "id": hit.id,
                    "type": node.type,
                    "score": round(hit.score, 6),
                    "matched": [word for term, words in forms.items() if term in hit.terms for word in words],
                }
                if hit.similarity is not None or hit.lexical is not None:
                    entry["similarity"] = None if hit.similarity is None else round(hit.similarity, 6)
                    entry["lexical"] = None if hit.lexical is None else round(hit.lexical, 6)
                entry["node"] = node.to_json()
                out.append(entry)
            return out

    def configure_search(
        self, *, embedder: Any, base_url: str | None = None, min_similarity: float | None = None
    ) -> dict[str, Any]:
        """Set this memory's embedder — ``"minilm"``, ``"openai"`` or ``"openai:MODEL"`` (at
        ``base_url``, else ``OPENAI_BASE_URL``; the key from ``OPENAI_API_KEY``, never stored),
        an embedder object of your own (``name``, ``embed_documents(texts)``,
        ``embed_query(text)``; give it again after reopening) — or None for words only.
        ``min_similarity`` is the cosine similarity a node's text needs to the query to match
        by meaning (default 0.35). Every node's text without a vector of that model is
        embedded now, in one store transaction with the setting: an embedder that is unknown,
        cannot be loaded or fails is a :class:`SearchError` (``embedder``) and changes
        nothing. The setting is kept with the memory; from then on every commit embeds the
        texts it adds, and fails whole when the embedder does. Returns :meth:`search_status`.

        >>> Memory().configure_search(embedder="bert")
        Traceback (most recent call last):
          ...
        hgm_engine.errors.SearchError: unknown-embedder: unknown embedder 'bert': use minilm, openai or openai:MODEL (or none for words only)
        """
        with self._state.write_lock:  # no commit of this process meanwhile
            return self._search.configure(embedder, base_url=base_url, min_similarity=min_similarity)

    def search_status(self) -> dict[str, Any]:
        """What the node index holds: ``t``, ``nodes`` with text, ``terms``, where it came from
        (``source``: ``stored`` read from the store, ``built`` indexed from the state), the
        embedder and its vectors.

        >>> Memory().search_status()["nodes"]
        0
        """
        with self._state.lock.reading():
            self._search.ensure()
            return self._search.status()

    def node(self, node_id: str, *, as_of: int | str | None = None) -> dict[str, Any] | None:
        """One node as a JSON object, or None."""
        with self._view(as_of) as view:
            node = view.node(node_id)
            return None if node is None else node.to_json()

    def export(self, *, as_of: int | str | None = None) -> dict[str, Any]:
        """The whole memory as a graph document (formats.md), now or at an earlier state."""
        with self._view(as_of) as view:
            nodes = [view.node_map()[n] for n in view.node_map()]
            edges = [edge for node in nodes for edge in view.out_edges(node.id)]
            edges.sort(key=lambda e: e.seq)
            return {
                "format": "hgm-graph/1",
                "nodes": [n.to_json() for n in nodes],
                "edges": [e.to_json() for e in edges],
            }

    def facts(self, entity: str, *, at: str | None = None, as_of: int | str | None = None) -> dict[str, Any]:
        """What holds about ``entity`` at the valid time ``at`` (ISO 8601; None: now), as
        memory knew it ``as_of`` (a t, snapshot or ISO 8601 time; None: now): every fact
        about it with its valid time, whether it holds, and what superseded what
        (docs/time.md).

        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "e", "type": "entity"},
        ...     {"op": "add_node", "id": "f1", "type": "fact", "content": "780 CNY", "valid_from": "2026-01-01"},
        ...     {"op": "add_edge", "from": "e", "to": "f1", "type": "related_to"}]})
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "f2", "type": "fact", "content": "820 CNY"},
        ...     {"op": "add_edge", "from": "e", "to": "f2", "type": "related_to"},
        ...     {"op": "invalidate", "id": "f1", "at": "2026-06-01", "by": "f2", "reason": "new season"}]})
        >>> m.facts("e", at="2026-03-01")["holding"], m.facts("e", at="2026-07-01")["holding"]
        (['f1'], ['f2'])
        """
        with self._view(as_of) as view:
            return facts_about(view, entity, at)

    def summarize(
        self,
        node_id: str,
        *,
        author: str | None = None,
        reason: str | None = None,
        max_nodes: int = MAX_SUMMARIZED,
        max_items: int = MAX_ITEMS,
        content: Callable[[dict[str, Any]], str] | None = None,
        dry_run: bool = False,
    ) -> TransactionReport:
        """Roll the events under ``node_id`` (a scenario, or any subtree) up into one summary
        node (``kind: 'summary'``) linked to each node it covers by ``summarizes``; a second
        call refreshes the same summary. The summary is extractive and deterministic unless
        ``content(draft)`` writes its text (``hgm_engine.llm.summarize_with_model`` asks a
        model); ``draft`` is the extractive summary's attributes with ``events``: the
        summarized node then the first ``MAX_PROMPT_EVENTS`` members (id, type, content,
        status). An exception from ``content`` changes nothing. Any edit of a covered node
        marks the summary ``needs_review`` (docs/time.md).

        Errors (nothing changes): ``unknown-node``, ``empty-subtree``, ``invalid-argument`` (a
        summary given), ``limit-exceeded`` (more than ``max_nodes`` events).

        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "s", "type": "goal", "kind": "scenario", "content": "Refund"},
        ...     {"op": "add_node", "id": "a", "type": "action", "parent": "s", "content": "Look up the order", "status": "done"}]})
        >>> m.summarize("s").created, m.query("#s.summaries").ids, m.node("summary-s")["covers"]
        (('summary-s',), ['summary-s'], 1)
        >>> _ = m.apply({"ops": [{"op": "update_node", "id": "a", "set": {"status": "failed"}}]})
        >>> m.node("summary-s")["dirty"]
        'needs_review'
        """
        for name, value in (("max_nodes", max_nodes), ("max_items", max_items)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RequestError([Problem("invalid-argument", f"{name} is a positive integer, not {value!r}", where=name)])
        with self._view(None) as view:
            draft = extract(view, node_id, max_nodes=max_nodes, max_items=max_items)
            if content is not None:
                nodes = view.node_map()
                events = [
                    {k: v for k, v in (("id", m), ("type", nodes[m].type), ("content", nodes[m].attrs.get("content")),
                                       ("status", nodes[m].attrs.get("status"))) if v is not None}
                    for m in (node_id, *draft.members[:MAX_PROMPT_EVENTS])
                ]
        written = None if content is None else content(dict(draft.attributes, events=events))
        if written is not None and (not isinstance(written, str) or not written.strip()):
            raise RequestError([Problem("invalid-argument", "a summary's text is a non-empty string", where="content")])

        def build(overlay: GraphOverlay, ctx: OpContext) -> list[str]:
            fresh = extract(overlay, node_id, max_nodes=max_nodes, max_items=max_items)
            if written is not None:
                fresh = attrs_evolve(fresh, attributes=dict(fresh.attributes, content=written, method="model"))
            existed = summary_id(overlay, node_id)[1]
            made = write_summary(overlay, ctx, fresh)
            return [] if existed else [made]

        return self.commit_built(
            build, author=author, reason=reason or f"summarize {node_id}", kind="transaction", dry_run=dry_run
        )

    def summary_of(self, node_id: str, *, as_of: int | str | None = None) -> dict[str, Any] | None:
        """The summary node of ``node_id`` (made by :meth:`summarize`) as JSON, or None.

        >>> Memory().summary_of("trip") is None
        True
        """
        with self._view(as_of) as view:
            if not isinstance(node_id, str) or view.node(node_id) is None:
                return None
            found, exists = summary_id(view, node_id)
            return view.node(found).to_json() if exists else None

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
        """Nodes marked ``needs_review`` or ``blocked``, with every mark's rule, cause and t.

        Marks that are not what the rule engine writes (stored before graph files and
        transactions were checked for them, or by another program) are not passed on as
        marks: the entry's ``state`` is None when ``dirty`` is no staleness state, ``marks``
        holds the well-formed marks only, and ``problems`` says what is wrong with the rest.

        >>> m = Memory()
        >>> _ = m.load_rules("rule watch: on update action where status = 'failed' then mark parent as needs_review")
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"},
        ...     {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "pending"}]})
        >>> _ = m.apply({"ops": [{"op": "update_node", "id": "a", "set": {"status": "failed"}}]})
        >>> [(s["id"], s["state"], [mark["rule"] for mark in s["marks"]]) for s in m.stale()]
        [('g', 'needs_review', ['watch'])]
        """
        result = self.query("nodes.where(has(dirty))", as_of=as_of)
        entries = []
        for node in result.nodes:
            state, problems = node["dirty"], []
            found = marks_problem({"dirty": state}, node["id"])
            if found is not None:
                state = None
                problems.append(found.message)
            stored = node.get("dirty_marks", [])
            marks = []
            if isinstance(stored, list):
                for i, mark in enumerate(stored):
                    found = marks_problem({"dirty_marks": [mark]}, node["id"])
                    if found is None:
                        marks.append(mark)
                    else:
                        problems.append(f"dirty_marks[{i}]: {found.message}")
            else:
                problems.append(marks_problem({"dirty_marks": stored}, node["id"]).message)
            entry = {"id": node["id"], "type": node["type"], "state": state, "marks": marks}
            if problems:
                entry["problems"] = problems
            entries.append(entry)
        return entries

    def focus_path(self, node_id: str, *, as_of: int | str | None = None) -> list[str]:
        """The path from a root down to ``node_id``, following first parents (edge order).

        >>> m = Memory.from_document({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"},
        ...     {"id": "a", "type": "action"}], "edges": [{"from": "g", "to": "a", "type": "parent_of"}]})
        >>> m.focus_path("a")
        ['g', 'a']
        """
        with self._view(as_of) as view:
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
