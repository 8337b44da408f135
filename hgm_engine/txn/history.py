"""History: commits, time travel, diffs and per-node history — never by copying the graph.

Every commit keeps its net changes with full before/after payloads. The state at an earlier
``t`` is an overlay over the current graph that undoes the commits after ``t`` (cost: the
changes since ``t``). A snapshot is only a name for a ``t``.

>>> from hgm_engine.model.graph import MemoryGraph
>>> from hgm_engine.model.overlay import GraphOverlay
>>> g = MemoryGraph()
>>> o = GraphOverlay(g); _ = o.add_node("g", "goal", {"status": "active"})
>>> c1 = Commit(1, "me", "create", None, 0.0, tuple(o.changes()))
>>> from hgm_engine.model.overlay import apply_changes; apply_changes(g, list(c1.changes))
>>> o = GraphOverlay(g); _ = o.set_node_attrs("g", {"status": "done"})
>>> c2 = Commit(2, "me", "finish", None, 0.0, tuple(o.changes()))
>>> apply_changes(g, list(c2.changes))
>>> historical_view(g, [c2]).node("g").attrs["status"]
'active'
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping


from hgm_engine.errors import Problem, RequestError
from hgm_engine.model import GraphView, MemoryGraph, Node, format_instant, name_problem, parse_instant, same_json
from hgm_engine.model import Change, Commit, GraphOverlay, apply_changes
from hgm_engine.txn.report import change_to_json

if TYPE_CHECKING:
    from hgm_engine.txn.sync import MemoryState

__all__ = [
    "historical_view",
    "net_changes",
    "EmptyView",
    "ViewCache",
    "node_histories",
    "MemoryHistory",
    "HistoricalMemory",
]


class EmptyView(MemoryGraph):
    """The empty memory (the state before a genesis load)."""


def historical_view(graph: MemoryGraph, later_commits: Iterable[Commit]) -> GraphView:
    """The state of ``graph`` before ``later_commits`` (given oldest first) were applied."""
    commits = list(later_commits)
    if any(c.genesis for c in commits):
        return EmptyView()
    overlay = GraphOverlay(graph)
    for commit in reversed(commits):
        apply_changes(overlay, [change.inverse() for change in reversed(commit.changes)])
    return overlay


def net_changes(before_view, after_view, commits: Iterable[Commit]) -> list[dict[str, Any]]:
    """What differs between two states, as report changes (one per node or edge)."""
    node_ids: dict[str, None] = {}
    edge_keys: dict[tuple, None] = {}
    genesis = False
    for commit in commits:
        genesis = genesis or commit.genesis
        for change in commit.changes:
            payload = change.after if change.after is not None else change.before
            if isinstance(payload, Node):
                node_ids[payload.id] = None
            else:
                edge_keys[payload.key] = None
    if genesis:  # everything in the later state may be new
        for node_id in after_view.node_map():
            node_ids[node_id] = None
            for edge in after_view.out_edges(node_id):
                edge_keys[edge.key] = None
    out: list[Change] = []
    for node_id in node_ids:
        old, new = before_view.node(node_id), after_view.node(node_id)
        if old is None and new is not None:
            out.append(Change("node_added", None, new))
        elif old is not None and new is None:
            out.append(Change("node_removed", old, None))
        elif old is not None and new is not None and (not same_json(old.attrs, new.attrs) or old.seq != new.seq):
            if old.seq != new.seq:
                out.extend([Change("node_removed", old, None), Change("node_added", None, new)])
            else:
                out.append(Change("node_updated", old, new))
    for key in edge_keys:
        old, new = before_view.edge(*key), after_view.edge(*key)
        if old is None and new is not None:
            out.append(Change("edge_added", None, new))
        elif old is not None and new is None:
            out.append(Change("edge_removed", old, None))
        elif old is not None and new is not None and old.seq != new.seq:
            # Re-created (its node was removed and put back, say): removed and added, as nodes are.
            out.extend([Change("edge_removed", old, None), Change("edge_added", None, new)])
        elif old is not None and new is not None and not same_json(old.attrs, new.attrs):
            out.append(Change("edge_updated", old, new))
    return [change_to_json(c) for c in out]


class ViewCache:
    """The views of earlier states last read (at most ``size``): each is valid for the graph
    version and the ``t`` it was built at, and :meth:`carry` moves it across a commit instead
    of building it again.

    >>> cache = ViewCache()
    >>> cache.put(0, 1, 1, EmptyView())
    >>> cache.get(0, 1, 1) is not None, cache.get(0, 1, 2)  # built at t=1; t=2 has no view yet
    (True, None)
    """

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._views: OrderedDict[int, tuple[int, int, Any]] = OrderedDict()

    def get(self, t: int, version: int, now: int) -> Any | None:
        """The cached view of ``t`` when it was built or carried for ``version`` at ``now``."""
        cached = self._views.get(t)
        if cached is not None and cached[0] == version and cached[1] == now:
            self._views.move_to_end(t)
            return cached[2]
        return None

    def put(self, t: int, version: int, now: int, view: Any) -> None:
        self._views[t] = (version, now, view)
        if len(self._views) > self.size:
            self._views.popitem(last=False)

    def carry(self, version: int, now: int, changes: list[Change]) -> None:
        """Carry the cached historical views over a commit instead of dropping them."""
        for t, (_, _, view) in list(self._views.items()):
            if isinstance(view, GraphOverlay):
                view.undo_later(changes)
            self._views[t] = (version, now, view)

    def clear(self) -> None:
        self._views.clear()


def node_histories(
    commits: Iterable[Commit], node_ids: Iterable[str], loaded: Callable[[int, list[str]], list[str]]
) -> dict[str, list[dict[str, Any]]]:
    """For each of ``node_ids``, one entry per commit that touched it (its attributes or its
    edges), oldest first, in one pass over ``commits``. A genesis commit keeps no changes:
    ``loaded(t, ids)`` says which of the ids its state holds.

    >>> c = Commit(1, "me", "start", None, 0.0, (), genesis=True, kind="load")
    >>> node_histories([c], ["g", "x"], lambda t, ids: ["g"])["g"][0]["changes"]
    [{'kind': 'loaded', 'id': 'g'}]
    """
    ids = list(dict.fromkeys(node_ids))
    wanted = set(ids)
    found: dict[str, list[dict[str, Any]]] = {node_id: [] for node_id in ids}
    for commit in commits:
        if commit.genesis:
            for node_id in loaded(commit.t, ids):
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


def _history_entry(commit: Commit, changes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "t": commit.t,
        "author": commit.author,
        "reason": commit.reason,
        "timestamp": commit.timestamp,
        "kind": commit.kind,
        "changes": changes,
    }


class MemoryHistory:
    """The history reads of one memory: which ``t`` a number or snapshot name means, diffs,
    the journal and per-node history (``state`` is the memory's
    :class:`~hgm_engine.txn.sync.MemoryState`).

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    >>> [commit.t for commit in m.commits()], m.snapshots()
    ([1], {})
    """

    def __init__(self, state: "MemoryState") -> None:
        self.state = state
        self.store = state.store

    def resolve_t(self, as_of: int | str) -> int:
        """The ``t`` that ``as_of`` names: a ``t`` of this memory's history, a snapshot name,
        or an ISO 8601 time — the last commit made at or before it (0 when none was).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> m.snapshot("start"), m.resolve_t("start"), m.resolve_t(0)
        (1, 1, 0)
        >>> m.resolve_t("2000-01-01"), m.resolve_t("2999-01-01T00:00:00Z")
        (0, 1)

        A text of ASCII digits is a ``t``; a snapshot name is looked up next, then an ISO 8601
        time; any other text is an unknown snapshot name (``²`` is one, and no snapshot has it).
        Anything else than an integer or a text is ``invalid-argument``.

        >>> m.resolve_t("²")
        Traceback (most recent call last):
        ...
        hgm_engine.errors.RequestError: unknown-snapshot: no snapshot named '²' (known: start), and it is not an ISO 8601 time (e.g. 2026-03-01 or 2026-03-01T09:30:00Z)
        >>> m.resolve_t("9" * 5000)
        Traceback (most recent call last):
        ...
        hgm_engine.errors.RequestError: invalid-argument: t=99999999999999999999... (5,000 digits) is outside the history (0..1)
        """
        if isinstance(as_of, str):
            digits = as_of.lstrip("-")
            if not (digits.isascii() and digits.isdigit()):
                snapshots = self.store.snapshots()
                if as_of in snapshots:
                    return snapshots[as_of]
                instant = parse_instant(as_of)
                if instant is not None:
                    return self.t_at(instant)
                known = ", ".join(sorted(snapshots)) or "none"
                raise _fail(
                    "unknown-snapshot",
                    f"no snapshot named {as_of!r} (known: {known}), and it is not an ISO 8601 time "
                    "(e.g. 2026-03-01 or 2026-03-01T09:30:00Z)",
                )
            if len(digits) > 18:  # far outside any history, and maybe too long to read
                shown = f"{as_of[:20]}... ({len(digits):,} digits)" if len(as_of) > 20 else as_of
                raise _fail("invalid-argument", f"t={shown} is outside the history (0..{self.state.t})")
        elif isinstance(as_of, bool) or not isinstance(as_of, int):
            raise _fail("invalid-argument", f"a t is an integer or a snapshot name, not {type(as_of).__name__}")
        elif not -(10**18) < as_of < 10**18:  # never printed whole: Python refuses over 4,300 digits
            raise _fail("invalid-argument", f"t (an integer of over 18 digits) is outside the history (0..{self.state.t})")
        t = int(as_of)
        if not 0 <= t <= self.state.t:
            raise _fail("invalid-argument", f"t={t} is outside the history (0..{self.state.t})")
        return t

    def t_at(self, instant: float) -> int:
        """The last ``t`` committed at or before ``instant`` (seconds since 1970 UTC), or 0.

        Commit times never go backwards within a memory (docs/time.md), so this is a binary
        search reading about log2(t) commits. An ISO 8601 time names a microsecond at most: a
        commit made within a microsecond after ``instant`` counts as at it (so the time
        :meth:`commit_time` prints names that commit).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> m.t_at(0.0), m.t_at(m.commits()[0].timestamp)
        (0, 1)
        """
        low, high = 0, self.state.t  # the answer is in low..high
        while low < high:
            middle = (low + high + 1) // 2
            commits = self.store.read_commits(middle - 1, middle)
            stamp = commits[0].timestamp if commits else None
            if stamp is not None and stamp <= instant + 1e-6:
                low = middle
            else:
                high = middle - 1
        return low

    def commit_time(self, t: int) -> str | None:
        """When commit ``t`` was made, as an ISO 8601 UTC time (None for t=0).

        >>> from hgm_engine import Memory
        >>> Memory().commit_time(0) is None
        True
        """
        t = self.resolve_t(t)
        if t == 0:
            return None
        commits = self.store.read_commits(t - 1, t)
        return format_instant(commits[0].timestamp) if commits else None

    def diff(self, t1: int | str, t2: int | str) -> list[dict[str, Any]]:
        """What changed from state ``t1`` to state ``t2``: one entry per node or edge.

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> [(change["kind"], change["id"]) for change in m.diff(0, 1)]
        [('node_added', 'g')]
        """
        low, high = self.resolve_t(t1), self.resolve_t(t2)
        state = self.state
        with state.lock.reading():
            before, after = state.view_at(low), state.view_at(high)
            commits = self.store.read_commits(min(low, high), max(low, high))
            return net_changes(before, after, commits)

    def commits(self, since: int = 0) -> list[Commit]:
        """The commits after ``since``, oldest first."""
        return self.store.read_commits(since, self.state.t)

    def history(self, node_id: str) -> list[dict[str, Any]]:
        """Every commit that touched ``node_id`` (its attributes or its edges), oldest first."""
        return self.histories([node_id])[node_id]

    def histories(self, node_ids: Iterable[str], *, upto: int | None = None) -> dict[str, list[dict[str, Any]]]:
        """:meth:`history` of several nodes in one pass over the journal (up to ``upto``).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}, {"op": "add_node", "id": "a", "type": "action", "parent": "g"}]})
        >>> _ = m.apply({"ops": [{"op": "update_node", "id": "a", "set": {"status": "done"}}]})
        >>> {node: [entry["t"] for entry in entries] for node, entries in m.histories(["g", "a"]).items()}
        {'g': [1], 'a': [1, 2]}
        """
        state = self.state

        def loaded(t: int, ids: list[str]) -> list[str]:
            with state.lock.reading():
                view = state.view_at(t)
                return [node_id for node_id in ids if view.node(node_id) is not None]

        commits = self.store.read_commits(0, state.t if upto is None else min(upto, state.t))
        return node_histories(commits, node_ids, loaded)

    def changes_since(self, t: int | str) -> dict[str, Any]:
        """What happened after ``t``: the commits (with their reports' rules) and the net diff.

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> news = m.changes_since(0)
        >>> news["t"], [c["t"] for c in news["commits"]], [c["id"] for c in news["changes"]]
        (1, [1], ['g'])
        """
        since = self.resolve_t(t)
        return {
            "since": since,
            "t": self.state.t,
            "commits": [c.summary() for c in self.store.read_commits(since, self.state.t)],
            "changes": self.diff(since, self.state.t),
        }

    def snapshot(self, name: str, t: int | None = None) -> int:
        """Name a state (the current one by default); returns its ``t``. Costs O(1).

        A name is a non-empty string that is not a number (``invalid-argument``), holds no lone
        surrogate (the rule of every stored string) and no control character (``\\x00`` cannot
        be stored in PostgreSQL, the others would move a terminal): ``invalid-value``.

        >>> from hgm_engine import Memory
        >>> Memory().snapshot("start")
        0
        >>> try:
        ...     Memory().snapshot("a\\x1b[2J")
        ... except RequestError as err:
        ...     print(err.category, err.message)
        invalid-value a snapshot name may not hold a control character ('\\x1b' at character 2)
        """
        if not isinstance(name, str) or not name or name.lstrip("-").isdigit():
            raise _fail("invalid-argument", "a snapshot name is a non-empty string that is not a number")
        problem = name_problem(name, "name", "a snapshot name")
        if problem is not None:
            raise RequestError([problem])
        if parse_instant(name) is not None:
            raise _fail(
                "invalid-argument",
                f"a snapshot name is not an ISO 8601 time: {name!r} already means the last commit at or before that time",
            )
        t = self.state.t if t is None else self.resolve_t(t)
        self.store.set_snapshot(name, t)
        return t

    def snapshots(self) -> dict[str, int]:
        """Snapshot name → ``t``."""
        return self.store.snapshots()



def _fail(category: str, message: str) -> RequestError:
    return RequestError([Problem(category, message)])


class HistoricalMemory:
    """A read-only memory fixed at one ``t`` (``memory.as_of(t)``).

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    >>> m.as_of(0).query("nodes.count()").value, m.as_of(1).node("g")["type"]
    (0, 'goal')
    """

    def __init__(self, memory: Any, t: int):
        self._memory = memory
        self.t = t

    @property
    def memory(self) -> Any:
        """The memory this is a state of."""
        return self._memory

    def query(self, expr: str, *, focus: str | None = None, params: Mapping[str, Any] | None = None) -> Any:
        return self._memory.query(expr, focus=focus, params=params, as_of=self.t)

    def node(self, node_id: str) -> dict[str, Any] | None:
        return self._memory.node(node_id, as_of=self.t)

    def export(self) -> dict[str, Any]:
        return self._memory.export(as_of=self.t)


# -- records (JSON) for stores ------------------------------------------------------------------
