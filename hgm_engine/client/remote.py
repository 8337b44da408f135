"""``RemoteMemory``: a memory served by ``hgm serve``, with the methods, results and errors of a
local :class:`~hgm_engine.Memory`.

Reads return a :class:`~hgm_engine.QueryResult`, changes a
:class:`~hgm_engine.TransactionReport`, localization a ``LocateResult``; a refusal raises the
:class:`~hgm_engine.errors.HGMError` subclass the engine raises for it, with the same category,
message and position (``err.request_id`` names the request in the server's log). A transaction
naming ``base_t`` that meets a change made after it is the same
:class:`~hgm_engine.errors.ConflictError`. What cannot cross the wire is not there (Python
callables: ``commit_built``, ``on_commit``, ``summarize(content=...)``; in-process objects:
``graph``, ``store``, locks), and a transaction block cannot read its own uncommitted ops
(``tx.query`` is a :class:`~hgm_engine.errors.RequestError`: query before the block, or
commit and query after). docs/integrations.md has the table.

>>> from hgm_engine.client import connect
>>> memory = connect("http://127.0.0.1:1", timeout=0.5, retries=0)
>>> memory.query("root")
Traceback (most recent call last):
  ...
hgm_engine.errors.ServiceError: unreachable at http://127.0.0.1:1: cannot reach the hgm server at http://127.0.0.1:1: Connection refused
"""

from __future__ import annotations

import re
import urllib.parse
import uuid
from typing import Any, Iterable, Mapping

from hgm_engine.client.documents import (
    error_from_document,
    ingest_report_from_json,
    locate_result_from_json,
    query_result_from_json,
    report_from_json,
)
from hgm_engine.client.http import DEFAULT_TIMEOUT, RetryPolicy, Transport
from hgm_engine.errors import HGMError, Problem, QueryAnalysisError, RequestError, ServiceError, TransactionError, TransactionRefused
from hgm_engine.model import value_problem
from hgm_engine.query import QueryResult
from hgm_engine.rules import parse_rules
from hgm_engine.txn import MAX_OPS, HistoricalMemory, OpMethods, TransactionReport, Violation, parse_op

__all__ = ["RemoteMemory", "RemoteTransaction", "connect"]

_MAX_SEARCH_HITS = 1_000  # what `limit=None` asks of a server (its default max_search_hits)


def connect(
    url: str,
    *,
    token: str | None = None,
    memory: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int | RetryPolicy = 3,
) -> "RemoteMemory":
    """A :class:`RemoteMemory` for the ``hgm serve`` at ``url``; ``token`` is its bearer token
    (``hgm serve --token``), ``memory`` the name of one memory of a server of many (None: the
    server's one memory). ``timeout`` is the most one request may take, in seconds (default
    30), answer included; ``retries`` how often a read is tried again (with backoff) when the
    server cannot be reached, times out or is overloaded (default 3), or a
    :class:`~hgm_engine.client.RetryPolicy`. No request is made until the first call.

    >>> m = connect("http://127.0.0.1:8765", token="s3cret", memory="team/alice")
    >>> m.url, m.name
    ('http://127.0.0.1:8765', 'team/alice')
    """
    return RemoteMemory(Transport(url, token=token, timeout=timeout, retries=retries), memory)


def _quote(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def _check_params(expr: Any, params: Mapping[str, Any]) -> None:
    """A parameter value JSON cannot carry, refused as a local memory refuses it: at the
    parameter's place in the query."""
    for name, value in params.items():
        problem = value_problem(value, None)
        if problem is None:
            continue
        found = re.search(rf"\${re.escape(str(name))}\b", expr) if isinstance(expr, str) else None
        message = f"parameter ${name}: {problem.message}"
        if found is None:
            raise QueryAnalysisError([Problem("invalid-argument", message, where=f"params.{name}")])
        raise QueryAnalysisError.single("invalid-argument", message, expr, found.start())


class RemoteMemory:
    """A memory in another process, spoken to over REST (see :func:`connect`). Safe to share
    between threads: each thread has its own connection."""

    def __init__(self, transport: Transport, name: str | None = None):
        if name is not None and (not isinstance(name, str) or not name):
            raise RequestError([Problem("invalid-memory-name", f"a memory's name is a non-empty string, not {name!r}", where="memory")])
        self.transport = transport
        self.name = name
        self._api = "/api/v1" if name is None else f"/api/v1/memories/{_quote(name)}"

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The server's address."""
        return self.transport.base

    def _call(
        self,
        method: str,
        route: str,
        *,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
        family: str = "request",
        source: str | None = None,
        read: bool | None = None,
        ok: tuple[int, ...] = (),
        key: str | None = None,
        convert: Any = None,
    ) -> Any:
        """The document a route answers (its ``key`` member, made into an object by
        ``convert``); an error document raised as its HGMError (statuses in ``ok`` return
        their document instead). An answer of another shape than the route's is a
        ServiceError ``bad-response``, never a KeyError."""
        answer = self.transport.request(method, self._api + route, query=query, body=body, idempotent=read)
        if not (200 <= answer.status < 300 or answer.status in ok):
            raise error_from_document(answer.doc, family=family, source=source, status=answer.status)
        try:
            doc = answer.doc if key is None else answer.doc[key]
            return doc if convert is None else convert(doc)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            shown = repr(answer.doc)[:200]
            raise ServiceError([Problem(
                "bad-response", f"{method} {route} answered a document this client cannot read ({type(exc).__name__}: {exc}): {shown}",
                where=self.url,
            )]) from None

    def _unless_unknown(self, call: Any, empty: Any) -> Any:
        try:
            return call()
        except HGMError as err:
            if err.category == "unknown-node":
                return empty
            raise

    def close(self) -> None:
        """Close this thread's connection (the server keeps the memory)."""
        self.transport.close()

    def __enter__(self) -> "RemoteMemory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteMemory({self.url!r}" + (f", memory={self.name!r})" if self.name else ")")

    # -- state -------------------------------------------------------------------------------

    @property
    def t(self) -> int:
        """The ``t`` of the server's last commit."""
        return self._call("POST", "/query", body={"expr": "nodes.count()"}, family="query", read=True, key="t")

    def __len__(self) -> int:
        return self._call("POST", "/query", body={"expr": "nodes.count()"}, family="query", read=True, key="value")

    def health(self) -> dict[str, Any]:
        """The server's ``/health`` document (``status``, ``t``, ``nodes``, ``pid``); for a
        named memory, its document (``name``, ``t``, ``nodes``, ``url``)."""
        answer = self.transport.request("GET", "/health" if self.name is None else self._api)
        if 200 <= answer.status < 300:
            return answer.doc
        raise error_from_document(answer.doc, status=answer.status)

    # -- reading -----------------------------------------------------------------------------

    def query(
        self,
        expr: str,
        *,
        focus: str | None = None,
        params: Mapping[str, Any] | None = None,
        as_of: int | str | None = None,
    ) -> QueryResult:
        """As :meth:`hgm_engine.Memory.query`."""
        body: dict[str, Any] = {"expr": expr}
        if focus is not None:
            body["focus"] = focus
        if params is not None:
            body["params"] = dict(params)
            _check_params(expr, body["params"])
        if as_of is not None:
            body["as_of"] = as_of
        return self._call(
            "POST", "/query", body=body, family="query", source=expr if isinstance(expr, str) else None, read=True,
            convert=query_result_from_json,
        )

    def explain(self, expr: str, *, physical: bool = False) -> str:
        """As :meth:`hgm_engine.Memory.explain` (the plan as text)."""
        return self._call("POST", "/explain", body={"expr": expr, "physical": physical}, family="query", source=expr, read=True, key="plan")

    def node(self, node_id: str, *, as_of: int | str | None = None) -> dict[str, Any] | None:
        """One node as a JSON object, or None."""
        return self._unless_unknown(
            lambda: self._call("GET", f"/nodes/{_quote(node_id)}", query={"as_of": as_of}), None
        )

    def export(self, *, as_of: int | str | None = None) -> dict[str, Any]:
        """The whole memory as a graph document."""
        return self._call("GET", "/export", query={"as_of": as_of})

    def facts(self, entity: str, *, at: str | None = None, as_of: int | str | None = None) -> dict[str, Any]:
        """As :meth:`hgm_engine.Memory.facts`."""
        return self._call("GET", "/facts", query={"id": entity, "at": at, "as_of": as_of},
                          convert=lambda doc: {k: v for k, v in doc.items() if k != "t"})

    def summary_of(self, node_id: str, *, as_of: int | str | None = None) -> dict[str, Any] | None:
        """The summary node of ``node_id``, or None."""
        if self.node(node_id, as_of=as_of) is None:
            return None
        nodes = self.query("#$id.summaries", params={"id": node_id}, as_of=as_of).nodes
        return nodes[0] if nodes else None

    # -- search ------------------------------------------------------------------------------

    def search(
        self, text: str, *, type: str | None = None, limit: int | None = 10, as_of: int | str | None = None  # noqa: A002
    ) -> list[dict[str, Any]]:
        """As :meth:`hgm_engine.Memory.search`; ``limit=None`` asks for as many as the server
        gives (1,000 by default)."""
        body: dict[str, Any] = {"text": text, "limit": _MAX_SEARCH_HITS if limit is None else limit}
        if type is not None:
            body["type"] = type
        if as_of is not None:
            body["as_of"] = as_of
        return self._call("POST", "/search", body=body, family="search", read=True, key="hits")

    def search_status(self) -> dict[str, Any]:
        """What the server's node index holds."""
        return self._call("GET", "/index", family="search")

    def configure_search(self, *, embedder: str | None, base_url: str | None = None, min_similarity: float | None = None) -> dict[str, Any]:
        """Set the memory's embedder by name (an embedder object cannot cross the wire)."""
        body: dict[str, Any] = {"embedder": embedder}
        if base_url is not None:
            body["base_url"] = base_url
        if min_similarity is not None:
            body["min_similarity"] = min_similarity
        return self._call("PUT", "/index/embedder", body=body, family="search")

    # -- history -----------------------------------------------------------------------------

    def resolve_t(self, as_of: int | str) -> int:
        """The ``t`` that ``as_of`` (a t, a snapshot name, an ISO 8601 time) names."""
        return self._call("POST", "/query", body={"expr": "nodes.count()", "as_of": as_of}, read=True, key="t")

    def as_of(self, t: int | str) -> HistoricalMemory:
        """A read-only memory fixed at ``t`` (or a snapshot name)."""
        return HistoricalMemory(self, self.resolve_t(t))

    def history(self, node_id: str) -> list[dict[str, Any]]:
        """Every commit that touched ``node_id`` (``[]`` for a node that never was)."""
        return self._unless_unknown(lambda: self._call("GET", "/history", query={"node": node_id}, key="history"), [])

    def histories(self, node_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        """The history of each node."""
        return self._call("POST", "/histories", body={"nodes": list(node_ids)}, read=True, key="histories")

    def diff(self, t1: int | str, t2: int | str) -> list[dict[str, Any]]:
        """The net changes from state ``t1`` to ``t2``."""
        return self._call("GET", "/diff", query={"from": t1, "to": t2}, key="changes")

    def changes_since(self, t: int | str) -> dict[str, Any]:
        """The commits and net changes after ``t``."""
        return self._call("GET", "/changes", query={"since": t})

    def commit_summaries(self, since: int | str = 0, limit: int = 100) -> dict[str, Any]:
        """``{"since", "t", "commits": [summaries], "more"}`` (``Memory.commits`` returns
        :class:`~hgm_engine.Commit` objects, which hold every change: ask ``changes_since``)."""
        return self._call("GET", "/commits", query={"since": since, "limit": limit})

    def snapshot(self, name: str, t: int | None = None) -> int:
        """Name the state at ``t`` (default: now); returns its ``t``."""
        body: dict[str, Any] = {"name": name}
        if t is not None:
            body["t"] = t
        return self._call("POST", "/snapshots", body=body, key="t")

    def snapshots(self) -> dict[str, int]:
        """Every snapshot name and its ``t``."""
        return self._call("GET", "/snapshots", key="snapshots")

    # -- planner views -----------------------------------------------------------------------

    def frontier(self, goal: str, *, as_of: int | str | None = None) -> list[str]:
        """As :meth:`hgm_engine.Memory.frontier`."""
        return self._unless_unknown(lambda: self._call("GET", "/frontier", query={"goal": goal, "as_of": as_of}, key="frontier"), [])

    def stale(self, *, as_of: int | str | None = None) -> list[dict[str, Any]]:
        """As :meth:`hgm_engine.Memory.stale`."""
        return self._call("GET", "/stale", query={"as_of": as_of}, key="stale")

    def focus_path(self, node_id: str, *, as_of: int | str | None = None) -> list[str]:
        """As :meth:`hgm_engine.Memory.focus_path`."""
        return self._unless_unknown(lambda: self._call("GET", "/focus-path", query={"node": node_id, "as_of": as_of}, key="path"), [])

    # -- changing ----------------------------------------------------------------------------

    def apply(self, doc: Mapping[str, Any], *, dry_run: bool = False) -> TransactionReport:
        """As :meth:`hgm_engine.Memory.apply`: the report, committed or refused by constraints;
        a malformed document or a conflict raises and changes nothing."""
        if not isinstance(doc, Mapping):
            raise TransactionError([Problem("invalid-transaction", "a transaction is a JSON object with 'ops'", where="document")])
        ops = doc.get("ops")
        for i, op in enumerate(ops if isinstance(ops, list) else ()):
            for key, value in (op.items() if isinstance(op, Mapping) else ()):
                problem = value_problem(value, f"ops[{i}].{key}")
                if problem is not None:  # as a local memory refuses it, before anything is sent
                    raise TransactionError([problem])
        answer = self._call(
            "POST", "/transactions", body=dict(doc), query={"dry_run": True} if dry_run else None,
            family="transaction", ok=(422,),
        )
        return self._refused_or(answer)

    def transaction(
        self, author: str | None = None, reason: str | None = None, *, base_t: int | None = None, dry_run: bool = False
    ) -> "RemoteTransaction":
        """A transaction to fill with ops, sent as one transaction file when the block ends."""
        return RemoteTransaction(self, author, reason, base_t, dry_run)

    def confirm(self, node_id: str, *, author: str | None = None, reason: str | None = None) -> TransactionReport:
        """Clear ``node_id``'s staleness marks."""
        return self._report("/confirm", {"id": node_id, "author": author, "reason": reason})

    def revert(self, t: int, *, author: str | None = None, reason: str | None = None) -> TransactionReport:
        """A new commit undoing commit ``t``."""
        return self._report("/revert", {"t": t, "author": author, "reason": reason})

    def load(self, doc: Mapping[str, Any], *, author: str | None = None, reason: str | None = None) -> TransactionReport:
        """Load a graph document (the genesis commit of an empty memory, else every node and
        edge added)."""
        return self._report("/load", {"graph": dict(doc), "author": author, "reason": reason}, family="load")

    def summarize(
        self, node_id: str, *, author: str | None = None, reason: str | None = None, max_items: int | None = None, dry_run: bool = False
    ) -> TransactionReport:
        """As :meth:`hgm_engine.Memory.summarize` (the extractive summary; a ``content``
        callable cannot cross the wire)."""
        body = {"id": node_id, "author": author, "reason": reason, "dry_run": dry_run}
        if max_items is not None:
            body["max_items"] = max_items
        doc = self._call("POST", "/summarize", body=body, family="request", ok=(422,))
        return self._refused_or(doc["report"] if isinstance(doc, dict) and "report" in doc else doc)

    def _report(self, route: str, body: dict[str, Any], family: str = "transaction") -> TransactionReport:
        doc = self._call("POST", route, body={k: v for k, v in body.items() if v is not None}, family=family, ok=(422,))
        return self._refused_or(doc)

    def _refused_or(self, doc: Any) -> TransactionReport:
        """The report of a commit or of a refusal by constraints (422 with the report); any
        other 422 (a rule loop) raised as its error."""
        if not isinstance(doc, dict) or "committed" not in doc:
            raise error_from_document(doc, family="transaction", status=422)
        try:
            return report_from_json(doc)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise ServiceError([Problem("bad-response", f"a transaction report this client cannot read ({type(exc).__name__}: {exc})", where=self.url)]) from None

    # -- constraints and rules ---------------------------------------------------------------

    def add_constraint(self, name: str, text: str, *, check_existing: bool = True) -> None:
        """As :meth:`hgm_engine.Memory.add_constraint` (TransactionRefused with every violation
        when it does not hold now)."""
        self._call("POST", "/constraints", body={"name": name, "text": text, "check_existing": check_existing},
                   family="rules", source=text if isinstance(text, str) else None)

    def remove_constraint(self, name: str) -> None:
        self._call("DELETE", f"/constraints/{_quote(name)}", family="rules", read=False)

    def constraints(self) -> dict[str, str]:
        """The user constraints in force, name → text."""
        return self._call("GET", "/constraints", key="constraints",
                          convert=lambda found: {c["name"]: c["text"] for c in found if "broken" not in c})

    def violations(self) -> list[Violation]:
        """Every constraint violation in the current state (normally none)."""
        return self._call("GET", "/violations", key="violations",
                          convert=lambda found: [Violation(v["constraint"], v.get("node"), v["message"]) for v in found])

    def load_rules(self, text: str, name: str = "default") -> Any:
        """As :meth:`hgm_engine.Memory.load_rules`; the rule set as parsed here when it can be
        (the server's schema may know names this one does not: then None)."""
        self._call("POST", "/rules", body={"text": text, "name": name}, family="rules", source=text if isinstance(text, str) else None)
        try:
            return parse_rules(text)
        except HGMError:
            return None

    def remove_rules(self, name: str) -> None:
        self._call("DELETE", f"/rules/{_quote(name)}", family="rules", read=False)

    def rules(self) -> dict[str, str]:
        """The rule sets in force, name → text."""
        return self._call("GET", "/rules", key="rule_sets",
                          convert=lambda found: {r["name"]: r["text"] for r in found if "broken" not in r})

    # -- paths -------------------------------------------------------------------------------

    def ingest(
        self,
        trajectories: Iterable[Mapping[str, Any]],
        *,
        skip_invalid: bool = False,
        author: str | None = None,
        scenario: str | None = None,
        reason: str | None = None,
    ) -> Any:
        """Store trajectories as paths (one transaction); the ``IngestReport``."""
        body = {"trajectories": [dict(t) for t in trajectories], "skip_invalid": skip_invalid,
                "author": author, "scenario": scenario, "reason": reason}
        return self._call("POST", "/paths/ingest", body={k: v for k, v in body.items() if v is not None}, family="paths",
                          convert=ingest_report_from_json)

    def locate(
        self,
        text: str,
        tags: Iterable[str] | str | None = None,
        k: int = 5,
        *,
        scenario: str | None = None,
        cross_scenario: bool = False,
        steps: Iterable[str] | None = None,
        hops: int | None = None,
        coarse: bool = False,
        scenarios: int = 3,
    ) -> Any:
        """As :meth:`hgm_engine.Memory.locate`: the ``LocateResult``, best match first."""
        if isinstance(tags, str):
            tags = [t.strip() for t in tags.split(",") if t.strip()]
        body: dict[str, Any] = {"text": text, "k": k, "cross_scenario": cross_scenario, "coarse": coarse, "scenarios": scenarios}
        for key, value in (("tags", tags), ("scenario", scenario), ("steps", steps), ("hops", hops)):
            if value is not None:
                body[key] = list(value) if key in ("tags", "steps") else value
        return self._call("POST", "/locate", body=body, family="paths", read=True, convert=locate_result_from_json)


class RemoteTransaction(OpMethods):
    """Ops collected in order and sent as one transaction file when the ``with`` block ends
    (or at :meth:`commit`); the methods of :class:`hgm_engine.Transaction`. Each op's shape
    is checked as it is added (the same errors, at the same place, as a local transaction);
    what it does to the memory is checked by the server at commit. Ids of ``add_node`` and
    ``replace_branch`` without one are made here, so they are known before the commit.

    >>> from hgm_engine.client import connect
    >>> tx = connect("http://127.0.0.1:1").transaction(author="me")
    >>> tx.add_node("goal", id="trip"), tx.ops
    ('trip', [{'op': 'add_node', 'type': 'goal', 'id': 'trip'}])
    >>> tx.update_node("trip", set={"x": float("nan")})
    Traceback (most recent call last):
      ...
    hgm_engine.errors.TransactionError: invalid-value at ops[1].set.x: NaN is not a JSON number: numbers must be finite
    """

    def __init__(self, memory: RemoteMemory, author: str | None, reason: str | None, base_t: int | None, dry_run: bool):
        self.memory = memory
        self.author = author
        self.reason = reason
        self.base_t = base_t
        self.dry_run = dry_run
        self.ops: list[dict[str, Any]] = []
        self.report: TransactionReport | None = None
        self._done = False
        self._prefix = uuid.uuid4().hex[:6] + "-"
        self._count = 0

    def __enter__(self) -> "RemoteTransaction":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self._done = True
            return
        if not self._done:
            self.commit()

    def _new_id(self, node_type: Any) -> str:
        self._count += 1
        return f"{node_type}-{self._prefix}{self._count}"

    def op(self, doc: Mapping[str, Any]) -> list[str]:
        """Add one op in transaction-file form; returns the ids it creates."""
        if self._done:
            raise RequestError([Problem("invalid-argument", "this transaction has already ended")])
        where = f"ops[{len(self.ops)}]"
        if len(self.ops) >= MAX_OPS:
            raise TransactionError([Problem("limit-exceeded", f"a transaction may hold at most {MAX_OPS} ops", where=where)])
        if not isinstance(doc, Mapping):
            raise TransactionError([Problem("invalid-transaction", "an op is a JSON object", where=where)])
        doc = dict(doc)
        created: list[str] = []
        if doc.get("op") == "add_node" and doc.get("id") is None and isinstance(doc.get("type"), str):
            doc["id"] = self._new_id(doc["type"])
        if doc.get("op") == "replace_branch" and isinstance(doc.get("with"), list):
            doc["with"] = [self._with_ids(item) for item in doc["with"]]
        parse_op(dict(doc), where)  # the shape, as a local transaction checks it
        for key, value in doc.items():  # and every value, by the rules the server applies
            problem = value_problem(value, f"{where}.{key}") if key != "op" else None
            if problem is not None:
                raise TransactionError([problem])
        if doc.get("op") == "add_node":
            created.append(doc["id"])
        elif doc.get("op") == "replace_branch":
            created.extend(item["id"] for item in doc["with"] if isinstance(item, Mapping) and "id" in item)
        self.ops.append(doc)
        return created

    def _with_ids(self, item: Any) -> Any:
        if not isinstance(item, Mapping):
            return item
        item = dict(item)
        if item.get("id") is None and isinstance(item.get("type"), str):
            item["id"] = self._new_id(item["type"])
        if isinstance(item.get("children"), list):
            item["children"] = [self._with_ids(child) for child in item["children"]]
        return item

    def query(self, expr: str, *, focus: str | None = None, params: Mapping[str, Any] | None = None) -> QueryResult:
        """Not over the wire: the server holds no uncommitted transaction to read."""
        raise RequestError([Problem(
            "invalid-argument",
            "a remote transaction cannot read its own uncommitted ops: query the memory before the block, "
            "or commit and query after (base_t keeps what you read from changing under you)",
        )])

    def commit(self) -> TransactionReport:
        """Send the ops as one transaction; raises TransactionRefused on violations."""
        if self._done:
            raise RequestError([Problem("invalid-argument", "this transaction has already ended")])
        self._done = True
        doc: dict[str, Any] = {"ops": list(self.ops), "dry_run": self.dry_run}
        for key in ("author", "reason", "base_t"):
            if getattr(self, key) is not None:
                doc[key] = getattr(self, key)
        report = self.memory.apply(doc)
        self.report = report
        if report.violations:
            raise TransactionRefused(report)
        return report

    def rollback(self) -> None:
        """Drop every op; nothing is sent."""
        self._done = True
