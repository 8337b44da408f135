"""Widening located paths through the graph: the paths a walk from the entry paths reaches.

``PathIndex.locate`` finds entry paths by text, tags and structure; the expander it is given
walks the graph from them (shared steps, scenario goals, ``replaces`` edges...) to recall
paths that text alone would miss, within a scenario unless asked to cross.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from hgm_engine.paths.records import is_path, is_scenario, scenario_of
from hgm_engine.txn import SUMMARIZES

__all__ = ["expander"]


def expander(memory: Any, *, cross_scenario: bool, hops: int, max_visits: int = 5000,
             max_entries: int = 10) -> Callable[[Sequence[str]], list[str]]:
    """The walk that widens located entry paths: from each of the first ``max_entries``
    entries, ``hops`` steps along any edge (at most ``max_visits`` nodes looked at in all),
    collecting the paths it reaches. Unless ``cross_scenario``, it never climbs above a
    scenario goal nor enters another scenario or one of its paths.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "a", "goal": "book", "steps": ["search"]}, {"id": "b", "goal": "pay", "steps": ["card"]}],
    ...              scenario="shop")
    >>> expander(m, cross_scenario=False, hops=2)(["a"]), expander(m, cross_scenario=False, hops=1)(["a"])
    (['b'], [])
    """

    def expand(entry_ids: Sequence[str]) -> list[str]:
        found: list[str] = []
        seen = set(entry_ids)
        budget = max_visits
        with memory.reading():
            graph = memory.graph
            for entry in entry_ids[:max_entries]:
                node = graph.node(entry)
                if node is None or budget <= 0:
                    continue
                own = scenario_of(graph, node)
                visited = {entry}
                frontier = [entry]
                for _ in range(max(0, hops)):
                    following = []
                    for current in frontier:
                        here = graph.node(current)
                        at_boundary = is_scenario(here) and not cross_scenario
                        pairs = list(graph.out_adjacency(current).pairs)
                        if not at_boundary:  # never climb above a scenario unless asked
                            pairs += graph.in_adjacency(current).pairs
                        for edge_type, other in pairs:
                            if other in visited or edge_type == SUMMARIZES:
                                continue  # a summary is an index over a scenario, not a link between paths
                            budget -= 1
                            if budget <= 0:
                                break
                            other_node = graph.node(other)
                            if not cross_scenario:
                                if is_scenario(other_node) and other != own:
                                    continue  # another scenario: a boundary
                                if is_path(other_node) and own is not None:
                                    theirs = scenario_of(graph, other_node)
                                    if theirs is not None and theirs != own:
                                        continue  # a path of another scenario
                            visited.add(other)
                            following.append(other)
                            if is_path(other_node) and other not in seen:
                                seen.add(other)
                                found.append(other)
                    frontier = following
                    if budget <= 0:
                        break
        return found

    return expand
