"""The operations the REST and MCP servers expose, in one place, as JSON in and JSON out.

:class:`MemoryService` wraps a :class:`~hgm_engine.Memory` with the limits a shared service
needs (query length, explicit repetition bounds, regular expressions that cannot backtrack
without bound, work and time per query) and returns the JSON documents of ``formats.md``.
Every refusal is an :class:`~hgm_engine.errors.HGMError` with a category; :func:`http_status`
maps a category to the HTTP status the REST server answers with and :func:`error_document`
builds the body (the ``{"error": ...}`` document, or a refused transaction's report).

>>> from hgm_engine import Memory
>>> service = MemoryService(Memory())
>>> service.transact({"author": "doc", "ops": [{"op": "add_node", "id": "g", "type": "goal"}]})["t"]
1
>>> service.query("root")["ids"], service.query("root")["t"]
(['g'], 1)
>>> try:
...     service.query("nodes.where(content =~ '(a+)+$')")
... except HGMError as err:
...     print(err.category, http_status(err.category))
limit-exceeded 400
"""

from __future__ import annotations

import contextvars
import os
import re
import threading
from collections import OrderedDict
from typing import Any, Iterator, Mapping

import attrs

from hgm_engine.errors import HGMError, Problem, QueryExecutionError, RewriteProposalError, ServiceError, TransactionRefused
from hgm_engine.llm import DEFAULT_ATTEMPTS, DEFAULT_TIMEOUT, guard_refusal, open_client, propose_rewrite, rewrite_with_llm
from hgm_engine.memory import Memory
from hgm_engine.model import parse_instant
from hgm_engine.query import Limits, parse
from hgm_engine.query import regex_hazard as query_regex_hazard
from hgm_engine.query import syntax as S
from hgm_engine.txn import TransactionReport

__all__ = [
    "ServerLimits",
    "MemoryService",
    "BudgetExceeded",
    "http_status",
    "error_document",
    "regex_hazard",
    "STATUS_BY_CATEGORY",
    "node_document",
    "LLMEndpoint",
    "PLANNER_GROUP",
    "add_llm_arguments",
    "llm_endpoint",
]


def _fail(category: str, message: str, where: str | None = None) -> ServiceError:
    return ServiceError([Problem(category, message, where=where)])


# Categories the engine (and this service) raise, and the HTTP status that fits each.
STATUS_BY_CATEGORY: dict[str, int] = {
    # the request is wrong as written
    "syntax": 400,
    "unknown-name": 400,
    "invalid-argument": 400,
    "misplaced": 400,
    "invalid-regex": 400,
    "missing-parameter": 400,
    "missing-focus": 400,
    "invalid-transaction": 400,
    "invalid-json": 400,
    "invalid-document": 400,
    "missing-node": 400,
    "rule-cycle": 400,
    "limit-exceeded": 400,
    "bad-path": 400,
    "bad-query": 400,
    "bad-steps": 400,
    "bad-rewrite": 400,
    "bad-outcome": 400,
    "bad-trajectory": 400,
    "bad-scenario": 400,
    "bad-data": 400,
    "empty-subtree": 400,
    # it names something that is not there
    "unknown-node": 404,
    "unknown-edge": 404,
    "unknown-snapshot": 404,
    "unknown-path": 404,
    "unknown-version": 404,
    "not-found": 404,
    "method-not-allowed": 405,
    # it collides with the current state
    "conflict": 409,
    "duplicate-id": 409,
    "duplicate-edge": 409,
    "duplicate-path": 409,
    "stale-version": 409,
    "already-invalidated": 409,
    # the rules refused it
    "constraint-violation": 422,
    "rule-loop": 422,
    "no-change": 422,
    "version-cap": 422,
    # a lineage that failed too often waits for a person; rewrites came too fast
    "needs-human": 423,
    "rewrite-cap": 429,
    # many memories (docs/memories.md)
    "unknown-memory": 404,
    "memory-exists": 409,
    "invalid-memory-name": 400,
    "schema-violation": 422,
    # transport-level refusals
    "unauthorized": 401,
    "forbidden": 403,
    "request-timeout": 408,
    "request-too-large": 413,
    "unsupported-media-type": 415,
    # the service cannot do it
    "not-implemented": 501,
    "missing-package": 501,
    # the model behind the LLM routes: no usable answer (a bad gateway), or none reached
    "invalid-model-answer": 502,
    "model-unavailable": 503,
    "overloaded": 503,
    "stopping": 503,
    "store": 503,
    "io": 503,
    "embedder": 503,
    "unknown-embedder": 400,
    "internal": 500,
    "bad-state": 500,
}


def http_status(category: str) -> int:
    """The HTTP status for an error category (400 for a deliberate refusal not listed).

    >>> http_status("unknown-node"), http_status("conflict"), http_status("constraint-violation")
    (404, 409, 422)
    """
    return STATUS_BY_CATEGORY.get(category, 400)


def error_document(err: HGMError) -> dict[str, Any]:
    """The body that reports ``err``: ``{"error": {...}}``; a refused transaction's report
    (``committed: false`` with every violation) carries the same ``error`` key.

    >>> error_document(_fail("unknown-node", "no node 'x'"))["error"]["category"]
    'unknown-node'
    """
    doc = err.to_json()
    if isinstance(err, TransactionRefused):
        report = err.report.to_json()
        report["error"] = doc["error"]
        return report
    report = getattr(err, "report", None)  # a refused ingest carries its report (PathError)
    if report is not None and hasattr(report, "to_json"):
        refused = report.to_json()
        refused["error"] = doc["error"]
        return refused
    attempts = getattr(err, "attempts", None)  # an LLM call that got no usable answer
    if attempts:
        doc["attempts"] = [attempt.to_json() for attempt in attempts]
    return doc


@attrs.frozen
class ServerLimits:
    """What one request may ask of a shared memory.

    ``max_body`` bytes per request body; ``max_query_length`` characters of query text;
    ``max_repeat`` the largest explicit bound in ``{m,n}`` (``{m,}`` stays allowed: it stops
    at the graph's depth and is charged like any step); ``max_regex_repeats`` unbounded
    quantifiers per regular expression; ``max_work`` nodes produced by one query's steps and
    ``timeout`` seconds per query (see :class:`~hgm_engine.query.executor.Limits`);
    ``max_ops`` operations per transaction; ``max_k`` matches per localization request;
    ``max_search_hits`` hits per search request;
    ``body_timeout`` seconds for a request's body to arrive once its headers have (None or 0:
    no limit); ``max_concurrency`` requests answered at once by one server process — counted
    from when a request's body is all there, so idle and slow connections do not count (None
    or 0: no limit).

    >>> ServerLimits().executor_limits().max_work
    2000000
    """

    max_body: int = 1 << 20
    max_query_length: int = 4096
    max_repeat: int = 100
    max_regex_repeats: int = 4
    max_work: int = 2_000_000
    timeout: float = 5.0
    max_ops: int = 10_000
    max_k: int = 100
    max_search_hits: int = 1_000
    inline_work: int = 50_000
    inline_timeout: float = 0.01
    body_timeout: float | None = 30.0
    max_concurrency: int | None = 64

    def executor_limits(self) -> Limits:
        return Limits(max_work=self.max_work, timeout=self.timeout)

    def inline_budget(self) -> Limits | None:
        """The budget of a query answered on the server's event loop (None: never inline)."""
        if self.inline_timeout <= 0 or self.inline_work <= 0:
            return None
        return Limits(max_work=self.inline_work, timeout=self.inline_timeout)


class BudgetExceeded(Exception):
    """A query run under a small budget needs more: run it again with the full limits."""


_budget: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("hgm_query_budget", default=None)


class _BudgetedLimits(Limits):
    """``memory.limits`` of a served memory: the budget of the current call when one is set
    (a context variable, so per thread and per task), the service's limits otherwise."""

    __slots__ = ("_full",)

    def __init__(self, full: Limits):  # noqa: D107 - max_work and timeout are shadowed below
        self._full = full
        for name in Limits.__slots__:  # any further limit the engine knows (regex_timeout)
            if name not in ("max_work", "timeout"):
                setattr(self, name, getattr(full, name))

    @property  # type: ignore[override]
    def max_work(self) -> int | None:
        return (_budget.get() or self._full).max_work

    @property  # type: ignore[override]
    def timeout(self) -> float | None:
        return (_budget.get() or self._full).timeout


# -- regular expressions that cannot run away ------------------------------------------------

# The engine checks every regular expression before compiling it (hgm_engine.query.regexcheck,
# in the regex dialect queries run on); the service applies the same check with its stricter
# ServerLimits.max_regex_repeats. ``regex_hazard`` stays importable from here.
regex_hazard = query_regex_hazard


def _walk(node: Any) -> Iterator[Any]:
    """Every attrs node of a syntax tree, without recursion (trees can be deep)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (list, tuple)):
            stack.extend(current)
        elif attrs.has(type(current)):
            yield current
            for field in attrs.fields(type(current)):
                if field.name not in ("span", "op_span", "name_span", "type_span", "text"):
                    stack.append(getattr(current, field.name))


_ASCII_INT = re.compile(r"-?[0-9]+")


def _t_or_name(value: Any, what: str) -> int | str | None:
    """A ``t`` (an integer, or ASCII digits: query strings arrive as text) or a snapshot name
    from a request; anything else is ``invalid-argument`` naming the parameter ``what``.

    >>> _t_or_name("12", "as_of"), _t_or_name("nightly", "as_of"), _t_or_name(None, "as_of")
    (12, 'nightly', None)
    >>> _t_or_name("²", "as_of")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.ServiceError: invalid-argument at as_of: as_of must be a t (ASCII digits 0-9) or a snapshot name; '²' is neither
    """
    if value is None:
        return None
    if isinstance(value, str):
        if _ASCII_INT.fullmatch(value):
            if len(value.lstrip("-")) > 19:  # beyond any t (and beyond int()'s digit limit)
                raise _fail("invalid-argument", f"{what}: {value[:20]}... ({len(value)} characters) is not a t of this memory", what)
            return int(value)
        if not value or value.lstrip("-").isdigit() or not value.isprintable():
            # Other digits ('²', '٣') and empty or control-character strings are no t, and no
            # snapshot can be named so (a snapshot name is never all digits).
            shown = repr(value[:40]) + ("..." if len(value) > 40 else "")
            raise _fail("invalid-argument", f"{what} must be a t (ASCII digits 0-9) or a snapshot name; {shown} is neither", what)
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail("invalid-argument", f"{what} must be a t (an integer) or a snapshot name, not {type(value).__name__}", what)
    return value


def _text_problem(value: Any, where: str) -> str | None:
    """Where in a JSON value a string is no text (a lone surrogate such as ``\\ud800``, which
    JSON can escape but UTF-8, SQLite and PostgreSQL cannot store), else None. Walks without
    recursion; keys count as strings.

    >>> _text_problem({"ops": [{"id": "ok"}, {"id": "\\ud800"}]}, "")
    'ops[1].id'
    >>> _text_problem(["fine", {"k": 1}], "steps") is None
    True
    """
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        current, at = stack.pop()
        if isinstance(current, str):
            if not current.isascii():
                try:
                    current.encode("utf-8")
                except UnicodeEncodeError:
                    return at
        elif isinstance(current, Mapping):
            for key, item in current.items():
                if isinstance(key, str) and _text_problem(key, at) is not None:
                    return at
                stack.append((item, f"{at}.{key}" if at else str(key)))
        elif isinstance(current, (list, tuple)):
            stack.extend((item, f"{at}[{i}]") for i, item in enumerate(current))
    return None


def _check_text(category: str = "invalid-argument", **values: Any) -> None:
    """Refuse a request whose strings are no text (see :func:`_text_problem`), naming where.

    >>> _check_text(author="planner", reason=None)
    >>> _check_text(reason="\\udfff")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.ServiceError: invalid-argument at reason: reason: a lone surrogate (\\ud800-\\udfff) is not a character; send text as UTF-8 or JSON escapes of whole characters
    """
    for name, value in values.items():
        at = _text_problem(value, name)
        if at is not None:
            raise _fail(
                category,
                f"{at}: a lone surrogate (\\ud800-\\udfff) is not a character; send text as UTF-8 or JSON escapes of whole characters",
                at,
            )


def _require_text(what: str, value: Any) -> None:
    """Refuse ``value`` unless it is a string with a character that is not a space.

    >>> _require_text("name", "ok")
    >>> _require_text("name", " ")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.ServiceError: invalid-argument at name: 'name' must be a non-empty string
    """
    if not isinstance(value, str) or not value.strip():
        raise _fail("invalid-argument", f"{what!r} must be a non-empty string", what)


def _shown_int(value: int) -> str:
    """An integer for a message: in full when short (``str`` refuses over 4,300 digits)."""
    return str(value) if -(10**19) < value < 10**19 else ("-" if value < 0 else "") + "a number of more than 19 digits"


# -- the model behind the LLM routes ----------------------------------------------------------

# The entry point group through which the LLM planner's step is found: an entry point of this
# group resolves to an object with ``step(memory, request, *, client, model, timeout) -> dict``
# (hgm's own distribution declares ``llm = "planners.remote"``; hgm_engine never imports it).
PLANNER_GROUP = "hgm.planners"


@attrs.frozen
class LLMEndpoint:
    """Where the LLM routes (rewrite, planner step) send their requests: an OpenAI-compatible
    chat endpoint. ``base_url`` (``hgm serve --llm-base-url``) and ``api_key``; when neither is
    given, the environment the CLI reads (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``) at each
    request. ``model``: the default model (``$HGM_LLM_MODEL`` when None). ``timeout`` seconds
    per answer; ``max_attempts`` the most requests one call may make (a request may ask for
    fewer). ``client``: a ready client (tests pass a ``ScriptedClient``).

    >>> LLMEndpoint().attempts(None), LLMEndpoint(max_attempts=2).attempts(5)
    (3, 2)
    """

    base_url: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    model: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_attempts: int = DEFAULT_ATTEMPTS
    client_: Any = attrs.field(default=None, alias="client", repr=False)

    def attempts(self, asked: int | None) -> int:
        """The requests one call may make: what was ``asked`` (1 to 10), at most ``max_attempts``."""
        if asked is None:
            return self.max_attempts
        if isinstance(asked, bool) or not isinstance(asked, int) or not 1 <= asked <= 10:
            raise _fail("invalid-argument", "'attempts' must be an integer from 1 to 10", "attempts")
        return min(asked, self.max_attempts)

    def client(self) -> Any:
        """The chat client: the one given, else one for ``base_url``, else the environment's
        (:func:`hgm_engine.llm.open_client`, as ``hgm rewrite`` makes it)."""
        if self.client_ is not None:
            return self.client_
        if self.base_url is None and self.api_key is None:
            return open_client(self.timeout)
        try:
            import openai  # optional dependency (the llm extra)
        except ImportError as exc:
            raise RewriteProposalError.single(
                "model-unavailable", f"the openai package is not installed (the llm extra): {exc}"
            ) from None
        api_key = self.api_key or os.environ.get("OPENAI_API_KEY") or "unused"
        # As open_client makes it: the attempts (and their waits) are the engine's loop's.
        return openai.OpenAI(base_url=self.base_url, api_key=api_key, timeout=self.timeout, max_retries=0)


def add_llm_arguments(parser: Any) -> Any:
    """The options of the model behind the LLM routes (``hgm serve`` and ``hgm mcp``).

    >>> import argparse
    >>> args = add_llm_arguments(argparse.ArgumentParser()).parse_args(["--llm-base-url", "http://127.0.0.1:8000/v1"])
    >>> llm_endpoint(args).base_url, llm_endpoint(args).max_attempts
    ('http://127.0.0.1:8000/v1', 3)
    """
    defaults = LLMEndpoint()
    parser.add_argument(
        "--llm-base-url",
        metavar="URL",
        help="the OpenAI-compatible endpoint of the LLM routes (default: $OPENAI_BASE_URL; the key: $OPENAI_API_KEY)",
    )
    parser.add_argument("--llm-model", metavar="M", help="their default model (default: $HGM_LLM_MODEL or gpt-4o-mini)")
    parser.add_argument(
        "--llm-timeout", type=float, default=defaults.timeout, metavar="SECONDS", help=f"seconds per answer (default {defaults.timeout:g})"
    )
    parser.add_argument(
        "--llm-attempts", type=int, default=defaults.max_attempts, metavar="N",
        help=f"requests one call may make at most, retries included (default {defaults.max_attempts})",
    )
    return parser


def llm_endpoint(args: Any) -> LLMEndpoint:
    """The :class:`~hgm_engine.server.service.LLMEndpoint` the options name."""
    return LLMEndpoint(base_url=args.llm_base_url or None, model=args.llm_model or None, timeout=args.llm_timeout, max_attempts=args.llm_attempts)


def _planner_entry() -> Any:
    """The LLM planner's step, from the first entry point of :data:`PLANNER_GROUP`."""
    from importlib.metadata import entry_points

    found = list(entry_points(group=PLANNER_GROUP))
    if not found:
        raise _fail(
            "missing-package",
            f"the LLM planner is offered by a package through the entry point group {PLANNER_GROUP!r}; "
            "none is installed (it ships with hgm: reinstall it)",
        )
    try:
        return found[0].load()
    except ImportError as exc:
        raise _fail("missing-package", f"cannot load the LLM planner ({found[0].value}): {exc}") from None


# -- the service -----------------------------------------------------------------------------


class MemoryService:
    """JSON-in, JSON-out operations on one memory, with the limits of :class:`ServerLimits`.

    The memory is shared by every request: queries run concurrently under its read lock and
    commits are serialized by its write lock. Setting up the service sets ``memory.limits``.

    >>> from hgm_engine import Memory
    >>> s = MemoryService(Memory())
    >>> s.health()["status"]
    'ok'
    """

    def __init__(self, memory: Memory, limits: ServerLimits | None = None, *, llm: LLMEndpoint | None = None):
        self.memory = memory
        self.limits = limits or ServerLimits()
        self.llm = llm or LLMEndpoint()
        memory.limits = _BudgetedLimits(self.limits.executor_limits())
        # Query texts compiled and checked before: text -> (compiled, names of regex parameters).
        # A budgeted run only takes these (it never compiles); entries are not reordered on use.
        self._known: OrderedDict[str, tuple[Any, tuple[str, ...]]] = OrderedDict()
        self._known_lock = threading.Lock()
        self._known_chars = 0
        # Texts whose budgeted run went over: skip the budget for their next runs.
        self._heavy: dict[str, int] = {}

    # -- reading ---------------------------------------------------------------------------

    def resolve(self, value: Any, what: str = "as_of") -> int | None:
        """The ``t`` that a request's ``value`` names (None: none given): a ``t`` of the
        history (an integer, or ASCII digits) or a snapshot name. Anything else is a 400
        ``invalid-argument`` (an unknown snapshot a 404 ``unknown-snapshot``) whose ``where``
        is the parameter ``what``.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> s.resolve("1"), s.resolve(0, "from"), s.resolve(None)
        (1, 0, None)
        >>> s.resolve("9" * 5000, "since")
        Traceback (most recent call last):
        ...
        hgm_engine.errors.ServiceError: invalid-argument at since: since: 99999999999999999999... (5000 characters) is not a t of this memory
        """
        named = _t_or_name(value, what)
        if named is None:
            return None
        if isinstance(named, str):
            snapshots = self.memory.snapshots()
            if named not in snapshots and parse_instant(named) is not None:
                return self.memory.resolve_t(named)  # an ISO 8601 time: the last commit at or before it
            if named not in snapshots:
                known = ", ".join(sorted(snapshots)[:20]) or "none"
                shown = repr(named[:80]) + ("..." if len(named) > 80 else "")
                raise _fail("unknown-snapshot", f"{what}: no snapshot named {shown} (known: {known})", what)
            return snapshots[named]
        if not 0 <= named <= self.memory.t:
            raise _fail("invalid-argument", f"{what}: t={_shown_int(named)} is outside the history (0..{self.memory.t})", what)
        return named

    def fresh(self) -> int:
        """Apply what other processes committed to the store (other server workers, the CLI)
        before a read, so a client sees every commit that was acknowledged before it asked;
        returns ``t``. One cheap check when there is nothing new.

        >>> from hgm_engine import Memory
        >>> MemoryService(Memory()).fresh()
        0
        """
        if self.memory.behind_store():
            return self.memory.refresh()
        return self.memory.t

    def health(self) -> dict[str, Any]:
        """``{"status": "ok", "t": T, "nodes": N, "pid": P}`` (``pid``: the server process
        that answered, one of several with ``hgm serve --workers``)."""
        self.fresh()
        return {"status": "ok", "t": self.memory.t, "nodes": len(self.memory), "pid": os.getpid()}

    def check_query(self, expr: str, params: Mapping[str, Any] | None = None):
        """Compile ``expr`` (cached) after the service's limits; returns the compiled query.

        >>> from hgm_engine import Memory
        >>> MemoryService(Memory()).check_query("root.children{1,3}").params
        ()
        """
        limits = self.limits
        known = self._known.get(expr)
        if known is not None:  # checked before: only the parameter values are new
            compiled, regex_params = known
            for name in regex_params:
                value = (params or {}).get(name)
                if isinstance(value, str):
                    self._check_regex(value, f"${name}")
            return compiled
        if not isinstance(expr, str) or not expr.strip():
            raise _fail("invalid-argument", "a query is a non-empty string")
        if len(expr) > limits.max_query_length:
            raise _fail(
                "limit-exceeded", f"the query is {len(expr)} characters long; this server takes at most {limits.max_query_length}"
            )
        # The service's own limits are checked on the syntax tree before the query is compiled:
        # what this service refuses never enters the memory's compiled-query cache.
        for node in _walk(parse(expr, self.memory.limits)):
            if isinstance(node, S.RepeatStep):
                bound = max(node.lower, node.upper or 0)
                if bound > limits.max_repeat:
                    raise _fail(
                        "limit-exceeded",
                        f"repetition bound {bound} is over this server's limit of {limits.max_repeat} "
                        "(use {m,} to follow a relation as deep as it goes)",
                    )
            elif isinstance(node, S.Compare) and node.op == "=~":
                if isinstance(node.right, S.Literal) and isinstance(node.right.value, str):
                    self._check_regex(node.right.value)
        try:
            compiled = self.memory.compile(expr)
        except RecursionError:
            raise _fail("limit-exceeded", "the query is nested too deeply") from None
        except SyntaxError as exc:  # Python's own nesting limit, met by the generated code
            if "nested" not in str(exc):
                raise
            raise _fail("limit-exceeded", "the query is nested too deeply") from None
        roles = compiled.analysis.param_roles
        regex_params = tuple(name for name, role in roles.items() if "regex" in role)
        for name in regex_params:
            value = (params or {}).get(name)
            if isinstance(value, str):
                self._check_regex(value, f"${name}")
        with self._known_lock:  # 256 texts, 64k characters together (what they keep grows with their text)
            if expr not in self._known:
                self._known_chars += len(expr)
            self._known[expr] = (compiled, regex_params)
            while len(self._known) > 256 or self._known_chars > 65_536:
                dropped, _ = self._known.popitem(last=False)
                self._known_chars -= len(dropped)
        return compiled

    def _check_regex(self, pattern: str, what: str = "regular expression") -> None:
        hazard = regex_hazard(pattern, self.limits.max_regex_repeats)
        if hazard is not None:
            raise _fail("limit-exceeded", f"{what} {pattern[:80]!r} is refused: {hazard} can backtrack without bound")

    def query(
        self,
        expr: str,
        focus: str | None = None,
        params: Mapping[str, Any] | None = None,
        as_of: int | str | None = None,
        *,
        nodes: bool = True,
        budget: Limits | None = None,
    ) -> dict[str, Any]:
        """The query document of spec §6 plus ``t``, the state it read (``as_of`` or the
        ``t`` current when it started, so it is safe to use as ``base_t``). ``nodes=False``
        leaves out the node payloads (ids only).

        With a ``budget`` the query runs only if it is cheap for sure: its text was compiled
        before, it reads the current state, and it stays within the budget; otherwise
        :class:`BudgetExceeded` is raised and nothing was returned.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> s.query("nodes.count()", budget=Limits(max_work=10, timeout=0.01))
        Traceback (most recent call last):
        ...
        hgm_engine.server.service.BudgetExceeded: not compiled yet
        >>> s.query("nodes.count()")["value"], s.query("nodes.count()", budget=Limits(10, 0.01))["value"]
        (0, 0)
        """
        doc, payloads = self.query_payloads(expr, focus, params, as_of, nodes=nodes, budget=budget)
        if payloads is not None:
            doc["nodes"] = [node_document(node) for node in payloads]
        return doc

    def query_payloads(
        self,
        expr: str,
        focus: str | None = None,
        params: Mapping[str, Any] | None = None,
        as_of: int | str | None = None,
        *,
        nodes: bool = True,
        budget: Limits | None = None,
    ) -> tuple[dict[str, Any], tuple | None]:
        """:meth:`query` without building the ``nodes`` list: the document and, for a node
        result with ``nodes``, the result's frozen node payloads in order (else None). For a
        server that serializes payloads itself (the REST server caches each node's JSON).

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> doc, payloads = s.query_payloads("root")
        >>> doc, [node.id for node in payloads]
        ({'kind': 'nodes', 'ids': ['g'], 't': 1}, ['g'])
        """
        as_of = _t_or_name(as_of, "as_of")
        if budget is not None:
            if as_of is not None:
                raise BudgetExceeded("reads an earlier state")
            if expr not in self._known:
                raise BudgetExceeded("not compiled yet")
            if self._heavy.get(expr, 0) > 0:
                self._heavy[expr] -= 1  # try the budget again now and then: the data changes
                raise BudgetExceeded("went over the budget before")
            if self.memory.behind_store() and self.memory.refresh(wait=False) is None:
                raise BudgetExceeded("other processes committed since, and catching up would wait")
        else:
            self.fresh()
        self.check_query(expr, params)
        t = self.memory.t if as_of is None else self.resolve(as_of, "as_of")
        token = _budget.set(budget) if budget is not None else None
        payloads = None
        try:
            result = self._run(expr, focus, params, None if as_of is None else t)
            doc: dict[str, Any]
            if result.kind == "nodes":
                doc = {"kind": "nodes", "ids": list(result.value)}
                if nodes:
                    payloads = result.payloads()
            else:
                doc = result.to_json()
        except QueryExecutionError as err:
            if budget is not None and err.category == "limit-exceeded":
                if len(self._heavy) >= 256:
                    self._heavy.clear()
                self._heavy[expr] = 50
                raise BudgetExceeded(err.message) from None
            raise
        finally:
            if token is not None:
                _budget.reset(token)
        doc["t"] = t
        return doc, payloads

    def _run(self, expr, focus, params, as_of):
        try:
            return self.memory.query(expr, focus=focus, params=params, as_of=as_of)
        except RecursionError:
            raise _fail("limit-exceeded", "the query is nested too deeply") from None

    def explain(self, expr: str, *, physical: bool = False) -> dict[str, Any]:
        """The optimized plan as text, with the query's parameters and result kind;
        ``physical`` adds how each step runs (``hgm explain --physical``)."""
        compiled = self.check_query(expr)
        return {
            "query": expr,
            "kind": compiled.kind,
            "params": list(compiled.params),
            "uses_focus": compiled.uses_focus,
            "plan": compiled.explain(physical=bool(physical)),
        }

    def node(self, node_id: str, as_of: int | str | None = None) -> dict[str, Any]:
        self.fresh()
        node = self.memory.node(node_id, as_of=self.resolve(as_of, "as_of"))
        if node is None:
            raise _fail("unknown-node", f"no node {node_id!r}", node_id)
        return node

    def history(self, node_id: str) -> dict[str, Any]:
        """Every commit that touched ``node_id``; unknown-node if it never existed."""
        self.fresh()
        entries = self.memory.history(node_id)
        if not entries and self.memory.node(node_id) is None:
            raise _fail("unknown-node", f"no node {node_id!r} now or in the history", node_id)
        return {"node": node_id, "t": self.memory.t, "history": entries}

    def diff(self, t1: int | str, t2: int | str | None = None) -> dict[str, Any]:
        """What changed from state ``t1`` to ``t2`` (the current state by default)."""
        self.fresh()
        if t1 is None:
            raise _fail("missing-parameter", "diff needs 'from' (a t or a snapshot name)", "from")
        low = self.resolve(t1, "from")
        high = self.memory.t if t2 is None else self.resolve(t2, "to")
        return {"from": low, "to": high, "changes": self.memory.diff(low, high)}

    def changes_since(self, t: int | str) -> dict[str, Any]:
        self.fresh()
        if t is None:
            raise _fail("missing-parameter", "changes needs 'since' (a t or a snapshot name)", "since")
        return self.memory.changes_since(self.resolve(t, "since"))

    def stale(self, as_of: int | str | None = None) -> dict[str, Any]:
        """Nodes marked needs_review or blocked, with every mark's rule, cause and t."""
        self.fresh()
        as_of = self.resolve(as_of, "as_of")
        t = self.memory.t if as_of is None else as_of
        return {"t": t, "stale": self.memory.stale(as_of=as_of)}

    def frontier(self, goal: str, as_of: int | str | None = None) -> dict[str, Any]:
        """Pending actions under ``goal`` that can run now."""
        self.fresh()
        as_of = self.resolve(as_of, "as_of")
        t = self.memory.t if as_of is None else as_of
        if self.memory.node(goal, as_of=as_of) is None:
            raise _fail("unknown-node", f"no node {goal!r}", goal)
        return {"goal": goal, "t": t, "frontier": self.memory.frontier(goal, as_of=as_of)}

    def facts(self, entity: str, at: str | None = None, as_of: int | str | None = None) -> dict[str, Any]:
        """What holds about ``entity`` at the valid time ``at`` (ISO 8601; None: now), as
        memory knew it ``as_of``; docs/time.md.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "e", "type": "entity"}]})
        >>> s.facts("e", "2026-03-01")["holding"]
        []
        """
        self.fresh()
        as_of = self.resolve(as_of, "as_of")
        if at is not None and not isinstance(at, str):
            raise _fail("invalid-argument", f"at must be an ISO 8601 date or date-time, not {type(at).__name__}", "at")
        doc = self.memory.facts(entity, at=at, as_of=as_of)
        return dict(doc, t=self.memory.t if as_of is None else as_of)

    def focus_path(self, node_id: str, as_of: int | str | None = None) -> dict[str, Any]:
        self.fresh()
        path = self.memory.focus_path(node_id, as_of=self.resolve(as_of, "as_of"))
        if not path:
            raise _fail("unknown-node", f"no node {node_id!r}", node_id)
        return {"node": node_id, "path": path}

    def export(self, as_of: int | str | None = None) -> dict[str, Any]:
        self.fresh()
        return self.memory.export(as_of=self.resolve(as_of, "as_of"))

    def snapshots(self) -> dict[str, Any]:
        self.fresh()
        return {"snapshots": self.memory.snapshots()}

    # -- changing --------------------------------------------------------------------------

    def transact(self, doc: Mapping[str, Any], dry_run: bool = False) -> dict[str, Any]:
        """Apply a transaction file; the report when committed (or a clean dry run).
        Refused by constraints: :class:`TransactionRefused` carrying the report."""
        if not isinstance(doc, Mapping):
            raise _fail("invalid-transaction", "a transaction is a JSON object with 'ops'", "document")
        ops = doc.get("ops")
        if isinstance(ops, list) and len(ops) > self.limits.max_ops:
            raise _fail("limit-exceeded", f"{len(ops)} ops; this server takes at most {self.limits.max_ops} per transaction")
        if isinstance(ops, list):
            for i, op in enumerate(ops):
                if isinstance(op, Mapping) and "op" in op and not isinstance(op["op"], str):
                    raise _fail("invalid-transaction", f"'op' must be the name of an op (add_node, update_node, ...), not {type(op['op']).__name__}", f"ops[{i}]")
        at = _text_problem(dict(doc), "")
        if at is not None:
            _check_text("invalid-transaction", **{at: "\udfff"})
        report = self.memory.apply(dict(doc), dry_run=dry_run)
        return self._report(report)

    def _report(self, report: TransactionReport) -> dict[str, Any]:
        if report.violations:
            raise TransactionRefused(report)
        return report.to_json()

    def add_node(
        self,
        node_type: str,
        attributes: Mapping[str, Any],
        *,
        node_id: str | None = None,
        parent: str | None = None,
        author: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """One ``add_node`` as its own transaction; ``{"id", "node", "t", "report"}``."""
        _check_text(type=node_type, id=node_id, parent=parent, author=author, reason=reason)
        op: dict[str, Any] = dict(attributes)
        op.update({"op": "add_node", "type": node_type})
        if node_id is not None:
            op["id"] = node_id
        if parent is not None:
            op["parent"] = parent
        report = self.memory.apply({"author": author, "reason": reason or "add node", "ops": [op]})
        doc = self._report(report)
        created = report.created[0]
        return {"id": created, "t": report.t, "node": self.memory.node(created, as_of=report.t), "report": doc}

    def confirm(self, node_id: str, author: str | None = None, reason: str | None = None) -> dict[str, Any]:
        _check_text(id=node_id, author=author, reason=reason)
        return self._report(self.memory.confirm(node_id, author=author, reason=reason))

    def summarize(
        self, node_id: str, author: str | None = None, reason: str | None = None, max_items: int | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Make or refresh the extractive summary of ``node_id``'s subtree (docs/time.md):
        ``{"id", "t", "summary", "report"}``.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "g", "type": "goal"},
        ...     {"op": "add_node", "id": "a", "type": "action", "parent": "g", "content": "Ask"}]})
        >>> s.summarize("g")["summary"]["covers"]
        1
        """
        _check_text(id=node_id, author=author, reason=reason)
        if not isinstance(node_id, str) or not node_id:
            raise _fail("invalid-argument", "'id' must be a non-empty string", "id")
        if not isinstance(dry_run, bool):
            raise _fail("invalid-argument", "'dry_run' must be true or false", "dry_run")
        options: dict[str, Any] = {"author": author, "reason": reason, "dry_run": dry_run}
        if max_items is not None:
            options["max_items"] = max_items
        report = self.memory.summarize(node_id, **options)
        doc = self._report(report)
        summary_node = self.memory.summary_of(node_id) if report.committed else None
        return {"id": None if summary_node is None else summary_node["id"], "t": report.t, "summary": summary_node, "report": doc}

    def revert(self, t: int, author: str | None = None, reason: str | None = None) -> dict[str, Any]:
        if isinstance(t, bool) or not isinstance(t, int):
            raise _fail("invalid-argument", "'t' must be an integer", "t")
        _check_text(author=author, reason=reason)
        return self._report(self.memory.revert(t, author=author, reason=reason))

    def snapshot(self, name: str, t: int | str | None = None) -> dict[str, Any]:
        _check_text(name=name)
        return {"name": name, "t": self.memory.snapshot(name, self.resolve(t, "t"))}

    def add_memory_node(
        self,
        content: str,
        node_type: str = "fact",
        *,
        level: str | None = None,
        session_id: str | None = None,
        parent: str | None = None,
        node_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        author: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """The origin documents' memory node: free text stored as one ``add_node``.
        ``content``, ``level``, ``session_id`` and the keys of ``metadata`` become attributes;
        ``metadata`` cannot set what the op itself says (``id``, ``type``, ``parent``,
        ``order``, ``op``). Returns what :meth:`add_node` returns.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> s.add_memory_node("The user prefers trains", node_id="pref", level="global", metadata={"source": "chat"})["node"]
        {'id': 'pref', 'type': 'fact', 'source': 'chat', 'content': 'The user prefers trains', 'level': 'global'}
        >>> s.add_memory_node("x", metadata={"type": "goal"})
        Traceback (most recent call last):
        ...
        hgm_engine.errors.ServiceError: invalid-argument: metadata cannot set 'type'
        """
        _check_text(content=content, level=level, session_id=session_id, metadata=metadata)
        attributes: dict[str, Any] = dict(metadata or {})
        for key in ("id", "type", "parent", "order", "op"):
            if key in attributes:
                raise _fail("invalid-argument", f"metadata cannot set {key!r}")
        attributes["content"] = content
        if level is not None:
            attributes["level"] = level
        if session_id is not None:
            attributes["session_id"] = session_id
        return self.add_node(node_type, attributes, node_id=node_id, parent=parent, author=author, reason=reason)

    # -- path localization (hgm_engine.paths.localize) ---------------------------------------

    def locate(
        self,
        text: str,
        tags: list[str] | None = None,
        k: int = 5,
        *,
        scenario: str | None = None,
        cross_scenario: bool = False,
        steps: list[str] | None = None,
        hops: int | None = None,
        coarse: bool = False,
        scenarios: int | None = None,
        fuse: bool = False,
    ) -> dict[str, Any]:
        """Stored decision paths that fit ``text``: the localization result of formats.md.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> _ = s.memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
        >>> [match["path"] for match in s.locate("refund my order")["matches"]]
        ['r1']
        """
        if not isinstance(text, str) or not text.strip():
            raise _fail("invalid-argument", "'text' must be a non-empty string")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= self.limits.max_k:
            raise _fail("invalid-argument", f"'k' must be an integer from 1 to {self.limits.max_k}")
        if not isinstance(coarse, bool):
            raise _fail("invalid-argument", "'coarse' must be true or false", "coarse")
        if scenarios is not None and (isinstance(scenarios, bool) or not isinstance(scenarios, int) or not 1 <= scenarios <= 1000):
            raise _fail("invalid-argument", "'scenarios' must be an integer from 1 to 1000", "scenarios")
        if not isinstance(fuse, bool) or (fuse and not coarse):
            raise _fail("invalid-argument", "'fuse' must be true or false, and true only with 'coarse'", "fuse")
        _check_text(text=text, tags=tags, scenario=scenario, steps=steps)
        self.fresh()
        options: dict[str, Any] = {"scenario": scenario, "cross_scenario": cross_scenario, "steps": steps, "hops": hops}
        if coarse:  # summaries first, then the paths of the scenarios they choose (docs/time.md)
            options.update(coarse=True, scenarios=scenarios, fuse=fuse)
        return self.memory.locate(text, tags=tags, k=k, **options).to_json()

    def rewrite_path(
        self, path_id: str, steps: list[Any], reason: str | None = None, author: str | None = None
    ) -> dict[str, Any]:
        """A new version of a stored path (full steps or edit ops); the transaction report,
        with ``path``: the new version's id."""
        if not isinstance(path_id, str) or not path_id:
            raise _fail("invalid-argument", "'path_id' must be a non-empty string")
        if not isinstance(steps, list) or not steps:
            raise _fail("invalid-argument", "'steps' must be a non-empty list")
        _check_text(path_id=path_id, steps=steps, reason=reason, author=author)
        return self._created(self.memory.rewrite_path(path_id, steps, reason or "rewrite", author=author))

    def rewrite_path_from_feedback(
        self, path_id: str, feedback: str, steps: list[Any], session_context: str | None = None
    ) -> dict[str, Any]:
        """The origin documents' path rewrite: :meth:`rewrite_path` with the user's
        ``feedback`` as the recorded reason, followed by the ``session_context`` when given.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> _ = s.memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
        >>> s.rewrite_path_from_feedback("r1", "ask first", [{"keep": 0}, {"add": "ask_user", "after": 0}, {"keep": 1}], "chat 7")["reason"].splitlines()
        ['ask first', 'context: chat 7']
        """
        _check_text(feedback=feedback, session_context=session_context)
        reason = feedback if session_context is None else f"{feedback}\ncontext: {session_context}"
        return self.rewrite_path(path_id, steps, reason)

    # -- search: the node index (hgm_engine.retrieval; docs/language.md §8) --------------------

    def search(
        self, text: Any, node_type: Any = None, limit: Any = 10, as_of: int | str | None = None,
        coarse: Any = False, summaries: Any = 3,
    ) -> dict[str, Any]:
        """The nodes whose text matches ``text``, most relevant first, with their scores and
        the words that matched: ``{"query", "t", "hits": [{"id", "type", "score", "matched",
        "node"}, ...]}``; at most ``limit`` (0 to ``max_search_hits``), of ``node_type`` only
        when given, ``as_of`` an earlier state; with ``coarse``, the summaries first (the best
        ``summaries`` of them, 1 to 1000) and ``coarse`` in the answer says what each step did.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "f", "type": "fact", "content": "The museum opens at nine"}]})
        >>> [(hit["id"], hit["matched"]) for hit in s.search("museums")["hits"]]
        [('f', ['museums'])]
        >>> s.search("the")
        Traceback (most recent call last):
        ...
        hgm_engine.errors.SearchError: invalid-argument: search needs a text with a word to search for; 'the' has none (every word in it is a stop word)
        """
        _check_text(text=text, type=node_type)
        if isinstance(text, str) and len(text) > self.limits.max_query_length:
            raise _fail(
                "limit-exceeded",
                f"'text' is {len(text):,} characters long; this server takes at most {self.limits.max_query_length:,}",
                "text",
            )
        if node_type is not None and not isinstance(node_type, str):
            raise _fail("invalid-argument", "'type' must be a node type name (a string)", "type")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= self.limits.max_search_hits:
            raise _fail("invalid-argument", f"'limit' must be an integer from 0 to {self.limits.max_search_hits}", "limit")
        if not isinstance(coarse, bool):
            raise _fail("invalid-argument", "'coarse' must be true or false", "coarse")
        if isinstance(summaries, bool) or not isinstance(summaries, int) or not 1 <= summaries <= 1000:
            raise _fail("invalid-argument", "'summaries' must be an integer from 1 to 1000", "summaries")
        as_of = _t_or_name(as_of, "as_of")
        self.fresh()
        t = self.memory.t if as_of is None else self.resolve(as_of, "as_of")
        options: dict[str, Any] = {"coarse": True, "summaries": summaries} if coarse else {}
        hits = self.memory.search(text, type=node_type, limit=limit, as_of=None if as_of is None else t, **options)
        answer: dict[str, Any] = {"query": text, "t": t, "hits": list(hits)}
        if coarse:  # summaries first, then the nodes they cover (docs/time.md)
            answer["coarse"] = hits.coarse
        return answer

    def search_status(self) -> dict[str, Any]:
        """What the node index holds (``Memory.search_status``)."""
        self.fresh()
        return self.memory.search_status()

    def configure_search(self, embedder: Any, base_url: Any = None, min_similarity: Any = None) -> dict[str, Any]:
        """Set the memory's embedder (a name, or None for words only): every node's text is
        embedded now, and nothing changes when the embedder fails (``embedder``, 503)."""
        if embedder is not None and not isinstance(embedder, str):
            raise _fail("invalid-argument", "'embedder' must be minilm, openai, openai:MODEL or null", "embedder")
        if base_url is not None and not isinstance(base_url, str):
            raise _fail("invalid-argument", "'base_url' must be a URL (a string)", "base_url")
        if min_similarity is not None and (isinstance(min_similarity, bool) or not isinstance(min_similarity, (int, float))):
            raise _fail("invalid-argument", "'min_similarity' must be a number from -1 to 1", "min_similarity")
        _check_text(embedder=embedder, base_url=base_url)
        self.fresh()
        return self.memory.configure_search(embedder=embedder, base_url=base_url, min_similarity=min_similarity)
    # -- every other capability of Memory (issue 16): rules, history, paths, loads -----------
    # Each method is one Memory method as JSON in, JSON out, with the same argument checks the
    # routes above make; REST (rest/app.py) and MCP (mcp/) call these and nothing else.

    def constraints(self) -> dict[str, Any]:
        """User constraints in force (``name``, ``text``) and the broken, inactive ones (with
        ``broken``: the error), as ``hgm constraints list --json`` prints them.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> _ = s.add_constraint("has_content", "each goal must has(content)")
        >>> s.constraints()["constraints"]
        [{'name': 'has_content', 'text': 'each goal must has(content)'}]
        """
        self.fresh()
        entries: list[dict[str, Any]] = [{"name": n, "text": t} for n, t in self.memory.constraints().items()]
        for broken in self.memory.broken():
            if broken.kind == "constraint":
                doc = broken.to_json()
                entries.append({"name": doc["name"], "text": doc["text"], "broken": doc["error"]})
        return {"t": self.memory.t, "constraints": entries}

    def add_constraint(self, name: str, text: str, *, check_existing: bool = True) -> dict[str, Any]:
        """Add (or replace) the user constraint ``name``: ``each TYPE [where COND] must COND``.
        It must hold now (``check_existing``), else :class:`TransactionRefused` with every
        violation; ``replaced`` is the text it replaced (None: it is new)."""
        _require_text("name", name)
        _require_text("text", text)
        _check_text(name=name, text=text)
        self.fresh()
        replaced = self.memory.constraints().get(name)
        self.memory.add_constraint(name, text, check_existing=check_existing)
        return {"added": True, "name": name, "text": text, "replaced": replaced}

    def remove_constraint(self, name: str) -> dict[str, Any]:
        """Remove the user constraint ``name`` (a broken one too); unknown-name if there is none."""
        _require_text("name", name)
        _check_text(name=name)
        self.fresh()
        text = self.memory.constraints().get(name)
        if text is None:
            text = next((b.text for b in self.memory.broken() if b.kind == "constraint" and b.name == name), None)
        self.memory.remove_constraint(name)
        return {"removed": True, "name": name, "text": text}

    def violations(self) -> dict[str, Any]:
        """Every constraint violation in the current state (normally none).

        >>> from hgm_engine import Memory
        >>> MemoryService(Memory()).violations()
        {'t': 0, 'violations': []}
        """
        self.fresh()
        return {"t": self.memory.t, "violations": [v.to_json() for v in self.memory.violations()]}

    def rules(self) -> dict[str, Any]:
        """Loaded rule sets (``name``, ``text``) and the broken ones, as ``hgm rules list --json``."""
        self.fresh()
        entries: list[dict[str, Any]] = [{"name": n, "text": t} for n, t in self.memory.rules().items()]
        for broken in self.memory.broken():
            if broken.kind != "constraint":
                doc = broken.to_json()
                entries.append({"name": doc["name"], "text": doc["text"], "broken": doc["error"]})
        return {"t": self.memory.t, "rule_sets": entries}

    def load_rules(self, text: str, name: str = "default") -> dict[str, Any]:
        """Load a rule file (constraints, triggers, propagation) under ``name``, replacing a
        set of that name; what it declares must hold now (else :class:`TransactionRefused`).

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> s.load_rules("propagate derived_from backward depth 2", "stale")["propagations"]
        ['propagate:derived_from']
        """
        _require_text("text", text)
        _require_text("name", name)
        _check_text(text=text, name=name)
        self.fresh()
        rule_set = self.memory.load_rules(text, name=name)
        return {
            "loaded": True,
            "name": name,
            "constraints": [c.name for c in rule_set.constraints],
            "triggers": [t.name for t in rule_set.triggers],
            "propagations": [p.name for p in rule_set.propagations],
        }

    def remove_rules(self, name: str) -> dict[str, Any]:
        """Unload the rule set ``name`` (its constraints go with it); unknown-name if none."""
        _require_text("name", name)
        _check_text(name=name)
        self.fresh()
        self.memory.remove_rules(name)
        return {"removed": name}

    def commits(self, since: int | str = 0, limit: int = 100) -> dict[str, Any]:
        """The commits after ``since`` (a t or a snapshot name), oldest first, at most
        ``limit`` (1 to 1000) of them: each commit's summary (t, author, reason, base_t, time,
        kind, how many changes, the rules that fired). ``more`` says whether later commits
        were left out (ask again from the last ``t``).

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "g", "type": "goal"}], "reason": "start"})
        >>> [(c["t"], c["reason"]) for c in s.commits()["commits"]]
        [(1, 'start')]
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise _fail("invalid-argument", "'limit' must be an integer from 1 to 1000", "limit")
        self.fresh()
        low = self.resolve(since, "since")
        low = 0 if low is None else low
        high = min(self.memory.t, low + limit)
        found = [c for c in self.memory.commits(low) if c.t <= high]
        return {"since": low, "t": self.memory.t, "commits": [c.summary() for c in found], "more": high < self.memory.t}

    def histories(self, node_ids: list[str]) -> dict[str, Any]:
        """:meth:`history` of several nodes (at most 1000) read in one pass over the journal."""
        if not isinstance(node_ids, list) or not node_ids or not all(isinstance(n, str) and n for n in node_ids):
            raise _fail("invalid-argument", "'nodes' must be a non-empty list of node ids", "nodes")
        if len(node_ids) > 1000:
            raise _fail("limit-exceeded", f"{len(node_ids)} nodes; at most 1000 per request", "nodes")
        _check_text(nodes=node_ids)
        self.fresh()
        return {"t": self.memory.t, "histories": self.memory.histories(node_ids)}

    def load(self, doc: Mapping[str, Any], author: str | None = None, reason: str | None = None) -> dict[str, Any]:
        """Load a graph document (formats.md, ``hgm-graph/1``) as one transaction: into an
        empty memory it is the genesis commit; otherwise its nodes and edges are added (every
        id must be new). All or nothing, every problem named.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> s.load({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []})["t"]
        1
        """
        if not isinstance(doc, Mapping):
            raise _fail("invalid-document", "a graph document is a JSON object with 'format', 'nodes' and 'edges'", "graph")
        _check_text("invalid-document", graph=dict(doc), author=author, reason=reason)
        nodes = doc.get("nodes")
        if isinstance(nodes, list) and len(nodes) > self.limits.max_ops:
            raise _fail("limit-exceeded", f"{len(nodes)} nodes; this server loads at most {self.limits.max_ops} per request", "graph.nodes")
        return self._report(self.memory.load(dict(doc), author=author, reason=reason))

    def schema(self) -> dict[str, Any]:
        """The memory's schema: node and edge types, relations, edge rules (``hgm schema``).

        >>> from hgm_engine import Memory
        >>> MemoryService(Memory()).schema()["node_types"]
        ['goal', 'action', 'entity', 'fact', 'result']
        """
        return self.memory.schema.to_json()

    def schema_document(self) -> dict[str, Any]:
        """The memory's stored schema as an ``hgm-schema/1`` document (docs/formats.md): what
        :meth:`set_schema` takes back.

        >>> from hgm_engine import Memory
        >>> MemoryService(Memory()).schema_document()["format"]
        'hgm-schema/1'
        """
        return self.memory.schema.to_document()

    def set_schema(self, doc: Any) -> dict[str, Any]:
        """Make the ``hgm-schema/1`` document ``doc`` the memory's schema (a transaction,
        refused with every problem when what the memory holds breaks it: ``schema-violation``,
        422; a document with errors is a ``SchemaError`` naming each place, 400); the stored
        document.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> s.set_schema({"format": "hgm-schema/1", "extends": "default", "node_types": ["tool"]})["node_types"][-1]
        'tool'
        """
        from hgm_engine.model import Schema

        if not isinstance(doc, Mapping):
            raise _fail("invalid-document", "a schema is an hgm-schema/1 JSON object (docs/formats.md)", "schema")
        _check_text("invalid-document", schema=dict(doc))
        self.memory.set_schema(Schema.from_document(dict(doc)))
        return self.schema_document()

    def purge(self, node_id: str, reason: str, *, subtree: bool = False, author: str | None = None) -> dict[str, Any]:
        """Forget ``node_id`` (and with ``subtree`` every node below it) from the state, the
        journal and every snapshot (docs/memories.md); the tombstone commit's summary, with
        ``purged``, the ids forgotten.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "s", "type": "fact", "content": "card 4111"}]})
        >>> doc = s.purge("s", "the user asked")
        >>> doc["kind"], doc["purged"], doc["t"]
        ('purge', ['s'], 2)
        """
        _check_text(id=node_id, reason=reason, author=author)
        if not isinstance(subtree, bool):
            raise _fail("invalid-argument", "'subtree' must be true or false", "subtree")
        tombstone = self.memory.purge(node_id, reason=reason, subtree=subtree, author=author)
        return tombstone.summary()

    # paths (docs/paths.md) ---------------------------------------------------------------

    def ingest(
        self,
        trajectories: list[Any],
        *,
        skip_invalid: bool = False,
        author: str | None = None,
        scenario: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Store trajectories (formats.md) as paths, all in one transaction: the ingest
        report. A refused ingest is a ``PathError`` whose document carries the report
        (``problems``: every trajectory that does not fit, and where); ``skip_invalid`` stores
        the good ones and lists the others.

        >>> from hgm_engine import Memory
        >>> s = MemoryService(Memory())
        >>> s.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])["ingested"]
        ['r1']
        """
        if not isinstance(trajectories, list) or not trajectories:
            raise _fail("invalid-argument", "'trajectories' must be a non-empty list of trajectories", "trajectories")
        if len(trajectories) > self.limits.max_ops:
            raise _fail("limit-exceeded", f"{len(trajectories)} trajectories; at most {self.limits.max_ops} per request", "trajectories")
        _check_text(trajectories=trajectories, author=author, scenario=scenario, reason=reason)
        report = self.memory.ingest(trajectories, skip_invalid=skip_invalid, author=author, scenario=scenario, reason=reason or "ingest")
        return report.to_json()

    def path(self, path_id: str) -> dict[str, Any]:
        """One stored path with its steps, versions, counters and guards' state."""
        _require_text("path_id", path_id)
        _check_text(path_id=path_id)
        self.fresh()
        return self.memory.path(path_id)

    def paths(self, all_versions: bool = False) -> dict[str, Any]:
        """A summary of every path: its current version per lineage, or every version.

        >>> from hgm_engine import Memory
        >>> MemoryService(Memory()).paths()
        {'t': 0, 'paths': []}
        """
        self.fresh()
        return {"t": self.memory.t, "paths": self.memory.paths(all_versions=bool(all_versions))}

    def path_metrics(self) -> dict[str, Any]:
        """Counters to watch (rewrites, versions per lineage, failure streaks, the guards, the
        path index)."""
        self.fresh()
        return self.memory.path_metrics()

    def record_outcome(
        self, path_id: str, outcome: str, *, reward: float | None = None, author: str | None = None
    ) -> dict[str, Any]:
        """Record a run of a path version: ``success`` or ``failure`` with an optional
        ``reward`` in [0, 1]; the transaction report."""
        _require_text("path_id", path_id)
        if outcome not in ("success", "failure"):
            raise _fail("bad-outcome", "'outcome' is 'success' or 'failure'", "outcome")
        _check_text(path_id=path_id, author=author)
        return self._report(self.memory.record_outcome(path_id, outcome, reward=reward, author=author))

    def rollback_path(
        self, path_id: str, version: int | str, *, author: str | None = None, reason: str | None = None
    ) -> dict[str, Any]:
        """Make an older version current again (a new version copying its steps); the report
        with ``path``, the new version's id."""
        _require_text("path_id", path_id)
        if isinstance(version, bool) or not isinstance(version, (int, str)) or version == "":
            raise _fail("invalid-argument", "'version' is a version number or a version's path id", "version")
        _check_text(path_id=path_id, version=version, author=author, reason=reason)
        report = self.memory.rollback_path(path_id, version, author=author, reason=reason)
        return self._created(report)

    def reset_path(self, path_id: str, *, author: str | None = None, reason: str | None = None) -> dict[str, Any]:
        """A human has looked: clear the lineage's ``needs_human`` and failure streak."""
        _require_text("path_id", path_id)
        _check_text(path_id=path_id, author=author, reason=reason)
        return self._report(self.memory.reset_path(path_id, author=author, reason=reason))

    def _created(self, report: TransactionReport) -> dict[str, Any]:
        doc = self._report(report)
        if report.created:
            doc["path"] = report.created[0]
        return doc

    # the model behind the LLM routes (hgm_engine.llm; the endpoint is the server's) ---------

    def llm_rewrite(
        self,
        path_id: str,
        feedback: str,
        *,
        model: str | None = None,
        attempts: int | None = None,
        author: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """``hgm rewrite`` as a service: the model configured on the server proposes a
        rewrite of ``path_id`` given ``feedback`` (:func:`hgm_engine.llm.propose_rewrite`: the
        engine's loop, each answer validated, an invalid one sent back, at most ``attempts``
        requests); a valid proposal is committed as a new version (the report, with
        ``proposal`` and ``path``), or only returned with ``dry_run``. No valid answer:
        :class:`~hgm_engine.errors.RewriteProposalError` (``invalid-model-answer``, 502, or
        ``model-unavailable``, 503) with every attempt, and nothing written. The storm guards
        refuse before the model is asked.

        >>> from hgm_engine import Memory
        >>> from hgm_engine.llm import ScriptedClient
        >>> answer = '{"kept": [0], "changed": [], "added": [], "removed": [1], "reason": "refund at once"}'
        >>> s = MemoryService(Memory(), llm=LLMEndpoint(client=ScriptedClient([answer]), model="m"))
        >>> _ = s.memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
        >>> done = s.llm_rewrite("r1", "the policy check is not needed")
        >>> done["committed"], done["path"], done["proposal"]["steps"]
        (True, 'r1@v2', [{'name': 'check_policy'}])
        """
        _require_text("path_id", path_id)
        _require_text("feedback", feedback)
        _check_text(path_id=path_id, feedback=feedback, model=model, author=author)
        llm = self.llm
        attempts = llm.attempts(attempts)
        self.fresh()
        path = self.memory.path(path_id)
        refusal = guard_refusal(self.memory, path)
        if refusal is not None:
            raise refusal
        proposal = propose_rewrite(
            path, feedback, client=llm.client(), model=model or llm.model, max_attempts=attempts, timeout=llm.timeout
        )
        if dry_run:
            return {"committed": False, "dry_run": True, "proposal": proposal.to_json()}
        report = rewrite_with_llm(self.memory, path_id, feedback, author=author, proposal=proposal)
        if report.violations:
            raise TransactionRefused(report)
        doc = report.to_json()
        if report.created:
            doc["path"] = report.created[0]
        doc["proposal"] = proposal.to_json()
        return doc

    def planner_step(self, request: Mapping[str, Any], *, commit: bool = False, author: str | None = None) -> dict[str, Any]:
        """One step of the LLM planner (package ``planners``, reached through the entry point
        group :data:`PLANNER_GROUP`: the engine never imports it): the model reads the memory
        with queries and answers with the ops of one transaction, at most one tool call and
        whether the task is done, each validated by the engine (queries compiled, ops dry-run).
        ``request`` holds ``task``, the ``observation`` (formats of ``planners.protocol``),
        ``focus``, ``last_t``, ``tools``; the answer holds the ``plan`` and what the next step
        needs (``focus``, ``last_t``). With ``commit`` the plan's ops are committed at once
        (``report``; ``base_t`` is the t the step read, so a change made meanwhile is a
        conflict); otherwise the caller commits them (``transact``) and runs the tool."""
        if not isinstance(request, Mapping):
            raise _fail("invalid-argument", "a planner step request is a JSON object", "request")
        _require_text("task", request.get("task"))
        _check_text(request=dict(request), author=author)
        planner = _planner_entry()
        llm = self.llm
        self.fresh()
        t = self.memory.t
        step = planner.step(self.memory, dict(request), client=llm.client(), model=request.get("model") or llm.model, timeout=llm.timeout)
        doc = dict(step)
        doc["t"] = t
        plan = doc.get("plan") or {}
        if commit and not plan.get("error") and plan.get("ops"):
            report = self.memory.apply(
                {"author": author or "llm-planner", "reason": plan.get("reason") or "planner step", "base_t": t, "ops": plan["ops"]}
            )
            doc["report"] = self._report(report)
        return doc


def node_document(node) -> dict[str, Any]:
    """A node as the query document carries it, without thawing its attributes: the frozen
    values (dict subclasses, tuples) serialize to the same JSON as ``node.to_json()``.

    >>> from hgm_engine.model.graph import Node, freeze
    >>> node_document(Node("g", "goal", freeze({"tags": ["a"]}), 1))
    {'id': 'g', 'type': 'goal', 'tags': ('a',)}
    """
    return {"id": node.id, "type": node.type, **node.attrs}

