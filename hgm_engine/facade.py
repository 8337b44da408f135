"""How the :class:`~hgm_engine.Memory` facade hands its methods to the components that do the
work (history, rules, the commit pipeline, the state, paths) without a hand-written
pass-through per method: the forwarded method keeps its component's name, signature and
docstring, so ``help(Memory)`` reads as if it were written there.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable

__all__ = ["forward", "PathVerb"]


def forward(component: str, method: Callable) -> Callable:
    """A :class:`Memory` method that is ``method`` of the memory's component in the attribute
    ``component``, with that method's name, docstring and signature (``help`` shows them).

    >>> from hgm_engine import Memory
    >>> from hgm_engine.txn import MemoryState
    >>> Memory.refresh.__wrapped__ is MemoryState.refresh, inspect.signature(Memory().refresh)
    (True, <Signature (*, wait: 'bool' = True) -> 'int | None'>)
    """

    @functools.wraps(method)
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        return method(getattr(self, component), *args, **kwargs)

    forward.__qualname__ = f"Memory.{method.__name__}"
    return forward


class PathVerb:
    """A :class:`Memory` method that is the method ``target`` of the memory's
    :class:`~hgm_engine.paths.PathMemory` — made on the first call, not on attribute access,
    since from then on it follows every commit. Its signature and docstring are the
    PathMemory method's.

    >>> from hgm_engine import Memory
    >>> print(inspect.signature(Memory().reset_path))
    (path_id: 'str', *, author: 'str | None' = None, reason: 'str | None' = None) -> 'TransactionReport'
    """

    def __init__(self, target: str) -> None:
        self.target = target

    def __set_name__(self, owner: type, name: str) -> None:
        self.__name__, self.__qualname__ = name, f"{owner.__qualname__}.{name}"

    def __get__(self, memory: Any, owner: type | None = None) -> Any:
        return self if memory is None else types.MethodType(self, memory)

    def __call__(self, memory: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(memory.path_memory, self.target)(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self._method)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self._method.__doc__

    @property
    def _method(self) -> Callable:
        from hgm_engine.paths import PathMemory  # imported when asked: paths cost start-up time

        return getattr(PathMemory, self.target)
