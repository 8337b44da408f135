"""The node index's upkeep for one memory: kept by every commit, in the commit's own store
transaction, read back when the memory opens, and the searcher queries run on.

:class:`NodeSearch` does four things:

- **Commits.** Its :meth:`~NodeSearch.store_hook` runs inside every commit's store
  transaction, after the journal row (``CommitPipeline`` calls the memory's ``store_hooks``):
  it analyses the text of the nodes the commit changed, embeds the new texts when the memory
  has an embedder (an embedder that fails fails the whole commit: nothing is written), and
  on a durable store writes the entries that changed (``node_index_changes``) and the ``t``
  they reflect — or, once those have grown past :data:`COMPACT_MIN` entries and an eighth of
  the index, the whole index as one new segment instead (``node_index``). An in-process
  memory writes nothing and builds its index on the first search.
- **Opening.** The first search (or commit) of a memory opened again reads the saved segment
  and the changed entries — no text is analysed — when their ``t`` is the memory's; a store
  without them (made before the index, written by an older hgm, damaged) is indexed from its
  state once, and the next commit saves the whole index.
- **Following.** Commits applied since the index was last brought up to date (this
  process's, or other processes' caught up with) are applied to it before a search reads it.
- **Searching.** :meth:`~NodeSearch.hits` and :meth:`~NodeSearch.rank` rank by BM25
  (:mod:`hgm_engine.model.nodeindex`), fused with the vectors' cosine ranks when an embedder
  is set (:meth:`~NodeSearch.configure`): reciprocal rank fusion, ``1/(60 + lexical rank) +
  1/(60 + vector rank)`` over the lexical matches and the :data:`DENSE_DEPTH` nearest texts.

>>> from hgm_engine import Memory
>>> m = Memory()
>>> _ = m.apply({"ops": [{"op": "add_node", "id": "a", "type": "fact", "content": "The hotel is closed"}]})
>>> [hit["id"] for hit in m.search("hotels")]
['a']
>>> m.search_status()["source"], m.search_status()["nodes"]
('built', 1)
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Mapping, Sequence

import attrs
import numpy as np

from hgm_engine.errors import HGMError, Problem, SearchError
from hgm_engine.model import MemoryGraph
from hgm_engine.model.nodeindex import (
    DEFAULT_FIELDS,
    Doc,
    IndexView,
    LexicalIndex,
    LexicalSearcher,
    SearchHit,
    Segment,
    register,
    entries_of,
    text_changes,
)
from hgm_engine.retrieval.vectors import (
    EMBEDDER_META_KEY,
    EmbedderConfig,
    VectorIndex,
    embed_texts,
    min_similarity_of,
    python_embedder,
    text_key,
)

__all__ = ["NodeSearch", "COMPACT_MIN", "DENSE_DEPTH", "RRF_K"]

COMPACT_MIN = 2_000  # changed entries a store keeps before the whole index is saved again
DENSE_DEPTH = 50  # the nearest texts a search with vectors takes in, whatever its limit (so a limit cuts one ranking)
RRF_K = 60  # reciprocal rank fusion's constant (Cormack, Clarke and Büttcher, 2009)


class _Prepared:
    """What a commit's hook computed, used when that very commit is applied."""

    __slots__ = ("commit", "docs", "vectors", "compacted", "saved")

    def __init__(self, commit, docs, vectors, compacted, saved):
        self.commit = commit
        self.docs = docs  # id -> Doc | None
        self.vectors = vectors  # id -> (type, key, unit vector) | None
        self.compacted = compacted  # LexicalIndex of the state after the commit, or None
        self.saved = saved  # how the store's index stands after it: "changes", "segment" or None


class NodeSearch:
    """One memory's node index: kept, opened, followed and searched (see the module).

    ``state`` is the memory's :class:`~hgm_engine.txn.MemoryState` (its graph, ``t``, store and
    locks).
    """

    def __init__(self, state: Any):
        self.state = state
        self.store = state.store
        self.lock = threading.RLock()
        self.fields = DEFAULT_FIELDS
        self._index: LexicalIndex | None = None
        self._graph: MemoryGraph | None = None  # the graph self._index is of
        self._registered: MemoryGraph | None = None  # the graph this keeper last registered for
        self._t = 0
        self._stored = False  # the store's kept index reflects self._t
        self._changed_rows = 0  # entries in the store's change table (an upper bound)
        self._prepared: dict[int, _Prepared] = {}
        self._config: EmbedderConfig | None = None
        self._config_read = False
        self._embedder: Any = None
        self._vectors: VectorIndex | None = None
        self._vectors_graph: MemoryGraph | None = None  # the graph self._vectors is of
        self._vector_keys: dict[str, np.ndarray] = {}  # text key -> unit vector (this process's)
        self._queries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lexical = LexicalSearcher(self.current)
        self.stats: dict[str, Any] = {
            "source": None, "opened_t": None, "open_seconds": None, "rebuilds": 0, "segments_saved": 0,
            "commits_followed": 0, "last_problem": None,
        }
        self._register(state.graph)

    # -- which graph -------------------------------------------------------------------------

    def _register(self, graph: MemoryGraph) -> None:
        register(graph, self)
        self._registered = graph

    def ensure(self) -> None:
        """Answer for the memory's current graph (a load or a reload replaces it): registered
        once per graph, not on every read (every query calls this)."""
        if self.state.graph is not self._registered:
            self._register(self.state.graph)

    # -- the lexical index, current --------------------------------------------------------------

    def current(self) -> LexicalIndex:
        """The lexical index of the state as it is now, brought up to date first (call with
        the state held still: under its read lock, or inside a commit)."""
        with self.lock:
            graph, t = self.state.graph, self.state.t
            if self._index is None or self._graph is not graph:
                self._open(graph, t)
            elif self._t < t:
                self._follow(t)
            return self._index  # type: ignore[return-value]

    def _open(self, graph: MemoryGraph, t: int) -> None:
        started = time.perf_counter()
        index = None
        stored = False
        if self.store.keeps_node_index and t > 0:
            try:
                kept = self.store.read_node_index()
            except HGMError as err:
                kept = None
                self.stats["last_problem"] = f"the kept node index could not be read: {err.message}"
            if kept is not None and kept[0] == t:
                try:
                    index = self._from_rows(graph, kept[1], kept[2])
                    stored = True
                    self._changed_rows = len(kept[2])
                    self.stats["source"] = "stored"
                except ValueError as exc:
                    self.stats["last_problem"] = f"the kept node index was rebuilt: {exc}"
            elif kept is not None:
                self.stats["last_problem"] = f"the kept node index reflects t={kept[0]}, the memory t={t}: rebuilt"
        if index is None:
            index = LexicalIndex.build(graph, self.fields)
            self.stats["source"] = "built"
            self.stats["rebuilds"] += 1
            self._changed_rows = 0
        self._index, self._graph, self._t, self._stored = index, graph, t, stored
        if self._vectors_graph is not graph:
            self._vectors = None  # read again for this graph when first needed
        self._prepared.clear()
        self._register(graph)
        self.stats["opened_t"] = t
        self.stats["open_seconds"] = round(time.perf_counter() - started, 6)

    def _from_rows(self, graph: MemoryGraph, segment: bytes | None, changed: list) -> LexicalIndex:
        seg = Segment.from_bytes(segment) if segment is not None else Segment.empty()
        index = LexicalIndex(seg, self.fields)
        nodes = graph.node_map()
        for node_id, terms in changed:
            node = nodes.get(node_id)
            if terms is None:
                index.replace(node_id, None)
                continue
            if node is None:
                raise ValueError(f"an entry for {node_id!r}, which the state does not hold")
            index.replace(node_id, Doc.from_terms_json(terms, node))
        if not all(map(nodes.__contains__, seg.ids)):  # every entry's node is there: the usual case, checked in C
            for node_id in seg.ids:
                node = nodes.get(node_id)
                if node is None and index.doc(node_id) is not None:
                    raise ValueError(f"an entry for {node_id!r}, which the state does not hold")
        return index

    def _follow(self, t: int) -> None:
        """Apply the commits after ``self._t`` up to ``t`` (read on the store's reading side)."""
        commits = self.store.read_commits(self._t, t)
        if len(commits) != t - self._t:
            self._open(self.state.graph, t)
            return
        for commit in commits:
            if commit.genesis:
                self._open(self.state.graph, t)
                return
        index = self._index
        prepared_of = self._prepared
        for commit in commits:
            prepared = prepared_of.pop(commit.t, None)
            if prepared is not None and prepared.commit is not commit:
                prepared = None  # not the commit prepared (another process's took its t)
            if prepared is None:
                index.apply(commit.changes)
                self._stored = False
            else:
                if prepared.compacted is not None:
                    index = prepared.compacted
                else:
                    index.replace_all(prepared.docs.items())
                saved = prepared.saved
                if saved == "segment":
                    self._changed_rows = 0
                elif saved == "changes":
                    self._changed_rows += len(prepared.docs)
                self._stored = saved is not None
            if self._vectors is not None:
                self._follow_vectors(commit, prepared)
            self.stats["commits_followed"] += 1
        if not self.store.keeps_node_index and index.n_changed > max(COMPACT_MIN, index.n_docs // 8):
            index = index.compact()  # an in-process index folds its changes in now and then
        self._index = index
        self._t = t
        if prepared_of:
            self._prepared = {n: p for n, p in prepared_of.items() if n > t}

    # -- commits -----------------------------------------------------------------------------------

    def store_hook(self, commit: Any, view: Any) -> None:
        """Keep the index in ``commit``'s store transaction (``view`` is the state the commit
        makes: the transaction's overlay, or the whole graph of a load). Raises — and so fails
        the commit, nothing written — when the embedder fails."""
        with self.lock:
            if commit.genesis:
                self._genesis(commit, view)
                return
            keeps = self.store.keeps_node_index
            dense = self.config() is not None
            if not keeps and not dense:
                return  # an in-process memory indexes on its first search
            index = self.current() if keeps or self._index is not None else None
            nodes = text_changes(commit.changes, self.fields)
            docs = entries_of(nodes, self.fields)
            vectors = self._embed_changes(nodes) if dense else {}
            compacted = None
            saved = None
            if keeps:
                assert index is not None
                growing = self._changed_rows + len(docs) > max(COMPACT_MIN, index.n_docs // 8)
                if self._stored and not growing and self.store.node_index_t() == commit.t - 1:
                    rows = [(node_id, None if doc is None else doc.terms_json()) for node_id, doc in docs.items()]
                    self.store.write_node_index(commit.t, rows)
                    saved = "changes"
                else:
                    compacted = index.copy()
                    compacted.replace_all(docs.items())
                    compacted = compacted.compact()
                    self.store.write_node_index(commit.t, [], compacted.segment.to_bytes(t=commit.t))
                    saved = "segment"
                    self.stats["segments_saved"] += 1
                if vectors:
                    config = self.config()
                    rows = [(key, vector.tobytes()) for _, (_, key, vector) in vectors.items() if vector is not None]
                    self.store.write_node_vectors(config.model, rows)
            self._prepared[commit.t] = _Prepared(commit, docs, vectors, compacted, saved)

    def _genesis(self, commit: Any, graph: MemoryGraph) -> None:
        """A load into an empty memory: the whole graph is the new state."""
        keeps = self.store.keeps_node_index
        dense = self.config() is not None
        vectors = None
        if dense:
            nodes = {node.id: node for node in graph.nodes()}
            vectors = self._embed_changes(nodes)
        if keeps:
            index = LexicalIndex.build(graph, self.fields)
            self.store.write_node_index(commit.t, [], index.segment.to_bytes(t=commit.t))
            if vectors:
                rows = [(key, vector.tobytes()) for _, (_, key, vector) in vectors.items() if vector is not None]
                self.store.write_node_vectors(self.config().model, rows)
            self._index, self._graph, self._t, self._stored = index, graph, commit.t, True
            self._changed_rows = 0
            self.stats["source"] = "built"
        else:
            self._index, self._graph = None, None  # built on the first search
        self._prepared.clear()
        self._vectors = self._vector_index(vectors) if vectors is not None else None
        self._vectors_graph = graph
        self._register(graph)

    # -- vectors ----------------------------------------------------------------------------------

    def config(self) -> EmbedderConfig | None:
        """The memory's embedder setting (None: words only), read from the store once."""
        if not self._config_read:
            text = self.store.get_meta(EMBEDDER_META_KEY)
            try:
                self._config = EmbedderConfig.from_json(text) if text else None
            except (ValueError, KeyError, TypeError) as exc:
                self._config = None
                self.stats["last_problem"] = f"the stored embedder setting cannot be read ({exc}): words only"
            self._config_read = True
        return self._config

    def embedder(self) -> Any:
        if self._embedder is None:
            config = self.config()
            if config is None:
                return None
            self._embedder = config.make()
        return self._embedder

    def _embed_changes(self, nodes: Mapping[str, Any]) -> dict[str, tuple[str, str, np.ndarray] | None]:
        """``{id: (type, key, unit vector)}`` for nodes with text, None for nodes without
        (or gone); texts already embedded are not sent again."""
        config = self.config()
        out: dict[str, Any] = {}
        wanted: dict[str, str] = {}
        for node_id, node in nodes.items():
            text = None if node is None else self.fields.text(node.attrs)
            if not text or not text.strip():
                out[node_id] = None
                continue
            key = text_key(text)
            known = self._vector_keys.get(key)
            if known is not None:
                out[node_id] = (node.type, key, known)
            else:
                wanted.setdefault(key, text)
                out[node_id] = (node.type, key, None)
        if wanted:
            keys = list(wanted)
            if self.store.keeps_node_index:
                for key, data in self.store.read_node_vectors(config.model or config.name, keys).items():
                    vector = np.frombuffer(data, np.float32)
                    if config.dimensions is None or len(vector) == config.dimensions:
                        self._vector_keys[key] = vector
            missing = [key for key in keys if key not in self._vector_keys]
            made = embed_texts(self.embedder(), [wanted[key] for key in missing], config.dimensions)
            for key, vector in zip(missing, made):
                self._vector_keys[key] = vector
            for node_id, entry in out.items():
                if entry is not None and entry[2] is None:
                    out[node_id] = (entry[0], entry[1], self._vector_keys[entry[1]])
        return out

    def _vector_index(self, entries: Mapping[str, Any]) -> VectorIndex | None:
        config = self.config()
        if config is None or config.dimensions is None:
            return None
        index = VectorIndex(config.dimensions, capacity=max(64, len(entries)))
        for node_id, entry in entries.items():
            if entry is not None:
                index.put(node_id, entry[0], entry[2], key=entry[1])
        return index

    def _follow_vectors(self, commit: Any, prepared: _Prepared | None) -> None:
        if self._vectors is None:
            return
        if prepared is not None and prepared.vectors:
            for node_id, entry in prepared.vectors.items():
                if entry is None:
                    self._vectors.remove(node_id)
                else:
                    self._vectors.put(node_id, entry[0], entry[2], key=entry[1])
            return
        # Another process's commit: its vectors are in the store (by text key).
        config = self.config()
        changed = text_changes(commit.changes, self.fields)
        keys = {}
        for node_id, node in changed.items():
            text = None if node is None else self.fields.text(node.attrs)
            if not text:
                self._vectors.remove(node_id)
            else:
                keys[node_id] = text_key(text)
        found = self._stored_vectors(config, [k for k in keys.values() if k not in self._vector_keys])
        for node_id, key in keys.items():
            vector = self._vector_keys.get(key) if key in self._vector_keys else found.get(key)
            if vector is None:
                self._vectors.remove(node_id)  # not embedded (yet): found by its words only
            else:
                self._vectors.put(node_id, changed[node_id].type, vector, key=key)

    def _stored_vectors(self, config: EmbedderConfig, keys: list[str]) -> dict[str, np.ndarray]:
        if not keys or not self.store.keeps_node_index:
            return {}
        out = {}
        for key, data in self.store.read_node_vectors(config.model or config.name, keys).items():
            vector = np.frombuffer(data, np.float32)
            if len(vector) == config.dimensions:
                out[key] = vector
                self._vector_keys[key] = vector
        return out

    def vectors(self) -> VectorIndex | None:
        """The vectors of the current nodes (read from the store on first use), or None."""
        config = self.config()
        if config is None or config.dimensions is None:
            return None
        self.current()  # up to date first
        with self.lock:
            if self._vectors is None:
                graph = self.state.graph
                keys = {}
                for node in graph.nodes():
                    text = self.fields.text(node.attrs)
                    if text:
                        keys[node.id] = (node.type, text_key(text))
                stored = {}
                if self.store.keeps_node_index:
                    stored = self.store.read_node_vectors(config.model or config.name)
                index = VectorIndex(config.dimensions, capacity=max(64, len(keys)))
                for node_id, (node_type, key) in keys.items():
                    vector = self._vector_keys.get(key)
                    if vector is None and key in stored:
                        vector = np.frombuffer(stored[key], np.float32)
                        if len(vector) != config.dimensions:
                            continue
                        self._vector_keys[key] = vector
                    if vector is not None:
                        index.put(node_id, node_type, vector, key=key)
                self._vectors = index
                self._vectors_graph = graph
            return self._vectors

    def query_vector(self, text: str) -> np.ndarray:
        """The unit vector of a query text (the last few are remembered)."""
        config = self.config()
        cache_key = (config.model or config.name, text)
        found = self._queries.get(cache_key)
        if found is None:
            (found,) = embed_texts(self.embedder(), [text], config.dimensions, query=True)
            self._queries[cache_key] = found
            while len(self._queries) > 64:
                self._queries.popitem(last=False)
        else:
            self._queries.move_to_end(cache_key)
        return found

    def configure(self, embedder: Any, *, base_url: str | None = None, min_similarity: float | None = None) -> dict[str, Any]:
        """Set the memory's embedder — a name (``minilm``, ``openai``, ``openai:MODEL``), an
        embedder object (``name``, ``embed_documents``, ``embed_query``), or None for words
        only — and embed every node's text it has no vector for yet (the vectors kept for the
        same model are reused), in one store transaction with the setting: an embedder that
        cannot be had or fails changes nothing. Call with the memory's write lock held.
        Returns :meth:`status`."""
        with self.lock:
            if embedder is None:
                with self.store.write():
                    self.store.write_node_vectors("", [], clear=True)
                    self.store.set_meta(EMBEDDER_META_KEY, None)
                self._config, self._config_read, self._embedder, self._vectors = None, True, None, None
                self._vector_keys.clear()
                self._queries.clear()
                return self.status()
            if isinstance(embedder, str):
                config = EmbedderConfig.parse({"name": embedder, "base_url": base_url, "min_similarity": min_similarity})
                made = config.make()
            else:
                if base_url is not None:
                    raise SearchError.single("invalid-argument", "base_url is for openai endpoints, not an embedder object")
                config = attrs.evolve(python_embedder(embedder), min_similarity=min_similarity_of(min_similarity))
                made = embedder
            model = getattr(made, "name", None) or config.name
            previous = self.config()
            same_model = previous is not None and previous.model == model
            with self.state.lock.reading():
                texts = {}
                for node in self.state.graph.nodes():
                    text = self.fields.text(node.attrs)
                    if text and text.strip():
                        texts[node.id] = (node.type, text)
            keys = {text: text_key(text) for _, text in texts.values()}
            known: dict[str, np.ndarray] = {}
            dimensions = previous.dimensions if same_model else None
            if same_model:
                known = {k: v for k, v in self._vector_keys.items()}
                if self.store.keeps_node_index:
                    for key, data in self.store.read_node_vectors(model).items():
                        vector = np.frombuffer(data, np.float32)
                        if len(vector) == dimensions:
                            known.setdefault(key, vector)
            missing = [text for text, key in keys.items() if key not in known]
            made_vectors = embed_texts(made, missing, dimensions) if missing else []
            if dimensions is None:
                dimensions = len(made_vectors[0]) if made_vectors else len(embed_texts(made, ["hgm"], None, query=True)[0])
            for text, vector in zip(missing, made_vectors):
                known[keys[text]] = vector
            config = attrs.evolve(config, model=model, dimensions=dimensions)
            rows = [(keys[text], vector.tobytes()) for text, vector in zip(missing, made_vectors)]
            with self.store.write():
                self.store.write_node_vectors(model, rows, clear=not same_model)
                self.store.set_meta(EMBEDDER_META_KEY, config.to_json())
            self._config, self._config_read, self._embedder = config, True, made
            self._vector_keys = known
            self._queries.clear()
            index = VectorIndex(dimensions, capacity=max(64, len(texts)))
            for node_id, (node_type, text) in texts.items():
                index.put(node_id, node_type, known[keys[text]], key=keys[text])
            self._vectors = index
            self._vectors_graph = self.state.graph
            return self.status()

    # -- searching (the searcher protocol of hgm_engine.model.nodeindex) ---------------------------

    def describe(self) -> str:
        config = self.config()
        text = self._lexical.describe()
        if config is not None:
            text += (
                f"; fused with the vectors of {config.model or config.name} ({config.dimensions} numbers): "
                f"1/({RRF_K} + lexical rank) + 1/({RRF_K} + vector rank), the {DENSE_DEPTH} nearest texts "
                f"with a cosine similarity of {config.min_similarity:g} or more"
            )
        return text

    def lexical_view(self, view: Any) -> IndexView:
        return self._lexical.view(view)

    def _dense_view(self, view: Any) -> tuple[set[str], dict[str, tuple[str, np.ndarray]]]:
        """For an overlay: the ids whose text the view changed, and the vectors of their texts
        in the view where this process knows them (others are found by words only)."""
        if isinstance(view, MemoryGraph):
            return set(), {}
        base = getattr(view, "base", None)
        hidden: set[str] = set()
        extra: dict[str, tuple[str, np.ndarray]] = {}
        for node_id, node in view.node_map().own_items():
            before = base.node(node_id) if base is not None else None
            if node is before:
                continue
            hidden.add(node_id)
            if node is not None:
                text = self.fields.text(node.attrs)
                vector = self._vector_keys.get(text_key(text)) if text else None
                if vector is None and text and self.store.keeps_node_index:
                    vector = self._stored_vectors(self.config(), [text_key(text)]).get(text_key(text))
                if vector is not None:
                    extra[node_id] = (node.type, vector)
        return hidden, extra

    def hits(self, view: Any, text: str, terms: Sequence[str], *, top: int | None = None, node_type: str | None = None,
             charge: Callable[[int], None] | None = None) -> list[SearchHit]:
        """The nodes of ``view`` that match, best first (see the module for the fused score)."""
        lexical_view = self._lexical.view(view)
        vectors = self.vectors() if self.config() is not None else None
        if vectors is None:
            return lexical_view.hits(terms, top=top, node_type=node_type, charge=charge)
        # Fused over the first `window` words' hits and the DENSE_DEPTH nearest texts: a node
        # past the window that is not among the nearest scores less than 1/(RRF_K + window),
        # less than each of the window's `top` nodes, so it cannot reach the first `top`; those
        # among the nearest get their exact lexical rank (ranks_of).
        window = top
        lexical = lexical_view.hits(terms, top=window, node_type=node_type, charge=charge)
        query = self.query_vector(text)
        hidden, extra = self._dense_view(view)
        nodes = view.node_map()

        def seq_of(node_id: str) -> int:
            node = nodes.get(node_id)
            return node.seq if node is not None else 0

        nearest = vectors.nearest(query, DENSE_DEPTH, seq_of=seq_of, node_type=node_type, hidden=hidden, extra=extra,
                                  min_similarity=self.config().min_similarity)
        nearest = [(node_id, sim) for node_id, sim in nearest if node_id in nodes]
        if charge is not None:
            charge(len(vectors) + len(nearest))
        fused: dict[str, list] = {}
        for rank, hit in enumerate(lexical, start=1):
            fused[hit.id] = [1.0 / (RRF_K + rank), hit, None]
        if window is not None and len(lexical) == window:
            beyond = [node_id for node_id, _ in nearest if node_id not in fused]
            for node_id, (rank, hit) in lexical_view.ranks_of(terms, beyond, node_type=node_type).items():
                fused[node_id] = [1.0 / (RRF_K + rank), hit, None]
        for rank, (node_id, sim) in enumerate(nearest, start=1):
            entry = fused.setdefault(node_id, [0.0, None, None])
            entry[0] += 1.0 / (RRF_K + rank)
            entry[2] = sim
        order = sorted(fused.items(), key=lambda item: (-item[1][0], seq_of(item[0])))
        if top is not None:
            order = order[:top]
        out = []
        for node_id, (score, hit, sim) in order:
            out.append(SearchHit(
                node_id, score, hit.terms if hit else (), bool(hit and hit.all_terms), sim, hit.score if hit else None,
            ))
        return out

    def rank(self, view: Any, ids: Sequence[str], text: str, terms: Sequence[str]) -> list[str]:
        """``ids`` reordered by relevance (fused with vector ranks among them when set)."""
        lexical_view = self._lexical.view(view)
        vectors = self.vectors() if self.config() is not None else None
        lexical_order = lexical_view.rank(ids, terms)
        if vectors is None:
            return lexical_order
        idf, avgdl = lexical_view.weights(terms) if terms else ({}, 1.0)
        matched = [node_id for node_id in lexical_order if (doc := lexical_view.doc(node_id)) is not None
                   and any(term in doc.terms for term in terms)]
        query = self.query_vector(text)
        hidden, extra = self._dense_view(view)
        sims = []
        for position, node_id in enumerate(ids):
            if node_id in extra:
                vector = extra[node_id][1]
            elif node_id in hidden:
                continue
            else:
                vector = vectors.vector_of(node_id)
            if vector is not None:
                similarity = float(np.dot(vector, query))
                if similarity >= self.config().min_similarity:
                    sims.append((-similarity, position, node_id))
        sims.sort()
        nearest = [node_id for _, _, node_id in sims[:DENSE_DEPTH]]
        fused: dict[str, float] = {}
        for rank, node_id in enumerate(matched, start=1):
            fused[node_id] = fused.get(node_id, 0.0) + 1.0 / (RRF_K + rank)
        for rank, node_id in enumerate(nearest, start=1):
            fused[node_id] = fused.get(node_id, 0.0) + 1.0 / (RRF_K + rank)
        position = {node_id: i for i, node_id in enumerate(ids)}
        first = sorted(fused, key=lambda node_id: (-fused[node_id], position[node_id]))
        chosen = set(first)
        return first + [node_id for node_id in ids if node_id not in chosen]

    # -- reporting ---------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """What the index holds and how it was got: ``t``, ``nodes`` (with text), ``terms``,
        ``source`` (``stored``: read from the store; ``built``: indexed from the state), the
        changed entries not yet folded into a segment, the embedder and its vectors."""
        index = self.current()
        config = self.config()
        vectors = self._vectors
        return {
            "t": self._t,
            "nodes": index.n_docs,
            "terms": len(index.segment.terms) + sum(1 for term in index.postings if index.segment.df(term) == 0),
            "changed_entries": index.n_changed,
            "kept_in_store": bool(self.store.keeps_node_index),
            "source": self.stats["source"],
            "open_seconds": self.stats["open_seconds"],
            "fields": [*self.fields.fields, *([self.fields.tags] if self.fields.tags else [])],
            "embedder": None if config is None else {
                "name": config.name, "model": config.model, "base_url": config.base_url, "dimensions": config.dimensions,
                "min_similarity": config.min_similarity, "vectors": None if vectors is None else len(vectors),
            },
            "score": self.describe(),
            "last_problem": self.stats["last_problem"],
        }
