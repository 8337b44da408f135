"""Paths in memory: trajectories stored as goals with ordered actions, located through a path
index that every commit keeps up to date, and rewritten as versions behind guards.

A *path* is a goal node with ``kind = "path"``: its ``content`` is the goal text, its actions
(``parent_of`` with ``order``) are the steps and ``before`` edges order them. A path may sit
under a *scenario* goal (``kind = "scenario"``); locating never walks from one scenario into
another unless asked. A rewrite never edits a path: it adds a new version (``{root}@v{n}``)
with new actions, a ``replaces`` edge to the version it supersedes, and marks that one
``superseded`` with a lower reward, in one transaction. The first version's id (the
trajectory id) names the whole *lineage* and resolves to its current version.

The :class:`PathMemory` of a :class:`~hgm_engine.memory.Memory` is the facade the Memory
methods (``ingest``, ``locate``, ``rewrite_path`` ...) delegate to; each job has its module:
:mod:`~hgm_engine.paths.records` (paths as the graph holds them), :mod:`~hgm_engine.paths.edits`
(edit ops: ``resolve_steps``), :mod:`~hgm_engine.paths.ingest`, :mod:`~hgm_engine.paths.versions`
(rewrite, rollback, outcome, reset, guards), :mod:`~hgm_engine.paths.documents` (what ``path``,
``paths`` and ``path_metrics`` return), :mod:`~hgm_engine.paths.expand` (the graph walk of
``locate``) and :mod:`~hgm_engine.paths.keeper` (the
:class:`~hgm_engine.paths.localize.PathIndex`, built lazily, kept in step by ``on_commit``,
saved in the store's meta under ``path_index`` and replayed from its ``t`` on open). See
docs/paths.md.

>>> from hgm_engine.memory import Memory
>>> m = Memory()
>>> report = m.ingest([{"id": "order-17", "goal": "Check the status of order A1001",
...     "steps": [{"name": "query_order"}, {"name": "notify_user"}], "tags": ["order"],
...     "result": "success", "reward": 1.0}])
>>> report.ingested, m.query("#order-17.actions").ids
(['order-17'], ['order-17/0', 'order-17/1'])
>>> m.locate("what is the status of order B7?").matches[0].path
'order-17'
>>> m.rewrite_path("order-17", [{"keep": 0}, {"add": {"name": "check_cache"}, "after": 0}],
...     "look in the cache before telling the user").committed
True
>>> m.path("order-17")["id"], m.path("order-17")["lineage"]
('order-17@v2', ['order-17', 'order-17@v2'])
>>> [s["name"] for s in m.path("order-17")["steps"]]
['query_order', 'check_cache', 'notify_user']
"""

from __future__ import annotations

import os
import pathlib
from collections import Counter

import attrs
from typing import Any, Callable, Iterable, Sequence

from hgm_engine.errors import LocalizationError, PathError, Problem
from hgm_engine.paths.coarse import DEFAULT_SCENARIOS, FUSION, SummaryVectors, fuse_order, rank_texts
from hgm_engine.paths.documents import lineage_metrics, path_document, path_summaries
from hgm_engine.paths.expand import expander
from hgm_engine.paths.ingest import IngestReport, ingest_taskplan, ingest_trajectories, read_jsonl
from hgm_engine.paths.keeper import IndexKeeper
from hgm_engine.paths.records import is_scenario
from hgm_engine.paths.localize import Embedder, LocateResult, PathIndex, ScoreConfig
from hgm_engine.paths.versions import (
    Build,
    PathGuards,
    outcome_builder,
    reset_builder,
    rewrite_builder,
    rollback_builder,
)
from hgm_engine.txn import TransactionReport

__all__ = ["PathMemory"]


class PathMemory:
    """Paths of one Memory: ingest, locate, versions, outcomes, guards, and the path index.

    Reach it as ``memory.path_memory`` (the Memory methods delegate here). ``embedder`` and
    ``config`` set up the index (default: the dependency-free embedder and its score
    config); ``save_every`` commits the index state is written to the store (durable
    stores only; also ``save()`` and when the memory closes); ``hops`` bounds the graph walk
    that expands located entry paths. ``guards`` (a :class:`PathGuards`) stop rewrite storms;
    ``refusals`` counts the requests refused, by category.

    >>> from hgm_engine import Memory
    >>> paths = Memory().path_memory
    >>> paths.guards.max_versions, paths.save_every, paths.index_t
    (10, 25, 0)
    """

    def __init__(self, memory: Any, *, embedder: Embedder | None = None, config: ScoreConfig | None = None,
                 save_every: int = 25, hops: int = 4):
        self.memory = memory
        self.guards = PathGuards()
        self.keeper = IndexKeeper(memory, embedder=embedder, config=config, save_every=save_every)
        self.hops = hops
        self.max_visits = 5000          # nodes one expansion may look at
        self.max_entries = 10           # entry paths one expansion starts from
        self.refusals: Counter = Counter()
        self._summary_vectors = SummaryVectors()  # the coarse step's summary embeddings

    # -- the index (kept by the IndexKeeper) --------------------------------------------------

    @property
    def embedder(self) -> Embedder | None:
        """The index's embedder (None: the dependency-free default); set it before the first
        ``locate``."""
        return self.keeper.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder | None) -> None:
        self.keeper.embedder = embedder

    @property
    def config(self) -> ScoreConfig | None:
        """The index's score config (None: the embedder's default); set it before the first
        ``locate``."""
        return self.keeper.config

    @config.setter
    def config(self, config: ScoreConfig | None) -> None:
        self.keeper.config = config

    @property
    def save_every(self) -> int:
        """Commits after which the index state is saved again (durable stores)."""
        return self.keeper.save_every

    @save_every.setter
    def save_every(self, count: int) -> None:
        self.keeper.save_every = count

    @property
    def stats(self) -> dict[str, Any]:
        """How the index was got and kept (``path_metrics()["index"]`` shows them)."""
        return self.keeper.stats

    @property
    def durable(self) -> bool:
        return self.keeper.durable

    @property
    def index(self) -> PathIndex:
        """The path index, loaded (or built) on first use."""
        return self.keeper.index

    @property
    def index_t(self) -> int:
        """The ``t`` the index reflects."""
        return self.keeper.index_t

    def save(self) -> int | None:
        """Write the index state and the ``t`` it reflects to the store's meta; returns that
        ``t`` (None when the index was never built)."""
        return self.keeper.save()

    def close(self) -> None:
        """Save the index if commits arrived since it was last saved (durable stores)."""
        self.keeper.close()

    # -- ingest ------------------------------------------------------------------------------

    def ingest(self, trajectories: Iterable[Any], *, skip_invalid: bool = False, author: str | None = None,
               scenario: str | None = None, lines: Sequence[int] | None = None,
               reason: str | None = None, progress: Any = None) -> IngestReport:
        """Store trajectories (formats.md) as paths, all in one transaction: per trajectory a
        goal (``kind: "path"``, id = the trajectory id) with one action per step
        (``{id}/{i}``, ``parent_of`` with ``order``) and ``before`` along ``edges``; under the
        goal ``scenario`` (created if missing) when given. A trajectory may have at most
        ``guards.max_steps`` steps and ``guards.max_edges`` edges (``limit-exceeded``). Every line is checked first: with
        problems nothing is stored and :class:`~hgm_engine.PathError` lists them
        with their line numbers (``lines`` gives them; default 1, 2, ...), unless
        ``skip_invalid``, which stores the valid ones and lists the rest in the report.
        ``progress(phase, done, total)`` hears of the work as it goes (the CLI draws it).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> r = m.ingest([{"id": "a", "goal": "x", "steps": ["s"]}, {"steps": []}], skip_invalid=True)
        >>> r.ingested, [(p.line, p.category) for p in r.problems]
        (['a'], [(2, 'bad-trajectory')])
        """
        return ingest_trajectories(self.memory, trajectories, skip_invalid=skip_invalid, author=author,
                                   scenario=scenario, lines=lines, reason=reason, max_steps=self.guards.max_steps,
                                   max_edges=self.guards.max_edges, progress=progress)

    def ingest_file(self, path: str | os.PathLike, *, skip_invalid: bool = False, author: str | None = None,
                    scenario: str | None = None) -> IngestReport:
        """:meth:`ingest` the trajectories of a JSON Lines file (line numbers are the file's)."""
        try:
            text = pathlib.Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise PathError([Problem("io", f"cannot read {path}: {reason}", where=str(path))]) from None
        docs, lines = read_jsonl(text)
        return self.ingest(docs, skip_invalid=skip_invalid, author=author, scenario=scenario, lines=lines,
                           reason=f"ingest {path}")

    def ingest_taskplan(self, directory: str | os.PathLike, *, ids: Iterable[str] | str | None = None,
                        skip_invalid: bool = False, author: str | None = None, scenario: str | None = None,
                        prefix: str | None = None, progress: Any = None) -> IngestReport:
        """:meth:`ingest` a task-plan data set folder (``data.json`` JSON Lines; tool domains of
        ``graph_desc.json`` become tags). Path ids are ``{prefix}{request id}``, the prefix
        ``"{folder name}-"`` by default; ``ids`` keeps some requests (a list, or ``"memory"`` /
        ``"test"`` for the two sides of ``split_ids.json``).
        """
        return ingest_taskplan(self.memory, directory, ids=ids, skip_invalid=skip_invalid, author=author,
                               scenario=scenario, prefix=prefix, max_steps=self.guards.max_steps,
                               max_edges=self.guards.max_edges, progress=progress)

    # -- locate ------------------------------------------------------------------------------

    def locate(self, text: str, tags: Iterable[str] | str | None = None, k: int = 5, *,
               scenario: str | None = None, cross_scenario: bool = False, steps: Sequence[str] | None = None,
               hops: int | None = None, coarse: bool = False, scenarios: int | None = None,
               fuse: bool = False) -> LocateResult:
        """The ``k`` stored paths that best fit ``text``, best first, each with the score's
        ``breakdown`` (hgm_engine.paths.localize). Candidates are recalled by text, entry steps and
        ``tags``; they are expanded through the graph from the entry paths when the index's config
        says so (``expand_limit`` > 0; off by default) or when ``hops`` is given, within ``hops``
        (default 4), never into another scenario unless ``cross_scenario``; ``scenario``
        keeps to one scenario's paths (and paths without one). No network call with the
        default embedder.

        With ``coarse``, the scenario summaries (``Memory.summarize``) are read first: the
        ``scenarios`` best of them for ``text`` choose the scenarios whose paths the fine step
        ranks (paths of no scenario stay in); the result's ``coarse`` says what each step did
        (docs/time.md). Without a matching summary the fine step is the flat locate.
        ``scenarios`` defaults to 3 (``FUSION["scenarios"]`` with ``fuse``).

        With ``coarse`` and ``fuse``, no path is left out: the flat locate's first
        ``FUSION["depth"]`` matches are re-ranked by reciprocal-rank fusion of their flat rank
        with the rank of their scenario among the chosen ones
        (:func:`hgm_engine.paths.coarse.fuse_order`; settings tuned on development data).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
        >>> [(match.path, sorted(match.breakdown)[:2]) for match in m.locate("refund my order").matches]
        [('r1', ['completeness', 'freshness'])]
        """
        if isinstance(tags, str):
            tags = [t.strip() for t in tags.split(",") if t.strip()]
        if coarse and scenario is not None:
            raise PathError.single("bad-query", "coarse chooses the scenarios from their summaries; give scenario or coarse, not both")
        if not isinstance(fuse, bool) or (fuse and coarse is not True):
            raise PathError.single("bad-query", "fuse is a way of coarse-to-fine locate: give it (true or false) with coarse")
        if scenarios is None:
            scenarios = FUSION["scenarios"] if fuse else DEFAULT_SCENARIOS
        if isinstance(scenarios, bool) or not isinstance(scenarios, int) or scenarios < 1:
            raise PathError.single("bad-query", f"scenarios must be a positive integer, not {scenarios!r}")
        index = self.index
        expand = expander(self.memory, cross_scenario=cross_scenario, hops=self.hops if hops is None else hops,
                          max_visits=self.max_visits, max_entries=self.max_entries)
        # Expansion is off by default (config.expand_limit 0); asking for hops turns it on for this call.
        config = index.config.with_expansion() if hops is not None and hops > 0 else None
        with self.keeper.lock:
            exclude: list[str] = []
            explanation = self._coarse_step(index, text, scenarios, None if fuse else exclude) if coarse else None
            depth = max(k, FUSION["depth"]) if fuse else k
            try:
                result = index.locate(text, tags or (), depth, steps=steps, scenario=scenario,
                                      cross_scenario=cross_scenario, expand=expand, exclude=exclude, config=config)
            except LocalizationError as err:
                raise PathError(err.problems) from None
            if fuse:
                return self._fused(index, result, explanation, k, depth)
        if explanation is not None:
            explanation["fine"] = {"paths": len(index) - len(exclude), "excluded": len(exclude),
                                   "matches": [m.path for m in result.matches]}
            result = attrs.evolve(result, coarse=explanation)
        return result

    def _fused(self, index: Any, result: LocateResult, explanation: dict[str, Any], k: int, depth: int) -> LocateResult:
        """The flat ``result`` (``depth`` matches) re-ranked with the chosen scenarios' ranks."""
        flat = result.matches
        rank = {c["scenario"]: r for r, c in enumerate(explanation["chosen"], start=1)}
        if rank:
            of = [[getattr(index.get(p), "scenario", None) for p in (m.supporting or (m.path,))] for m in flat]
            order = fuse_order(of, rank, weight=FUSION["weight"], k=FUSION["k"])
            matches = tuple(flat[i] for i in order[:k])
        else:
            matches = flat[:k]
        explanation["fine"] = {"paths": len(index), "excluded": 0, "matches": [m.path for m in matches],
                               "fused": {"depth": depth, "weight": FUSION["weight"], "k": FUSION["k"],
                                         "flat": [m.path for m in flat[:k]]}}
        return attrs.evolve(result, matches=matches, coarse=explanation)

    def _coarse_step(self, index: Any, text: str, scenarios: int, exclude: list[str] | None) -> dict[str, Any]:
        """Rank the scenario summaries for ``text``; fill ``exclude`` (when given) with the
        paths of the scenarios not chosen; return what was done."""
        with self.memory.reading():
            graph = self.memory.graph
            texts, covers, stale = [], {}, set()
            for node in graph.nodes_with("fact", "kind", "summary"):
                root = node.attrs.get("summary_of")
                if not is_scenario(graph.node(root)) or not isinstance(node.attrs.get("content"), str):
                    continue
                texts.append((node.id, node.attrs["content"]))
                covers[node.id] = root
                if node.attrs.get("dirty"):
                    stale.add(node.id)
        embedder = index.embedder
        ranked = rank_texts(embedder, text or "", texts, self._summary_vectors.vectors(embedder, texts)) if texts else []
        chosen = [(sid, score) for sid, score in ranked[:scenarios] if score > 0]
        explanation: dict[str, Any] = {
            "summaries": len(texts),
            "chosen": [{"summary": sid, "scenario": covers[sid], "score": round(score, 6), "needs_review": sid in stale}
                       for sid, score in chosen],
        }
        if not chosen:
            explanation["fallback"] = "no scenario summary matches the request: every path was ranked (flat)"
            return explanation
        if exclude is None:
            return explanation
        keep = {covers[sid] for sid, _ in chosen}
        exclude.extend(record.id for record in index.records() if record.scenario is not None and record.scenario not in keep)
        return explanation

    # -- reading paths -----------------------------------------------------------------------

    def path(self, path_id: str) -> dict[str, Any]:
        """One path: goal, steps, edges, tags, status, version, lineage, replaces, reward,
        result, counters, and every version of its lineage. A lineage's first id names its
        current version; ``ID@v1`` the first version itself.
        """
        with self.memory.reading():
            return path_document(self.memory.graph, path_id)

    def paths(self, *, all_versions: bool = False) -> list[dict[str, Any]]:
        """A summary of every path: one per lineage (its current version), or every version."""
        with self.memory.reading():
            return path_summaries(self.memory.graph, all_versions=all_versions)

    def metrics(self) -> dict[str, Any]:
        """Counters to watch: rewrites, versions per lineage, consecutive failures, the
        ``needs_human`` list, guard refusals, and the path index's state.
        """
        with self.memory.reading():
            metrics = lineage_metrics(self.memory.graph)
        metrics.update(guards=self.guards.to_json(), refusals=dict(self.refusals), index=self.keeper.metrics())
        return metrics

    # -- changing paths ----------------------------------------------------------------------

    def rewrite_path(self, path_id: str, steps_or_ops: Any, reason: str, *, author: str | None = None) -> TransactionReport:
        """A new version of a path, in one transaction: goal ``{root}@v{n}`` with new actions,
        a ``replaces`` edge to the current version, which becomes ``superseded`` with its reward
        × ``supersede_factor``; ``version``, ``lineage``, ``rewrite_reason`` recorded.
        ``steps_or_ops`` is a full list of steps or edit ops (``keep``/``change``/``add``/
        ``remove``; :func:`hgm_engine.paths.resolve_steps`). Returns the report (refused
        by constraints: ``committed`` false with the violations); an unknown path, a bad
        step list, a guard (``rewrite-cap``, ``version-cap``, ``needs-human``) raise
        :class:`~hgm_engine.PathError`. Nothing changes unless it commits.
        """
        return self._commit(lambda: rewrite_builder(path_id, steps_or_ops, reason, self.guards),
                            author=author, reason=reason, kind="path-rewrite")

    def rollback_path(self, path_id: str, version: int | str, *, author: str | None = None,
                      reason: str | None = None) -> TransactionReport:
        """Make an older version current again: a NEW version copying its steps (with
        ``restored_from``), replacing the current one (so ``replaces`` stays acyclic).
        """
        return self._commit(lambda: rollback_builder(path_id, version, reason, self.guards), author=author,
                            reason=reason or f"rollback {path_id} to {version}", kind="path-rollback")

    def record_outcome(self, path_id: str, outcome: str, *, reward: float | None = None,
                       author: str | None = None) -> TransactionReport:
        """Record a run of a path version: ``success`` or ``failure``. ``reward`` (in [0, 1],
        default 1 or 0) enters the version's reward as a moving average with weight
        ``outcome_rate``; ``result``, ``successes``/``failures`` are updated. Failures of a
        current rewritten version count towards ``max_failed_rewrites`` (a success resets the
        streak); reaching it turns the lineage ``needs_human``.
        """
        return self._commit(lambda: outcome_builder(path_id, outcome, reward, self.guards),
                            author=author, reason=f"{outcome} of {path_id}", kind="path-outcome")

    def reset_path(self, path_id: str, *, author: str | None = None, reason: str | None = None) -> TransactionReport:
        """A human has looked: clear the lineage's ``needs_human`` and failure streak."""
        return self._commit(lambda: reset_builder(path_id), author=author, reason=reason or f"reset {path_id}",
                            kind="path-reset")

    def _commit(self, builder: Callable[[], Build], *, author: str | None, reason: str | None,
                kind: str) -> TransactionReport:
        """Commit what ``builder()`` makes; a refusal (its arguments or the commit's checks)
        is counted in ``refusals`` by category, then raised."""
        try:
            return self.memory.commit_built(builder(), author=author, reason=reason, kind=kind)
        except PathError as err:
            self.refusals[err.category] += 1
            raise
