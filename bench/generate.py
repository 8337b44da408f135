"""Deterministic generator of hierarchical agent memories for the query benchmark.

A memory is a forest of goal trees as an agent accumulates them: many small tasks and a few
long-running projects (tree sizes are heavy-tailed). Goals have subgoals and actions; sibling
actions are chained by ``before``; finished actions ``produce`` results; facts are
``derived_from`` results and from other facts (chains); facts and actions are ``related_to``
entities, and a few popular entities (the user, the home city, ...) collect many facts. Some
goals give their children an explicit ``order`` on the ``parent_of`` edges, sometimes to only
part of them, and that order usually differs from creation order — so edge-order rules matter.

The output is a graph document (``spec/formats.md``, ``hgm-graph/1``) plus a *meta* document
with counts and the *anchor* ids the benchmark queries start from (the biggest project, the
hub entity, a deep action, ...). Same ``(nodes, seed)`` → byte-identical files.

>>> doc, meta = generate(500, seed=1)
>>> len(doc["nodes"]), doc["format"]
(500, 'hgm-graph/1')
>>> sorted(meta["anchors"])[:3]
['big_root', 'chain_action', 'chain_result']
>>> generate(500, seed=1)[0] == doc
True

Command line: ``python bench/generate.py --nodes 100000 --seed 0 --out graph.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import random
import sys
import time
from typing import Any

__all__ = ["GENERATOR_VERSION", "generate", "write_graph", "ensure_graph", "graph_paths"]

GENERATOR_VERSION = 1

_STATUSES = ("pending", "active", "done", "failed", "blocked", "needs_review", "cancelled")
_ACTION_STATUS_WEIGHTS = (34, 10, 36, 8, 5, 4, 3)
_GOAL_STATUS_WEIGHTS = (40, 30, 22, 3, 3, 1, 1)
_VERBS = ("book", "check", "compare", "call", "visit", "buy", "review", "draft", "send", "search",
          "schedule", "cancel", "pay", "confirm", "summarize", "translate", "fix", "test", "deploy", "ask")
_OBJECTS = ("hotel", "flight", "museum", "invoice", "report", "ticket", "order", "meeting", "dinner",
            "contract", "budget", "route", "doctor", "package", "release", "email", "refund", "slides")
_TOPICS = ("Beijing trip", "Q3 report", "house move", "conference", "product launch", "tax return",
           "wedding", "onboarding", "migration", "birthday", "audit", "hiring", "garden", "renovation")
_ENTITY_KINDS = ("person", "place", "organization", "product", "document", "date", "tool")
_TAGS = ("urgent", "travel", "work", "family", "money", "booking", "follow-up", "blocked-by-user",
         "research", "health", "admin", "shopping")
_SLOTS = ("morning", "afternoon", "evening")


class _Builder:
    """Builds one document; every node creation goes through :meth:`_node` (the budget)."""

    def __init__(self, total: int, seed: int):
        self.rng = random.Random(seed)
        self.total = total
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        self.edge_keys: set[tuple[str, str, str]] = set()
        self.counters: dict[str, int] = {}
        self.entities: list[str] = []
        self.entity_facts: dict[str, int] = {}
        self.roots: list[tuple[str, int, int, int]] = []  # (id, tree size, depth, goals + actions)
        self.deepest: tuple[int, str] | None = None  # (depth, action id)
        self.chain_result: tuple[int, str] | None = None  # (chain depth, result id)
        self.before_chain: tuple[int, str] | None = None  # (length, first action)
        self.chain_actions: list[str] = []  # done actions whose results have derived facts
        self.t = 1_700_000_000

    # -- primitives ---------------------------------------------------------------------------

    @property
    def remaining(self) -> int:
        return self.total - len(self.nodes)

    def _node(self, prefix: str, node_type: str, attrs: dict[str, Any]) -> str | None:
        if len(self.nodes) >= self.total:
            return None
        number = self.counters.get(prefix, 0) + 1
        self.counters[prefix] = number
        node_id = f"{prefix}{number}"
        self.t += self.rng.randint(1, 90)
        node = {"id": node_id, "type": node_type}
        node.update(attrs)
        node["created"] = self.t
        self.nodes.append(node)
        return node_id

    def _edge(self, source: str, target: str, edge_type: str, **attrs: Any) -> bool:
        key = (source, target, edge_type)
        if key in self.edge_keys or source == target:
            return False
        self.edge_keys.add(key)
        edge = {"from": source, "to": target, "type": edge_type}
        edge.update(attrs)
        self.edges.append(edge)
        return True

    def _text(self) -> str:
        rng = self.rng
        return f"{rng.choice(_VERBS).capitalize()} the {rng.choice(_OBJECTS)} #{rng.randint(1, 999)}"

    def _tags(self, p: float) -> dict[str, Any]:
        if self.rng.random() < p:
            return {"tags": self.rng.sample(_TAGS, self.rng.randint(1, 3))}
        return {}

    # -- entities -----------------------------------------------------------------------------

    def _new_entity(self) -> str | None:
        rng = self.rng
        kind = rng.choice(_ENTITY_KINDS)
        node_id = self._node("e", "entity", {"name": f"{kind} {len(self.entities) + 1}", "kind": kind})
        if node_id is not None:
            self.entities.append(node_id)
            self.entity_facts[node_id] = 0
        return node_id

    def _pick_entity(self) -> str | None:
        """A known entity, skewed towards the oldest (popular) ones; sometimes a new one."""
        rng = self.rng
        if not self.entities or rng.random() < 0.18:
            created = self._new_entity()
            if created is not None or not self.entities:
                return created
        return self.entities[int(len(self.entities) * rng.random() ** 3)]

    def _relate_fact(self, fact: str) -> None:
        for _ in range(1 if self.rng.random() < 0.6 else 2):
            entity = self._pick_entity()
            if entity is None:
                return
            # mostly fact -> entity, sometimes written the other way round
            made = self._edge(fact, entity, "related_to") if self.rng.random() < 0.8 else self._edge(entity, fact, "related_to")
            if made:
                self.entity_facts[entity] += 1

    # -- facts, results -----------------------------------------------------------------------

    def _fact(self, sources: list[str]) -> str | None:
        rng = self.rng
        fact = self._node("f", "fact", {"content": self._text(), "confidence": round(rng.uniform(0.3, 1.0), 2)})
        if fact is None:
            return None
        for source in sources:
            self._edge(fact, source, "derived_from")
        self._relate_fact(fact)
        return fact

    def _results(self, action: str, status: str) -> None:
        rng = self.rng
        if status == "done":
            count = 1 if rng.random() < 0.75 else 2
        elif status == "failed":
            count = 1 if rng.random() < 0.5 else 0
        else:
            count = 0
        for _ in range(count):
            ok = status == "done"
            result = self._node("r", "result", {"content": self._text(), "ok": ok, "value": rng.randint(0, 10_000)})
            if result is None:
                return
            self._edge(action, result, "produces")
            # a derived_from chain: facts from the result, facts from those facts
            frontier = [result]
            depth = 0
            while frontier and rng.random() < (0.85 if depth == 0 else 0.45) and depth < 5:
                depth += 1
                following = []
                for source in frontier:
                    for _ in range(1 if rng.random() < 0.7 else 2):
                        sources = [source]
                        if rng.random() < 0.05 and self.entities:
                            # sometimes a fact combines two sources
                            other = self.nodes[rng.randrange(len(self.nodes))]
                            if other["type"] in ("fact", "result"):
                                sources.append(other["id"])
                        fact = self._fact(sources)
                        if fact is None:
                            break
                        following.append(fact)
                frontier = following
            if depth >= 1 and status == "done":
                self.chain_actions.append(action)
            if self.chain_result is None or depth > self.chain_result[0]:
                self.chain_result = (depth, result)

    # -- goals and actions ------------------------------------------------------------------------

    def _goal(self, topic: str, depth: int) -> str | None:
        rng = self.rng
        status = rng.choices(_STATUSES, _GOAL_STATUS_WEIGHTS)[0]
        attrs = {"content": f"{topic}: {self._text().lower()}" if depth else f"Plan the {topic}",
                 "status": status, "priority": rng.randint(1, 5)}
        attrs.update(self._tags(0.3))
        return self._node("g", "goal", attrs)

    def _action(self, depth: int) -> tuple[str, str] | None:
        rng = self.rng
        status = rng.choices(_STATUSES, _ACTION_STATUS_WEIGHTS)[0]
        attrs: dict[str, Any] = {"content": self._text(), "status": status, "priority": rng.randint(1, 5)}
        if rng.random() < 0.3:
            attrs["slot"] = rng.choice(_SLOTS)
        if rng.random() < 0.2:
            attrs["cost"] = round(rng.uniform(5, 900), 2)
        attrs.update(self._tags(0.25))
        action = self._node("a", "action", attrs)
        if action is None:
            return None
        return action, status

    def _link_children(self, parent: str, children: list[str]) -> None:
        """``parent_of`` edges; some parents order all or part of their children explicitly."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.3 and len(children) > 1:
            orders = list(range(len(children)))
            rng.shuffle(orders)
            for child, order in zip(children, orders):
                self._edge(parent, child, "parent_of", order=order)
        elif roll < 0.4 and len(children) > 2:
            ordered = set(rng.sample(range(len(children)), len(children) // 2))
            for position, child in enumerate(children):
                if position in ordered:
                    self._edge(parent, child, "parent_of", order=rng.randint(0, 9))
                else:
                    self._edge(parent, child, "parent_of")
        else:
            for child in children:
                self._edge(parent, child, "parent_of")

    def tree(self, size: int) -> None:
        """One root goal and its tree, about ``size`` nodes including results, facts, entities."""
        rng = self.rng
        topic = rng.choice(_TOPICS)
        start = len(self.nodes)
        budget_end = start + size
        root = self._goal(topic, 0)
        if root is None:
            return
        # deeper trees for bigger projects
        max_depth = 1 + min(6, int(math.log(max(size, 2), 4)))
        leaf_p = 0.35 if size < 300 else 0.12
        level = [root]
        depth = 0
        tree_depth = 0
        structural = 1
        while level and len(self.nodes) < budget_end:
            following = []
            for goal in level:
                if len(self.nodes) >= budget_end:
                    break
                children: list[str] = []
                leaf = depth >= max_depth or (depth > 0 and rng.random() < leaf_p)
                subgoals = 0 if leaf else rng.choice((1, 2, 2, 3, 3))
                actions = rng.randint(3, 8) if leaf else rng.choice((0, 0, 1, 2, 3))
                # actions first or goals first, as people write plans
                kinds = ["goal"] * subgoals + ["action"] * actions
                if rng.random() < 0.5:
                    kinds.reverse()
                sibling_actions: list[str] = []
                for kind in kinds:
                    if kind == "goal":
                        child = self._goal(topic, depth + 1)
                        if child is None:
                            break
                        following.append(child)
                    else:
                        made = self._action(depth + 1)
                        if made is None:
                            break
                        child, status = made
                        sibling_actions.append(child)
                        if rng.random() < 0.3:
                            entity = self._pick_entity()
                            if entity is not None:
                                self._edge(child, entity, "related_to")
                        self._results(child, status)
                        if self.deepest is None or depth + 1 > self.deepest[0]:
                            self.deepest = (depth + 1, child)
                    children.append(child)
                    structural += 1
                    tree_depth = max(tree_depth, depth + 1)
                self._link_children(goal, children)
                # before chains between sibling actions (usually all, sometimes a prefix)
                chained = sibling_actions if rng.random() < 0.85 else sibling_actions[: max(2, len(sibling_actions) // 2)]
                for first, second in zip(chained, chained[1:]):
                    self._edge(first, second, "before")
                if len(chained) > 1 and (self.before_chain is None or len(chained) > self.before_chain[0]):
                    self.before_chain = (len(chained), chained[0])
            level = following
            depth += 1
        self.roots.append((root, len(self.nodes) - start, tree_depth, structural))

    def build(self) -> None:
        rng = self.rng
        # a few standing entities the agent knows from the start (the user, home, ...)
        for _ in range(min(20, max(1, self.total // 500))):
            self._new_entity()
        while self.remaining > 0:
            if rng.random() < 0.006:
                size = int(rng.uniform(40, 90) * rng.uniform(40, 90))  # a long-running project
            else:
                size = int(rng.lognormvariate(4.3, 0.7))  # a task: ~75 nodes typical
            self.tree(max(8, min(size, self.total // 20 or 8)))


def generate(nodes: int, seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """A graph document of exactly ``nodes`` nodes, and its meta (counts and anchors)."""
    if nodes < 50:
        raise ValueError("generate at least 50 nodes")
    builder = _Builder(nodes, seed)
    builder.build()
    doc = {"format": "hgm-graph/1", "nodes": builder.nodes, "edges": builder.edges}

    node_types: dict[str, int] = {}
    for node in builder.nodes:
        node_types[node["type"]] = node_types.get(node["type"], 0) + 1
    edge_types: dict[str, int] = {}
    ordered = 0
    for edge in builder.edges:
        edge_types[edge["type"]] = edge_types.get(edge["type"], 0) + 1
        ordered += "order" in edge

    roots = builder.roots
    big_root = max(roots, key=lambda r: r[3])[0]  # the most goals and actions
    deep_roots = sorted((r for r in roots if r[2] >= 3), key=lambda r: r[1]) or sorted(roots, key=lambda r: r[1])
    mid_root = deep_roots[len(deep_roots) // 2][0]
    hub_entity = max(builder.entities, key=lambda e: (builder.entity_facts[e], -int(e[1:])))
    small = [e for e in builder.entities if 3 <= builder.entity_facts[e] <= 8]
    small_entity = small[len(small) // 2] if small else builder.entities[-1]
    chain_actions = builder.chain_actions
    meta = {
        "generator_version": GENERATOR_VERSION,
        "nodes": len(builder.nodes),
        "edges": len(builder.edges),
        "seed": seed,
        "node_types": dict(sorted(node_types.items())),
        "edge_types": dict(sorted(edge_types.items())),
        "ordered_parent_of_edges": ordered,
        "roots": len(roots),
        "largest_tree": max(r[1] for r in roots),
        "anchors": {
            "big_root": big_root,
            "mid_root": mid_root,
            "hub_entity": hub_entity,
            "small_entity": small_entity,
            "deep_action": builder.deepest[1] if builder.deepest else builder.nodes[0]["id"],
            "chain_result": builder.chain_result[1] if builder.chain_result else builder.nodes[0]["id"],
            "chain_action": chain_actions[len(chain_actions) // 2] if chain_actions else builder.nodes[0]["id"],
            "first_action": builder.before_chain[1] if builder.before_chain else builder.nodes[0]["id"],
        },
    }
    return doc, meta


def graph_paths(directory: str | pathlib.Path, nodes: int, seed: int) -> tuple[pathlib.Path, pathlib.Path]:
    """Where the cached graph file and its meta live for ``(nodes, seed)``."""
    directory = pathlib.Path(directory)
    stem = f"memory-v{GENERATOR_VERSION}-n{nodes}-s{seed}"
    return directory / f"{stem}.json", directory / f"{stem}.meta.json"


def write_graph(doc: dict[str, Any], meta: dict[str, Any], graph_path: pathlib.Path, meta_path: pathlib.Path) -> None:
    graph_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = graph_path.with_suffix(".json.part")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, separators=(",", ":"))
    tmp.replace(graph_path)
    meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")


def ensure_graph(directory: str | pathlib.Path, nodes: int, seed: int = 0) -> tuple[pathlib.Path, dict[str, Any], float | None]:
    """The cached graph file for ``(nodes, seed)``, generated when missing.

    Returns ``(path, meta, seconds spent generating or None if it was cached)``.
    """
    graph_path, meta_path = graph_paths(directory, nodes, seed)
    if graph_path.exists() and meta_path.exists():
        return graph_path, json.loads(meta_path.read_text(encoding="utf-8")), None
    started = time.perf_counter()
    doc, meta = generate(nodes, seed)
    write_graph(doc, meta, graph_path, meta_path)
    return graph_path, meta, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, help="graph file to write (meta goes next to it)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    doc, meta = generate(args.nodes, args.seed)
    out = args.out or graph_paths("bench/results/tmp", args.nodes, args.seed)[0]
    write_graph(doc, meta, out, out.with_name(out.stem + ".meta.json"))
    print(json.dumps({**meta, "file": str(out), "seconds": round(time.perf_counter() - started, 2)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
