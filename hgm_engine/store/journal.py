"""The journal's records: commits, changes, nodes and edges as JSON objects, as stores keep them.

>>> from hgm_engine.model import GraphOverlay, MemoryGraph
>>> overlay = GraphOverlay(MemoryGraph()); _ = overlay.add_node("g", "goal", {"status": "active"})
>>> commit = Commit(1, "planner", "start", None, 0.0, tuple(overlay.changes()))
>>> commit_from_record(commit_to_record(commit)) == commit
True
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping
from json.encoder import c_make_encoder as _c_make_encoder
from json.encoder import encode_basestring as _json_string

from hgm_engine.errors import HGMError
from hgm_engine.model import Change, Commit, Edge, FrozenDict, Node, freeze, thaw

__all__ = [
    "commit_from_row",
    "node_from_record",
    "edge_from_record",
    "change_to_record",
    "change_from_record",
    "commit_to_record",
    "commit_to_text",
    "attrs_json",
    "commit_from_record",
]

# One encoder for every record (``json.dumps`` with arguments builds a new one per call):
# compact, UTF-8 as it is. It encodes frozen values as they are (a FrozenDict is a dict, a
# tuple a list), so nothing is thawed first. Where the json module has its C encoder, it is
# called directly (half the cost of JSONEncoder.encode for a payload's few attributes); the
# values are trees (frozen JSON), so it needs no check for circular references.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_chunks = None if _c_make_encoder is None else _c_make_encoder(None, _ENCODER.default, _json_string, None, ":", ",", False, False, True)


def attrs_json(value: Any) -> str:
    """The compact JSON text of a value (frozen or not), as every journal record and state row
    holds it: the text ``json.dumps(thaw(value), ensure_ascii=False, separators=(",", ":"))``.

    >>> from hgm_engine.model import freeze
    >>> attrs_json(freeze({"tags": ["a", "b"], "n": 1, "é": None}))
    '{"tags":["a","b"],"n":1,"é":null}'
    """
    if not value and value.__class__ in _MAPS:  # no attributes: the most common payload of an edge
        return "{}"
    if _chunks is None:  # pragma: no cover - a Python without the json module's C accelerator
        return _ENCODER.encode(value)
    return "".join(_chunks(value, 0))


_MAPS = (FrozenDict, dict)


def _node_record(node: Node) -> dict[str, Any]:
    return {"id": node.id, "type": node.type, "attrs": thaw(node.attrs), "seq": node.seq}


def _edge_record(edge: Edge) -> dict[str, Any]:
    return {"from": edge.source, "to": edge.target, "type": edge.type, "attrs": thaw(edge.attrs), "seq": edge.seq}


def node_from_record(record: Mapping[str, Any]) -> Node:
    attrs_value = record.get("attrs") or {}
    return Node(record["id"], record["type"], freeze(attrs_value) if attrs_value else FrozenDict(), record["seq"])


def edge_from_record(record: Mapping[str, Any]) -> Edge:
    attrs_value = record.get("attrs") or {}
    return Edge(
        record["from"], record["to"], record["type"], freeze(attrs_value) if attrs_value else FrozenDict(), record["seq"]
    )


def change_to_record(change: Change) -> dict[str, Any]:
    def payload(value):
        if value is None:
            return None
        return _node_record(value) if isinstance(value, Node) else _edge_record(value)

    return {"kind": change.kind, "before": payload(change.before), "after": payload(change.after)}


def change_from_record(record: Mapping[str, Any]) -> Change:
    decode = node_from_record if record["kind"].startswith("node") else edge_from_record
    before = record.get("before")
    after = record.get("after")
    return Change(record["kind"], decode(before) if before else None, decode(after) if after else None)


def commit_to_record(commit: Commit) -> dict[str, Any]:
    return {
        "t": commit.t,
        "author": commit.author,
        "reason": commit.reason,
        "base_t": commit.base_t,
        "timestamp": commit.timestamp,
        "changes": [] if commit.genesis else [change_to_record(c) for c in commit.changes],
        "fired_rules": list(commit.fired_rules),
        "dirtied": [thaw(d) for d in commit.dirtied],
        "genesis": commit.genesis,
        "kind": commit.kind,
        **({"purged": list(commit.purged)} if commit.purged else {}),
    }


def _payload_text(payload: Node | Edge | None, attrs_text: str | None) -> str:
    if payload is None:
        return "null"
    if attrs_text is None:
        attrs_text = attrs_json(payload.attrs)
    if isinstance(payload, Node):
        return f'{{"id":{_json_string(payload.id)},"type":{_json_string(payload.type)},"attrs":{attrs_text},"seq":{payload.seq:d}}}'
    return (
        f'{{"from":{_json_string(payload.source)},"to":{_json_string(payload.target)},"type":{_json_string(payload.type)},'
        f'"attrs":{attrs_text},"seq":{payload.seq:d}}}'
    )


def _head_text(commit: Commit) -> str:
    """``attrs_json`` of the record's first fields (t, author, reason, base_t, timestamp),
    written without building the dict and calling the encoder when they have the types a
    commit made here has (an int t, texts or None, an int or None, a finite float); the
    encoder's text otherwise."""
    t, author, reason, base_t, timestamp = commit.t, commit.author, commit.reason, commit.base_t, commit.timestamp
    if (
        t.__class__ is int
        and (author is None or author.__class__ is str)
        and (reason is None or reason.__class__ is str)
        and (base_t is None or base_t.__class__ is int)
        and timestamp.__class__ is float
        and timestamp - timestamp == 0.0  # finite: the encoder writes NaN and the infinities otherwise
    ):
        return (
            f'{{"t":{t:d},"author":{"null" if author is None else _json_string(author)},'
            f'"reason":{"null" if reason is None else _json_string(reason)},'
            f'"base_t":{"null" if base_t is None else format(base_t, "d")},"timestamp":{float.__repr__(timestamp)}}}'
        )
    return attrs_json(
        {"t": t, "author": author, "reason": reason, "base_t": base_t, "timestamp": timestamp}
    )


def _tail_text(commit: Commit) -> str:
    """``attrs_json`` of the record's last fields (fired_rules, dirtied, genesis, kind and a
    purge's purged): written directly when no rule fired, nothing was dirtied and nothing
    purged (a commit of a memory without rules), else by the encoder."""
    genesis, kind = commit.genesis, commit.kind
    if not commit.fired_rules and not commit.dirtied and not commit.purged and genesis.__class__ is bool and kind.__class__ is str:
        return f'{{"fired_rules":[],"dirtied":[],"genesis":{"true" if genesis else "false"},"kind":{_json_string(kind)}}}'
    return attrs_json(
        {
            "fired_rules": list(commit.fired_rules),
            "dirtied": [thaw(d) for d in commit.dirtied],
            "genesis": genesis,
            "kind": kind,
            **({"purged": list(commit.purged)} if commit.purged else {}),
        }
    )


def commit_to_text(commit: Commit, after_texts: list[str | None] | None = None) -> str:
    """The journal record of ``commit`` as compact JSON text: exactly the text of
    :func:`commit_to_record` encoded by :data:`attrs_json`, made without building the record
    (``after_texts[i]``: the attributes text of change ``i``'s ``after`` payload when the
    caller has it already, for the state row; None where it has not).

    >>> from hgm_engine.model import GraphOverlay, MemoryGraph
    >>> overlay = GraphOverlay(MemoryGraph()); _ = overlay.add_node("g", "goal", {"status": "active", "tags": ["é"]})
    >>> commit = Commit(1, "planner", "start", None, 0.5, tuple(overlay.changes()), dirtied=({"id": "g"},))
    >>> commit_to_text(commit) == attrs_json(commit_to_record(commit))
    True
    """
    head, tail = _head_text(commit), _tail_text(commit)
    if commit.genesis:
        changes = ""
    else:
        texts = after_texts if after_texts is not None else [None] * len(commit.changes)
        parts = []
        for change, text in zip(commit.changes, texts):
            # _payload_text of each side, inlined (a call per payload was a tenth of the record)
            kind, before, after = change.kind, change.before, change.after
            if before is None:
                before_text = "null"
            elif before.__class__ is Node:
                before_text = (
                    f'{{"id":{_json_string(before.id)},"type":{_json_string(before.type)},'
                    f'"attrs":{attrs_json(before.attrs)},"seq":{before.seq:d}}}'
                )
            elif before.__class__ is Edge:
                before_text = (
                    f'{{"from":{_json_string(before.source)},"to":{_json_string(before.target)},"type":{_json_string(before.type)},'
                    f'"attrs":{attrs_json(before.attrs)},"seq":{before.seq:d}}}'
                )
            else:  # a payload of a subclass (attributes not decoded yet)
                before_text = _payload_text(before, None)
            if after is None:
                after_text = "null"
            elif after.__class__ is Node:
                after_text = (
                    f'{{"id":{_json_string(after.id)},"type":{_json_string(after.type)},'
                    f'"attrs":{attrs_json(after.attrs) if text is None else text},"seq":{after.seq:d}}}'
                )
            elif after.__class__ is Edge:
                after_text = (
                    f'{{"from":{_json_string(after.source)},"to":{_json_string(after.target)},"type":{_json_string(after.type)},'
                    f'"attrs":{attrs_json(after.attrs) if text is None else text},"seq":{after.seq:d}}}'
                )
            else:
                after_text = _payload_text(after, text)
            parts.append(f'{{"kind":{_json_string(kind)},"before":{before_text},"after":{after_text}}}')
        changes = ",".join(parts)
    return f'{head[:-1]},"changes":[{changes}],{tail[1:]}'


def commit_from_record(record: Mapping[str, Any]) -> Commit:
    return Commit(
        record["t"],
        record.get("author"),
        record.get("reason"),
        record.get("base_t"),
        record.get("timestamp", 0.0),
        tuple(change_from_record(c) for c in record.get("changes", ())),
        tuple(record.get("fired_rules", ())),
        tuple(freeze(d) for d in record.get("dirtied", ())),
        bool(record.get("genesis", False)),
        record.get("kind", "transaction"),
        tuple(record.get("purged", ())),
    )


_CHANGE_KINDS = frozenset(
    ("node_added", "node_updated", "node_removed", "edge_added", "edge_updated", "edge_removed")
)


def _check_payload(payload: Any, node: bool) -> None:
    if payload is None:
        return
    if node:
        if not isinstance(payload, Node) or not isinstance(payload.id, str) or not isinstance(payload.type, str):
            raise ValueError("a node in its changes has no text 'id' and 'type'")
    elif not isinstance(payload, Edge) or not all(isinstance(v, str) for v in payload.key):
        raise ValueError("an edge in its changes has no text 'from', 'to' and 'type'")
    if type(payload.seq) is not int or not isinstance(payload.attrs, FrozenDict):
        raise ValueError("a payload in its changes has no whole-number 'seq' or no object 'attrs'")


def _check_commit(commit: Commit) -> None:
    """ValueError when a decoded record does not have the types a commit has."""
    for name in ("author", "reason"):
        if getattr(commit, name) is not None and not isinstance(getattr(commit, name), str):
            raise ValueError(f"its {name!r} is not text")
    if commit.base_t is not None and type(commit.base_t) is not int:
        raise ValueError("its 'base_t' is not a whole number")
    if isinstance(commit.timestamp, bool) or not isinstance(commit.timestamp, (int, float)):
        raise ValueError("its 'timestamp' is not a number")
    if not isinstance(commit.kind, str) or not all(isinstance(name, str) for name in commit.fired_rules):
        raise ValueError("its 'kind' or 'fired_rules' are not text")
    if not all(isinstance(name, str) for name in commit.purged):
        raise ValueError("its 'purged' are not text")
    for change in commit.changes:
        if change.kind not in _CHANGE_KINDS:
            raise ValueError(f"a change has the unknown kind {change.kind!r}")
        node = change.kind.startswith("node")
        _check_payload(change.before, node)
        _check_payload(change.after, node)
        if change.before is None and change.after is None:
            raise ValueError("a change has neither 'before' nor 'after'")


def commit_from_row(t: int, record: Any, damaged: Callable[[str], HGMError]) -> Commit:
    """The commit in journal row ``t`` (the record as JSON text, or already decoded).

    A record that is not a commit (not JSON, not an object, a ``t`` other than the row's,
    fields missing or of the wrong type) raises ``damaged(what)``: the store names itself and
    says how to recover.

    >>> from hgm_engine.errors import Problem, StoreError
    >>> damaged = lambda what: StoreError([Problem("store", what)])
    >>> commit_from_row(1, '{"t": 1, "changes": []}', damaged).t
    1
    >>> commit_from_row(2, '{"author": "me"}', damaged)
    Traceback (most recent call last):
    ...
    hgm_engine.errors.StoreError: store: journal row t=2: its 't' is missing
    """
    if isinstance(record, (str, bytes)):
        try:
            record = json.loads(record)
        except (ValueError, RecursionError) as exc:
            raise damaged(f"journal row t={t} is not a JSON object ({exc})") from None
    if not isinstance(record, dict):
        raise damaged(f"journal row t={t} is not a JSON object")
    if "t" not in record:
        raise damaged(f"journal row t={t}: its 't' is missing")
    if type(record["t"]) is not int or record["t"] != t:
        raise damaged(f"journal row t={t}: its 't' is {record['t']!r}")
    try:
        commit = commit_from_record(record)
        _check_commit(commit)
    except KeyError as exc:
        raise damaged(f"journal row t={t}: a change lacks its {exc} field") from None
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise damaged(f"journal row t={t}: {exc}") from None
    return commit
