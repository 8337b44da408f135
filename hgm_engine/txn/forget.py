"""Forgetting (docs/memories.md): the purge of a node, or of a subtree, from a memory's state,
its journal, every snapshot and the store's files, leaving a tombstone commit in its history.

:func:`purge_nodes` chooses what is forgotten and makes the tombstone;
:meth:`MemoryState.purge <hgm_engine.txn.MemoryState.purge>` removes it from the store and
reads the state back. ``Memory.purge`` then rebuilds what this process derived from the
purged nodes (history views, the node index).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable

from hgm_engine.errors import Problem, RequestError
from hgm_engine.model import Commit
from hgm_engine.txn.sync import MemoryState

__all__ = ["purge_nodes", "ForgetVerbs"]


def purge_nodes(
    state: MemoryState,
    node_id: str,
    *,
    reason: str,
    subtree: bool = False,
    author: str | None = None,
    derived_meta: Iterable[str] = (),
) -> Commit:
    """Forget ``node_id`` (with ``subtree``, every node below it through ``parent_of``) from
    ``state`` and its store; returns the tombstone (a commit of kind ``purge``). The meta rows
    named in ``derived_meta`` are dropped in the same store transaction (state derived from
    the nodes, such as a saved path index, which is rebuilt from what remains).

    An id the memory never held is a :class:`RequestError` ``unknown-node``; an empty
    ``reason`` an ``invalid-argument``; nothing changes then.

    >>> from hgm_engine.store import InMemoryStore
    >>> state = MemoryState(InMemoryStore())
    >>> purge_nodes(state, "x", reason="asked")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RequestError: unknown-node at x: no node 'x' in this memory or its history
    """
    if not isinstance(node_id, str) or not node_id:
        raise RequestError([Problem("invalid-argument", "the node to purge is a non-empty id", where="id")])
    if not isinstance(reason, str) or not reason.strip():
        raise RequestError([Problem("invalid-argument", "a purge needs a reason (what is forgotten, and why)", where="reason")])
    store = state.store
    dropped = tuple(derived_meta)

    def build() -> tuple[frozenset[str], Commit]:
        graph = state.graph
        ids = {node_id}
        if graph.node(node_id) is not None:
            if subtree:
                todo = [node_id]
                while todo:
                    for edge in graph.out_edges(todo.pop()):
                        if edge.type == "parent_of" and edge.target not in ids:
                            ids.add(edge.target)
                            todo.append(edge.target)
        elif not any(node_id in commit.touched for commit in store.commits_after(0)):
            raise RequestError([Problem("unknown-node", f"no node {node_id!r} in this memory or its history", where=node_id)])
        for key in dropped:
            if store.get_meta(key) is not None:
                store.set_meta(key, None)
        tombstone = Commit(state.t + 1, author, reason, None, time.time(), (), kind="purge", purged=tuple(sorted(ids)))
        return frozenset(ids), tombstone

    return state.purge(build)


class ForgetVerbs:
    """The purge verb of ``memory`` (a :class:`~hgm_engine.Memory`, read through its public
    ``state``); ``derived_meta`` as for :func:`purge_nodes`, and ``on_purged()`` rebuilds what
    the memory's process derived from the purged nodes."""

    def __init__(self, memory: Any, *, derived_meta: Iterable[str], on_purged: Callable[[], None]):
        self.memory = memory
        self.derived_meta = tuple(derived_meta)
        self.on_purged = on_purged

    def purge(self, node_id: str, *, reason: str, subtree: bool = False, author: str | None = None) -> Commit:
        """Forget node ``node_id`` (with ``subtree``, and every node below it through
        ``parent_of``): every trace of it and of the edges that touch it leaves the state, the
        journal and so every snapshot, ``as_of``, diff, history and export, and the store's
        files are scrubbed (docs/memories.md says what that reaches). History keeps a
        tombstone: a commit of kind ``purge`` with the ids, ``author``, the time and ``reason``.

        A node removed earlier can be purged too (its content is still in the history). An
        id the memory never held is a :class:`RequestError` ``unknown-node``; an empty
        ``reason`` an ``invalid-argument``; nothing changes then.

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "s", "type": "fact", "content": "card 4111"}]})
        >>> tombstone = m.purge("s", reason="the user asked")
        >>> tombstone.kind, tombstone.purged, m.query("nodes").ids, m.commits(0)[0].changes
        ('purge', ('s',), [], ())
        >>> m.purge("nope", reason="x")
        Traceback (most recent call last):
        ...
        hgm_engine.errors.RequestError: unknown-node at nope: no node 'nope' in this memory or its history
        """
        tombstone = purge_nodes(
            self.memory.state, node_id, reason=reason, subtree=subtree, author=author, derived_meta=self.derived_meta
        )
        self.on_purged()
        return tombstone
