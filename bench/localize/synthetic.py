"""Deterministic synthetic paths for the latency measurements at 10k and 100k stored paths.

Each synthetic path is a real stored request (UltraTool memory side, or a fixed handful of
built-in ones when the data is absent) rewritten by a seeded random generator: numbers are
redrawn, a few words are swapped for words of a synthetic vocabulary that grows with the
number of paths (so rare words stay rare, like real memory), and one path in three gets one
step renamed to one of ``n / 20`` synthetic tools (so the number of distinct structures grows
too). The same ``n`` and ``seed`` always give the same paths.
"""

from __future__ import annotations

import random
import re
from typing import Iterator, Sequence

from hgm_engine.paths.localize import PathRecord, Step

__all__ = ["synthetic_paths", "BUILTIN_SEEDS"]

BUILTIN_SEEDS: tuple[PathRecord, ...] = (
    PathRecord.create("seed-0", "Check the status of order A1001 and tell the user",
                      [Step("query_order", "call the order API"), Step("notify_user", "send the status")],
                      tags=["order"], result="success", reward=1.0),
    PathRecord.create("seed-1", "Book a flight from Beijing to Shanghai on March 3",
                      [Step("flight_search", "search flights"), Step("book_flight", "book the flight")],
                      tags=["Flight"], result="success", reward=1.0),
    PathRecord.create("seed-2", "Cancel my 8 AM alarm and set a new one at 9 AM",
                      [Step("clock_alarm_cancel", "cancel the alarm"), Step("clock_alarm_set", "set an alarm")],
                      tags=["Alarm"], result="success", reward=1.0),
)

_NUMBER = re.compile(r"\d+")
_WORD = re.compile(r"[A-Za-z]{4,}")


def _perturb(text: str, rng: random.Random, vocabulary: int) -> str:
    text = _NUMBER.sub(lambda m: str(rng.randrange(10 ** len(m.group(0)))), text)
    words = _WORD.findall(text)
    for _ in range(min(len(words), rng.randint(1, 3))):
        target = rng.choice(words)
        text = text.replace(target, f"syn{rng.randrange(vocabulary)}x", 1)
    return text


def synthetic_paths(n: int, seeds: Sequence[PathRecord] = BUILTIN_SEEDS, *, seed: int = 7
                    ) -> Iterator[PathRecord]:
    """``n`` synthetic paths derived from ``seeds`` (ids ``syn-0`` ... ``syn-{n-1}``)."""
    rng = random.Random(seed)
    vocabulary = max(100, n // 5)
    tools = max(10, n // 20)
    for i in range(n):
        base = seeds[i % len(seeds)]
        steps = [Step(s.name, _perturb(s.text, rng, vocabulary)) for s in base.steps]
        if rng.random() < 1 / 3:
            at = rng.randrange(len(steps))
            steps[at] = Step(f"syn_tool_{rng.randrange(tools)}", steps[at].text)
        yield PathRecord.create(
            f"syn-{i}", _perturb(base.goal, rng, vocabulary), steps, edges=base.edges,
            tags=base.tags, result="success", reward=1.0,
        )
