"""What a store does for a Memory: keep the journal of commits, the current state, snapshots
and user constraints, and serialize writers. ``InMemoryStore`` keeps them in the process."""

from __future__ import annotations

import contextlib
from typing import Iterator

from hgm_engine.errors import HGMError
from hgm_engine.model import MemoryGraph

__all__ = ["Store", "InMemoryStore"]


class Store:
    """The interface stores implement (see ``InMemoryStore`` and ``SQLiteStore``)."""

    location = ":memory:"

    def load_state(self) -> tuple[MemoryGraph, int]:
        """The current graph and its ``t``."""
        raise NotImplementedError

    @contextlib.contextmanager
    def write(self) -> Iterator["Store"]:
        """Hold the write lock for one commit; changes made inside commit together or not at all."""
        raise NotImplementedError
        yield self

    def latest_t(self) -> int:
        raise NotImplementedError

    def change_token(self) -> object:
        """A cheap value that differs after another process wrote to the store (commits,
        constraints, rule sets). Equal tokens mean nothing new to apply; a changed token may
        be a false alarm. By default the latest ``t``.

        >>> InMemoryStore().change_token() is None  # nothing else writes to it
        True
        """
        return self.latest_t()

    def committed_t(self) -> int:
        """The latest committed ``t``, read without waiting for a commit of this process in
        progress (a reader's quick "is there anything newer?"). By default :meth:`latest_t`.

        >>> InMemoryStore().committed_t()
        0
        """
        return self.latest_t()

    def read_commits(self, t: int, upto: int) -> list:
        """:meth:`commits_after` for a reader: never waits for a commit of this process in
        progress (it reads on the same second connection as :meth:`committed_t`).

        >>> InMemoryStore().read_commits(0, 0)
        []
        """
        return self.commits_after(t, upto)

    def commits_after(self, t: int, upto: int | None = None) -> list:
        """Commits with ``t < commit.t <= upto``, oldest first."""
        raise NotImplementedError

    def append(self, commit) -> None:
        """Record ``commit`` and apply its changes to the stored state (inside ``write``)."""
        raise NotImplementedError

    def snapshots(self) -> dict[str, int]:
        raise NotImplementedError

    def set_snapshot(self, name: str, t: int) -> None:
        raise NotImplementedError

    def constraints(self) -> dict[str, str]:
        raise NotImplementedError

    def set_constraint(self, name: str, text: str | None) -> None:
        """Store a user constraint's text (None deletes it)."""
        raise NotImplementedError

    def get_meta(self, key: str) -> str | None:
        raise NotImplementedError

    def set_meta(self, key: str, value: str | None) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class InMemoryStore(Store):
    """Everything in the process: nothing survives it. The default for ``Memory()``."""

    def __init__(self) -> None:
        self._commits: list = []
        self._snapshots: dict[str, int] = {}
        self._constraints: dict[str, str] = {}
        self._meta: dict[str, str] = {}

    def load_state(self) -> tuple[MemoryGraph, int]:
        return MemoryGraph(), 0

    @contextlib.contextmanager
    def write(self) -> Iterator["InMemoryStore"]:
        yield self

    def latest_t(self) -> int:
        return len(self._commits)

    def change_token(self) -> object:
        return None  # only this process writes to it

    def commits_after(self, t: int, upto: int | None = None) -> list:
        return self._commits[t:upto]

    def append(self, commit) -> None:
        assert commit.t == len(self._commits) + 1, "commits are appended in order"
        self._commits.append(commit)

    def snapshots(self) -> dict[str, int]:
        return dict(self._snapshots)

    def set_snapshot(self, name: str, t: int) -> None:
        self._snapshots[name] = t

    def constraints(self) -> dict[str, str]:
        return dict(self._constraints)

    def set_constraint(self, name: str, text: str | None) -> None:
        if text is None:
            self._constraints.pop(name, None)
        else:
            self._constraints[name] = text

    def get_meta(self, key: str) -> str | None:
        return self._meta.get(key)

    def set_meta(self, key: str, value: str | None) -> None:
        if value is None:
            self._meta.pop(key, None)
        else:
            self._meta[key] = value
