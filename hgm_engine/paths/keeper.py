"""The path index's upkeep: opened (or built) on first use, kept in step with every commit,
saved to the store and replayed from its ``t`` when the memory opens again.

The :class:`~hgm_engine.paths.localize.PathIndex` holds the :class:`PathRecord` of every path
(:func:`~hgm_engine.paths.records.record_from_graph`). :class:`IndexKeeper` listens to the
memory's commits (``memory.on_commit``); each commit's records are derived again for the
paths it touched (:func:`~hgm_engine.paths.records.affected_paths`). On a durable store the
state is written to the store's meta under :data:`INDEX_META_KEY` with the ``t`` it reflects
(after a rebuild, every ``save_every`` commits and on close); opening loads it and replays
the commits since, or rebuilds when it is missing, unreadable or older than a load.

>>> from hgm_engine import Memory
>>> m = Memory()
>>> keeper = IndexKeeper(m)
>>> _ = m.ingest([{"id": "p", "goal": "book a flight", "steps": ["search", "book"]}])
>>> len(keeper.index), keeper.index_t, keeper.stats["source"]
(1, 1, 'rebuilt')
>>> _ = m.apply({"ops": [{"op": "delete_node", "id": "p", "cascade": True}]})
>>> len(keeper.index), keeper.index_t
(0, 2)
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from typing import Any, Iterable, Mapping

from hgm_engine.errors import HGMError, LocalizationError
from hgm_engine.paths.localize import DENSE_SCORE_CONFIG, Embedder, PathIndex, ScoreConfig
from hgm_engine.paths.records import affected_paths, is_path, record_from_graph

__all__ = ["IndexKeeper", "INDEX_META_KEY", "STATE_FORMAT", "JSON_STATE_FORMAT"]

INDEX_META_KEY = "path_index"
STATE_FORMAT = "hgm-path-memory/2"        # the index as PathIndex.to_bytes, base64 in the meta row
JSON_STATE_FORMAT = "hgm-path-memory/1"   # the index as PathIndex.to_state (still read)


class IndexKeeper:
    """Keeps one memory's path index: ``index`` (opened on first use), ``index_t`` (the ``t``
    it reflects), ``stats`` (how it was got and kept), ``save()`` and ``close()``. ``lock`` is
    held while the index changes; hold it to read the index while commits arrive.

    ``embedder`` and ``config`` make the index (set them before it is first opened);
    ``save_every`` is how many commits may pass before the state is saved again.
    """

    def __init__(self, memory: Any, *, embedder: Embedder | None = None, config: ScoreConfig | None = None,
                 save_every: int = 25):
        self.memory = memory
        self.embedder = embedder
        self.config = config
        self.save_every = save_every
        self.lock = threading.RLock()
        self._index: PathIndex | None = None
        self._index_t = 0
        self._unsaved = 0
        self.stats: dict[str, Any] = {
            "source": None, "rebuilds": 0, "state_loads": 0, "replayed_commits": 0,
            "incremental_commits": 0, "saves": 0, "saved_t": None, "last_error": None,
        }
        memory.on_commit(self.on_commit)

    @property
    def durable(self) -> bool:
        """Whether the memory's store outlives the process (the state is worth saving)."""
        return self.memory.store.location != ":memory:"

    def _config(self) -> ScoreConfig:
        """The score config: the one set, else the embedder's kind's default."""
        if self.config is not None:
            return self.config
        if self.embedder is not None and not self.embedder.sparse:
            return DENSE_SCORE_CONFIG
        return ScoreConfig()

    @property
    def index(self) -> PathIndex:
        """The path index, loaded (or built) on first use."""
        index = self._index
        if index is None:
            self._open_index()
            index = self._index
        return index  # type: ignore[return-value]

    @property
    def index_t(self) -> int:
        """The ``t`` the index reflects."""
        return self._index_t

    def _read_state(self) -> tuple[int, Mapping[str, Any] | bytes] | None:
        """The saved ``t`` and index: ``bytes`` (the binary state) or a JSON state (older saves)."""
        try:
            text = self.memory.store.get_meta(INDEX_META_KEY)
        except HGMError as err:
            self.stats["last_error"] = err.message
            return None
        if not text:
            return None
        try:
            doc = json.loads(text)
            if doc.get("format") not in (STATE_FORMAT, JSON_STATE_FORMAT) or not isinstance(doc.get("t"), int):
                raise ValueError(f"not a {STATE_FORMAT} document")
            if doc["format"] == STATE_FORMAT:
                return doc["t"], binascii.a2b_base64(doc["index"], strict_mode=True)
            return doc["t"], doc["index"]
        except (ValueError, TypeError, KeyError, AttributeError, binascii.Error) as exc:
            self.stats["last_error"] = f"stored path index unreadable: {exc}"
            return None

    def _restore(self, state: Mapping[str, Any] | bytes) -> PathIndex:
        if isinstance(state, bytes):
            return PathIndex.from_bytes(state, self.embedder, self._config())
        return PathIndex.from_state(state, self.embedder, self._config())

    def _open_index(self) -> None:
        memory = self.memory
        with memory.exclusive(), self.lock:
            if self._index is not None:
                return
            try:
                memory.refresh()  # commits other processes made: the state may reflect them
            except HGMError as err:
                self.stats["last_error"] = f"could not catch up: {err.message}"
            t_now = memory.t
            index = None
            replayed = 0
            stored = self._read_state()
            if stored is not None and stored[0] <= t_now:
                saved_t, state = stored
                try:
                    commits = memory.commits(since=saved_t)
                    if not any(c.genesis for c in commits):
                        index = self._restore(state)
                        with memory.reading():
                            affected: set[str] = set()
                            for commit in commits:
                                affected |= affected_paths(commit, memory.graph)
                            self._sync(index, affected)
                        replayed = len(commits)
                        self.stats["state_loads"] += 1
                        self.stats["source"] = "state"
                        self.stats["replayed_commits"] += replayed
                except (HGMError, ValueError, TypeError, KeyError) as exc:
                    self.stats["last_error"] = f"stored path index not used: {exc}"
                    index = None
            if index is None:
                index = self._rebuild()
            self._index, self._index_t = index, t_now
            if self.durable and (self.stats["source"] == "rebuilt" or replayed):
                self._save_quietly()

    def _rebuild(self) -> PathIndex:
        memory = self.memory
        index = PathIndex(self.embedder, self._config())
        with memory.reading():
            graph = memory.graph
            records = [record_from_graph(graph, node.id) for node in graph.nodes_of_type("goal") if is_path(node)]
        index.add_many([r for r in records if r is not None])
        self.stats["rebuilds"] += 1
        self.stats["source"] = "rebuilt"
        return index

    def _sync(self, index: PathIndex, ids: Iterable[str]) -> None:
        graph = self.memory.graph
        new = []
        for path_id in sorted(ids):
            record = record_from_graph(graph, path_id)
            if record is None:
                if path_id in index:
                    index.remove(path_id)
            elif path_id in index:
                if index.get(path_id) != record:
                    index.update(record)
            else:
                new.append(record)
        index.add_many(new)

    def on_commit(self, commit: Any) -> None:
        """Bring the index to ``commit`` (registered with ``memory.on_commit``): the records
        of the paths it touched are derived again; a load of the whole memory rebuilds."""
        try:
            with self.lock:
                if self._index is None or commit.t <= self._index_t:
                    return
                if commit.genesis:
                    self._index = self._rebuild()
                else:
                    with self.memory.reading():
                        self._sync(self._index, affected_paths(commit, self.memory.graph))
                self._index_t = commit.t
                self.stats["incremental_commits"] += 1
                self._unsaved += 1
                if self.durable and self._unsaved >= self.save_every:
                    self._save_quietly()
        except Exception as exc:  # noqa: BLE001 - the commit is durable already; rebuild later
            self._index = None
            self.stats["last_error"] = f"path index dropped after t={commit.t}: {exc}"

    def save(self) -> int | None:
        """Write the index state and the ``t`` it reflects to the store's meta; returns that
        ``t`` (None when the index was never built)."""
        with self.lock:
            if self._index is None:
                return None
            try:
                packed = base64.b64encode(self._index.to_bytes()).decode("ascii")
                doc: dict[str, Any] = {"format": STATE_FORMAT, "t": self._index_t, "index": packed}
            except LocalizationError:  # no numpy: the records as JSON, embedded again on load
                doc = {"format": JSON_STATE_FORMAT, "t": self._index_t, "index": self._index.to_state()}
            self.memory.store.set_meta(INDEX_META_KEY, json.dumps(doc, ensure_ascii=False, separators=(",", ":")))
            self._unsaved = 0
            self.stats["saves"] += 1
            self.stats["saved_t"] = self._index_t
            return self._index_t

    def _save_quietly(self) -> None:
        try:
            self.save()
        except HGMError as err:  # a read-only or busy store: the index still works
            self.stats["last_error"] = f"path index not saved: {err.message}"

    def close(self) -> None:
        """Save the index if commits arrived since it was last saved (durable stores)."""
        if self._index is not None and self._unsaved and self.durable:
            self._save_quietly()

    def metrics(self) -> dict[str, Any]:
        """``stats`` with whether the index is loaded, its size, its ``t`` and the commits not
        yet saved (``Memory.path_metrics()["index"]``)."""
        index = self._index
        return dict(self.stats, loaded=index is not None, size=len(index) if index is not None else None,
                    t=self._index_t if index is not None else None, unsaved_commits=self._unsaved)
