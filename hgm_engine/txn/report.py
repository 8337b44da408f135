"""Transaction reports: what a commit, a refusal or a dry run did, as objects and as JSON.

The report is what every way of changing memory returns (``Memory.apply``, a transaction's
``commit``, ``load``, ``revert``, the path verbs); ``to_json`` is its form in formats.md.

>>> from hgm_engine import Memory
>>> report = Memory().apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
>>> report.committed, [change["kind"] for change in report.to_json()["changes"]]
(True, ['node_added'])
"""

from __future__ import annotations

from typing import Any, Mapping

import attrs

from hgm_engine.model import Change, same_json, slot_setters, thaw

__all__ = ["Violation", "TransactionReport", "change_to_json"]


@attrs.frozen
class Violation:
    """A constraint that does not hold: its name, the node it fails on (None for the graph as
    a whole) and a message that says why.

    >>> Violation("done_has_result", "a", "'a' breaks: each action ...").to_json()["node"]
    'a'
    """

    constraint: str
    node: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"constraint": self.constraint, "node": self.node, "message": self.message}


def change_to_json(change: Change) -> dict[str, Any]:
    """A change as the transaction report shows it (formats.md): an update lists only the
    attributes it changed.

    >>> from hgm_engine.model import Node, freeze
    >>> before = Node("a", "action", freeze({"status": "pending", "note": "x"}), 1)
    >>> change_to_json(Change("node_updated", before, attrs.evolve(before, attrs=freeze({"status": "done", "note": "x"}))))
    {'kind': 'node_updated', 'id': 'a', 'before': {'status': 'pending'}, 'after': {'status': 'done'}}
    """
    kind, before, after = change.kind, change.before, change.after
    if kind == "node_updated":
        keys = sorted(set(before.attrs) | set(after.attrs))
        changed = [k for k in keys if k not in before.attrs or k not in after.attrs or not same_json(before.attrs[k], after.attrs[k])]
        return {
            "kind": kind,
            "id": after.id,
            "before": {k: thaw(before.attrs[k]) for k in changed if k in before.attrs},
            "after": {k: thaw(after.attrs[k]) for k in changed if k in after.attrs},
        }
    if kind in ("node_added", "node_removed"):
        payload = after if kind == "node_added" else before
        return {"kind": kind, "id": payload.id, "node": payload.to_json()}
    payload = after if after is not None else before
    doc = {"kind": kind, "from": payload.source, "to": payload.target, "type": payload.type}
    if kind == "edge_updated":
        doc["before"] = thaw(before.attrs)
        doc["after"] = thaw(after.attrs)
    elif payload.attrs:
        doc["attrs"] = thaw(payload.attrs)
    return doc




@attrs.frozen(init=False)
class TransactionReport:
    """What a transaction did (or would do, or why it did not).

    >>> report = TransactionReport(False, None, None, "me", "try", violations=(Violation("c", "a", "'a' breaks: c"),))
    >>> report.to_json()["violations"]
    [{'constraint': 'c', 'node': 'a', 'message': "'a' breaks: c"}]
    """

    committed: bool
    t: int | None
    base_t: int | None
    author: str | None
    reason: str | None
    changes: tuple[Change, ...] = ()
    fired_rules: tuple[str, ...] = ()
    dirtied: tuple[Mapping[str, Any], ...] = ()
    violations: tuple[Violation, ...] = ()
    dry_run: bool = False
    error: Mapping[str, Any] | None = None
    created: tuple[str, ...] = ()
    cleared: tuple[Mapping[str, Any], ...] = ()

    def __init__(
        self,
        committed: bool,
        t: int | None,
        base_t: int | None,
        author: str | None,
        reason: str | None,
        changes: tuple[Change, ...] = (),
        fired_rules: tuple[str, ...] = (),
        dirtied: tuple[Mapping[str, Any], ...] = (),
        violations: tuple[Violation, ...] = (),
        dry_run: bool = False,
        error: Mapping[str, Any] | None = None,
        created: tuple[str, ...] = (),
        cleared: tuple[Mapping[str, Any], ...] = (),
    ) -> None:
        # the slots' setters, not attrs' object.__setattr__ per field (one report per commit)
        (s_committed, s_t, s_base_t, s_author, s_reason, s_changes, s_fired, s_dirtied, s_violations, s_dry_run, s_error,
         s_created, s_cleared) = _SET_REPORT
        s_committed(self, committed)
        s_t(self, t)
        s_base_t(self, base_t)
        s_author(self, author)
        s_reason(self, reason)
        s_changes(self, changes)
        s_fired(self, fired_rules)
        s_dirtied(self, dirtied)
        s_violations(self, violations)
        s_dry_run(self, dry_run)
        s_error(self, error)
        s_created(self, created)
        s_cleared(self, cleared)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "committed": self.committed,
            "t": self.t,
            "base_t": self.base_t,
            "author": self.author,
            "reason": self.reason,
            "changes": [change_to_json(c) for c in self.changes],
            "fired_rules": list(self.fired_rules),
            "dirtied": [dict(d) for d in self.dirtied],
            "violations": [v.to_json() for v in self.violations],
        }
        if self.dry_run:
            doc["dry_run"] = True
        if self.created:
            doc["created"] = list(self.created)
        if self.cleared:
            doc["cleared"] = [dict(c) for c in self.cleared]
        if self.error is not None:
            doc["error"] = dict(self.error)
        return doc


_SET_REPORT = slot_setters(TransactionReport)
