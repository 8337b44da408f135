"""Progress for the benchmarks on a terminal (the display of ``hgm load``, :mod:`hgm_engine.cli.progress`):
nothing at all when standard error is not a terminal, so a benchmark run by a script or CI
writes exactly what it wrote before. The display refreshes twice a second, to stay out of
the timings' way.

>>> list(tracked([1, 2, 3], "sizes"))  # not on a terminal here: the items, and nothing drawn
[1, 2, 3]
"""

from __future__ import annotations

import sys
from typing import Iterable, Iterator, TypeVar

from hgm_engine.cli.progress import ProgressDisplay

__all__ = ["tracked"]

T = TypeVar("T")


def tracked(items: Iterable[T], phase: str) -> Iterator[T]:
    """The ``items``, one by one, while a terminal shows how many of them are done."""
    items = list(items)
    with ProgressDisplay(sys.stderr, log_above=True, refresh=2) as display:
        callback = display.callback
        for done, item in enumerate(items):
            if callback is not None:
                callback(phase, done, len(items))
            yield item
        if callback is not None:
            callback(phase, len(items), len(items))
