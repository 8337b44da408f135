"""Graph expansion: more candidates for ``locate``, walked from the entry paths over the
index's own path–step graph (:func:`shared_step_expander`). Any :data:`~.results.Expander`
plugs in the same way, such as a walk through the memory graph.

>>> from hgm_engine.paths.localize import PathIndex, PathRecord
>>> index = PathIndex.from_records([PathRecord.create("a", "book a flight", ["search", "book"]),
...                                 PathRecord.create("b", "book and pay", ["book", "pay"])])
>>> shared_step_expander(index.contents)(["a"])
['b']
"""

from __future__ import annotations

from typing import Sequence

from hgm_engine.paths.localize.contents import IndexContents
from hgm_engine.paths.localize.results import Expander

__all__ = ["shared_step_expander"]


def shared_step_expander(contents: IndexContents, hops: int = 2, *, entries: int = 10, per_step: int = 50) -> Expander:
    """The expander of :meth:`PathIndex.shared_step_expander
    <hgm_engine.paths.localize.PathIndex.shared_step_expander>` over ``contents`` (read at each
    call, so it follows the paths that come and go)."""

    def expand(entry_ids: Sequence[str]) -> list[str]:
        frontier = [i for i in entry_ids[:entries] if i in contents.slot_of]
        seen_groups = {contents.shape_at[contents.slot_of[i]].signature for i in frontier}
        found: list[str] = []
        for _ in range(max(0, hops) // 2):
            names: dict[str, None] = {}
            for path_id in frontier:
                names.update(dict.fromkeys(contents.shape_at[contents.slot_of[path_id]].names))
            next_frontier = []
            for name in names:
                for count, group in enumerate(contents.name_groups.get(name, ())):
                    if count >= per_step:
                        break
                    if group in seen_groups:
                        continue
                    seen_groups.add(group)
                    newest = max(contents.group_slots[group], key=contents.seq_at.__getitem__)
                    next_frontier.append(contents.record_at[newest].id)
            found.extend(next_frontier)
            frontier = next_frontier
        return found

    return expand
