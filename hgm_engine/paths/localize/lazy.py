"""A dict whose values are made when first read, for a path index restored from saved bytes.

>>> lazy = LazyDict(lambda row: row * 10, {"a": 1})
>>> "a" in lazy, len(lazy), lazy["a"], lazy.pending
(True, 1, 10, {})
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["LazyDict"]


class LazyDict(dict):
    """A dict some of whose values are made only when first read: ``pending`` maps those keys
    to what ``make`` needs (a row of a saved state). Present values read at dict speed."""

    def __init__(self, make: Callable[[Any], Any] | None = None, pending: dict | None = None):
        super().__init__()
        self.make = make
        self.pending: dict = pending if pending is not None else {}

    def __missing__(self, key: Any) -> Any:
        row = self.pending.pop(key)   # a KeyError here: the key is not held at all
        value = self.make(row)        # type: ignore[misc]
        dict.__setitem__(self, key, value)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key) or key in self.pending:
            return self[key]
        return default

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self.pending:
            self[key]
        return dict.pop(self, key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key in self.pending:
            return self[key]
        return dict.setdefault(self, key, default)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.pending.pop(key, None)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        if key in self.pending:
            del self.pending[key]
        else:
            dict.__delitem__(self, key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.pending

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.pending)

    def __iter__(self):  # type: ignore[override]
        yield from dict.__iter__(self)
        yield from self.pending

    def items(self):  # type: ignore[override]
        return [(key, self[key]) for key in list(self)]
