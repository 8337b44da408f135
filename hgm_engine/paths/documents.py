"""Paths as documents: what ``Memory.path``, ``Memory.paths`` and ``Memory.path_metrics``
return. Pure reads of a graph (``view``); the caller holds the state still
(``memory.reading()``).

>>> from hgm_engine import Memory
>>> m = Memory()
>>> _ = m.ingest([{"id": "order-17", "goal": "Check order A1001", "steps": ["query_order", "notify_user"]}])
>>> path_summaries(m.graph)[0]["steps"], path_document(m.graph, "order-17")["version"]
(['query_order', 'notify_user'], 1)
"""

from __future__ import annotations

from typing import Any

from hgm_engine.model import thaw
from hgm_engine.paths.records import (
    MARKS,
    is_path,
    lineage_of,
    path_actions,
    replaced_by,
    replaces_of,
    resolve_path,
    scenario_of,
    step_edges,
    step_name,
)
from hgm_engine.paths.versions import LINEAGE_ATTRS, VERSION_ATTRS

__all__ = ["path_document", "path_summaries", "lineage_metrics"]


def _version_doc(view: Any, node_id: str) -> dict[str, Any]:
    a = thaw(view.node(node_id).attrs)
    return {"id": node_id, "version": a.get("version", 1), "status": a.get("status"), "reward": a.get("reward"),
            "result": a.get("result"), "reason": a.get("rewrite_reason"), "restored_from": a.get("restored_from")}


def path_document(view: Any, path_id: str) -> dict[str, Any]:
    """One path with its steps, versions, lineage and counters (see ``Memory.path``).

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"], "owner": "ops"}])
    >>> doc = path_document(m.graph, "p")
    >>> doc["id"], doc["current"], [s["name"] for s in doc["steps"]], doc["attributes"]
    ('p', True, ['a'], {'owner': 'ops'})
    """
    target, root, versions, head = resolve_path(view, path_id)
    node = view.node(target)
    a = thaw(node.attrs)
    lineage_attrs = thaw(view.node(root).attrs)
    actions = path_actions(view, target)
    doc: dict[str, Any] = {
        "id": target,
        "root": root,
        "head": head,
        "current": target == head,
        "goal": a.get("content", ""),
        "steps": [dict(thaw(s.attrs), id=s.id) for s in actions],
        "edges": [list(e) for e in step_edges(view, actions)],
        "tags": a.get("tags", []),
        "status": a.get("status"),
        "version": a.get("version", 1),
        "lineage": a.get("lineage", [target]),
        "replaces": replaces_of(view, target),
        "replaced_by": replaced_by(view, target),
        "reward": a.get("reward"),
        "result": a.get("result"),
        "scenario": scenario_of(view, node),
        "rewrite_reason": a.get("rewrite_reason"),
        "restored_from": a.get("restored_from"),
        "successes": a.get("successes", 0),
        "failures": a.get("failures", 0),
        "template": bool(a.get("template", False)),
        "needs_human": bool(lineage_attrs.get("needs_human", False)),
        "rewrite_count": lineage_attrs.get("rewrite_count", 0),
        "rollback_count": lineage_attrs.get("rollback_count", 0),
        "failed_streak": lineage_attrs.get("failed_streak", 0),
        "versions": [_version_doc(view, v) for v in versions],
    }
    extra = {k: v for k, v in a.items() if k not in doc and k not in ("content", "kind", *LINEAGE_ATTRS,
                                                                       *VERSION_ATTRS, *MARKS)}
    if extra:
        doc["attributes"] = extra
    return doc


def path_summaries(view: Any, *, all_versions: bool = False) -> list[dict[str, Any]]:
    """A summary per lineage (its current version), or per version (see ``Memory.paths``).

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}])
    >>> _ = m.rewrite_path("p", ["b"], "b, not a")
    >>> [(s["id"], s["steps"]) for s in path_summaries(m.graph)], len(path_summaries(m.graph, all_versions=True))
    ([('p@v2', ['b'])], 2)
    """
    out = []
    order: dict[str, tuple] = {}
    for node in list(view.nodes_of_type("goal")):
        if not is_path(node):
            continue
        if not all_versions and replaced_by(view, node.id):
            continue
        root, versions, head = lineage_of(view, node.id)
        a = node.attrs
        order[node.id] = (view.node(root).seq, a.get("version", 1) if isinstance(a.get("version"), int) else 0)
        out.append({
            "id": node.id,
            "root": root,
            "goal": a.get("content", ""),
            "steps": [step_name(s) for s in path_actions(view, node.id)],
            "version": a.get("version", 1),
            "versions": len(versions),
            "status": a.get("status"),
            "reward": a.get("reward"),
            "result": a.get("result"),
            "tags": list(a.get("tags", ())),
            "scenario": scenario_of(view, node),
            "needs_human": bool(view.node(root).attrs.get("needs_human", False)),
        })
    out.sort(key=lambda entry: order[entry["id"]])  # lineages in creation order, versions in order
    return out


def lineage_metrics(view: Any) -> dict[str, Any]:
    """Counters to watch for rewrite storms (the lineage part of ``Memory.path_metrics``):
    paths, versions, rewrites, rollbacks, and the lineages with more than one version, a
    failure streak or ``needs_human``.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}])
    >>> _ = m.rewrite_path("p", ["b"], "b, not a")
    >>> metrics = lineage_metrics(m.graph)
    >>> metrics["paths"], metrics["versions"], metrics["versions_per_lineage"]
    (1, 2, {'p': 2})
    """
    lineages: dict[str, dict[str, Any]] = {}
    total_versions = 0
    for node in list(view.nodes_of_type("goal")):
        if not is_path(node):
            continue
        total_versions += 1
        if replaces_of(view, node.id) is not None:
            continue
        _, versions, head = lineage_of(view, node.id)
        a = node.attrs
        lineages[node.id] = {
            "head": head,
            "versions": len(versions),
            "rewrites": a.get("rewrite_count", 0),
            "rollbacks": a.get("rollback_count", 0),
            "failed_streak": a.get("failed_streak", 0),
            "needs_human": bool(a.get("needs_human", False)),
        }
    watched = {k: v for k, v in lineages.items() if v["versions"] > 1 or v["failed_streak"] or v["needs_human"]}
    return {
        "paths": len(lineages),
        "versions": total_versions,
        "rewrites": sum(v["rewrites"] for v in lineages.values()),
        "rollbacks": sum(v["rollbacks"] for v in lineages.values()),
        "max_versions_in_a_lineage": max((v["versions"] for v in lineages.values()), default=0),
        "versions_per_lineage": {k: v["versions"] for k, v in watched.items()},
        "consecutive_failures": {k: v["failed_streak"] for k, v in lineages.items() if v["failed_streak"]},
        "needs_human": sorted(k for k, v in lineages.items() if v["needs_human"]),
        "lineages": watched,
    }
