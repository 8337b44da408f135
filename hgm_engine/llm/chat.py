"""One chat-and-validate loop: ask a model, check its answer, send the problems back, retry.

Every model call hgm makes (the path rewrite in :mod:`hgm_engine.llm.rewrite`, the LLM
planner in ``planners.llm``) goes through :func:`converse`: it sends the conversation to any
client with ``chat.completions.create`` (an ``openai.OpenAI``, or :class:`ScriptedClient`
offline), gives the answer's text to a ``check`` function, and when the check finds problems
adds the answer and a correction message to the conversation and asks again, a bounded number
of times. This loop is for repairing answers only: a request that gets no answer (a timeout,
a connection failure, HTTP 408/409/429/5xx) is retried by the client itself, with its
exponential backoff and the server's ``Retry-After`` (:func:`open_client` sets how many
times), and what is still failing after that ends the exchange. A request option the server
refuses (``response_format``, ``temperature``) is dropped and the request sent again, without
costing an attempt. Every request is recorded as an :class:`Attempt`; the loop returns an
:class:`Exchange` and never raises for what the model or the server did (the caller decides
what a failure means).

The pieces the checks share are here too: :func:`read_json` (an answer as one JSON value, a
surrounding code fence tolerated), :class:`AnswerSchema` (a JSON Schema with its validator
made on first use) and :func:`json_path`.

>>> def check(text):
...     doc, problems = read_json(text)
...     if not problems and not isinstance(doc, dict):
...         problems = ["answer with a JSON object"]
...     return (None if problems else doc), problems
>>> client = ScriptedClient(["[1, 2]", '```json\\n{"ok": true}\\n```'])
>>> exchange = converse(client, [{"role": "user", "content": "hi"}], check, model="m",
...                     max_attempts=3, correction=lambda problems: {"role": "user", "content": problems[0]})
>>> exchange.ok, exchange.value, [a.problems for a in exchange.attempts]
(True, {'ok': True}, [('answer with a JSON object',), ()])
>>> [m["content"] for m in client.requests[1]["messages"]]
['hi', '[1, 2]', 'answer with a JSON object']
"""

from __future__ import annotations

import json
import os
import re
import time
import types
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs

from hgm_engine.errors import RewriteProposalError
from hgm_engine.model import parse_json

__all__ = [
    "MODEL_ENV",
    "DEFAULT_MODEL",
    "DEFAULT_TIMEOUT",
    "DEFAULT_ATTEMPTS",
    "DEFAULT_RETRIES",
    "MAX_RETRIES",
    "ECHO_LIMIT",
    "model_name",
    "open_client",
    "converse",
    "Exchange",
    "Attempt",
    "ScriptedClient",
    "read_json",
    "strip_fence",
    "AnswerSchema",
    "json_path",
    "transport_failure",
    "refused_option",
    "check_retries",
    "retries_taken",
]

MODEL_ENV = "HGM_LLM_MODEL"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_TIMEOUT = 60.0
DEFAULT_ATTEMPTS = 3
# Retries of a request that got no answer, made by the openai client (its own default, 2):
# exponential backoff from 0.5 s (at most 8 s between tries), or what Retry-After asks for up
# to 2 minutes (a longer Retry-After is not waited for: the failure is reported at once).
DEFAULT_RETRIES = 2
MAX_RETRIES = 10
# An answer is echoed back to the model at most this long when asking for a correction.
ECHO_LIMIT = 6000


def model_name(model: str | None = None) -> str:
    """The model to ask: ``model``, else ``$HGM_LLM_MODEL``, else :data:`DEFAULT_MODEL`.

    >>> model_name("local-llama")
    'local-llama'
    """
    return model or os.environ.get(MODEL_ENV) or DEFAULT_MODEL


def open_client(timeout: float, retries: int = DEFAULT_RETRIES) -> Any:
    """An ``openai.OpenAI`` for the endpoint the environment names (``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY``), waiting ``timeout`` seconds for each answer and retrying a request
    that got none up to ``retries`` times (0 to :data:`MAX_RETRIES`) with the client's own
    backoff, which honours ``Retry-After``.

    With neither variable set nothing is guessed: :class:`~hgm_engine.errors.RewriteProposalError`
    ``model-unavailable``, as when the ``openai`` package is missing.

    >>> import os
    >>> saved = {k: os.environ.pop(k, None) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    >>> try:
    ...     open_client(5.0)
    ... except RewriteProposalError as err:
    ...     print(err.category)
    ... finally:
    ...     os.environ.update({k: v for k, v in saved.items() if v is not None})
    model-unavailable
    >>> open_client(5.0, retries=-1)
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RewriteProposalError: invalid-argument: retries must be an integer from 0 to 10, not -1
    """
    check_retries(retries)
    base_url = os.environ.get("OPENAI_BASE_URL")
    api_key = os.environ.get("OPENAI_API_KEY")
    if not base_url and not api_key:
        raise RewriteProposalError.single(
            "model-unavailable",
            "no model endpoint configured: set OPENAI_BASE_URL (an OpenAI-compatible server) "
            "and/or OPENAI_API_KEY",
        )
    try:
        import openai  # optional dependency (pip install 'hgm-engine[llm]')
    except ImportError as exc:
        raise RewriteProposalError.single(
            "model-unavailable", f"the openai package is not installed (pip install 'hgm-engine[llm]'): {exc}"
        ) from None
    # Local servers rarely need a key, but the client refuses to start without one.
    return openai.OpenAI(base_url=base_url or None, api_key=api_key or "unused", timeout=timeout, max_retries=retries)


def check_retries(retries: Any) -> int:
    """``retries`` if it is a retry count hgm accepts (an integer from 0 to :data:`MAX_RETRIES`),
    else :class:`~hgm_engine.errors.RewriteProposalError` ``invalid-argument``.

    >>> check_retries(3)
    3
    >>> check_retries(True)
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RewriteProposalError: invalid-argument: retries must be an integer from 0 to 10, not True
    """
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise RewriteProposalError.single(
            "invalid-argument", f"retries must be an integer from 0 to {MAX_RETRIES}, not {retries!r}"
        )
    return retries


# -- what a conversation records ----------------------------------------------------------------


@attrs.frozen
class Attempt:
    """One request to the model: its problems (none: the answer was used) and the raw answer.

    >>> Attempt(1, ("not valid JSON",), "{", 0.25, "invalid-model-answer").to_json()["ok"]
    False
    """

    number: int
    problems: tuple[str, ...] = ()
    answer: str | None = None
    seconds: float = 0.0
    category: str | None = None  # invalid-model-answer or model-unavailable when it failed

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt": self.number,
            "ok": self.ok,
            "category": self.category,
            "problems": list(self.problems),
            "answer": self.answer,
            "seconds": round(self.seconds, 3),
        }


@attrs.frozen
class Exchange:
    """What :func:`converse` got: the accepted answer's ``value`` (what the check returned),
    every :class:`Attempt`, the ``messages`` of the last request sent, and ``error``, the
    client's exception when the last attempt got no answer.

    >>> exchange = Exchange(None, (Attempt(1, ("timeout",), category="model-unavailable"),), ())
    >>> exchange.ok, exchange.category
    (False, 'model-unavailable')
    """

    value: Any
    attempts: tuple[Attempt, ...]
    messages: tuple[Mapping[str, str], ...]
    error: Exception | None = None

    @property
    def ok(self) -> bool:
        """Whether an answer passed the check (the last attempt)."""
        return bool(self.attempts) and self.attempts[-1].ok

    @property
    def answer(self) -> str | None:
        """The text of the last answer (None when the last attempt got none)."""
        return self.attempts[-1].answer if self.attempts else None

    @property
    def category(self) -> str | None:
        """None when it went well; else the last attempt's ``invalid-model-answer`` or
        ``model-unavailable``."""
        return None if self.ok or not self.attempts else self.attempts[-1].category


class ScriptedClient:
    """An offline stand-in for ``openai.OpenAI`` answering chat requests from a list (for
    examples, tests and dry runs). ``requests`` records the keyword arguments of every call.

    >>> client = ScriptedClient(["{}"])
    >>> client.chat.completions.create(model="m", messages=[]).choices[0].message.content
    '{}'
    >>> len(client.requests)
    1
    """

    def __init__(self, answers: Iterable[str | None]):
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []
        self.chat = self  # client.chat.completions.create(...)
        self.completions = self

    def create(self, **kwargs: Any) -> Any:
        self.requests.append(kwargs)
        if not self.answers:
            raise RuntimeError("ScriptedClient: no answer left")
        message = types.SimpleNamespace(content=self.answers.pop(0), role="assistant")
        choice = types.SimpleNamespace(message=message, finish_reason="stop", index=0)
        return types.SimpleNamespace(choices=[choice])


# -- the loop -----------------------------------------------------------------------------------


def converse(
    client: Any,
    messages: Sequence[Mapping[str, str]],
    check: Callable[[str | None], tuple[Any, Sequence[str]]],
    *,
    model: str,
    max_attempts: int,
    correction: Callable[[Sequence[str]], Mapping[str, str]],
    timeout: float | None = None,
    json_mode: bool = True,
    temperature: float | None = 0.0,
) -> Exchange:
    """Ask ``client`` until ``check`` accepts an answer, at most ``max_attempts`` requests.

    ``check(text)`` returns ``(value, problems)``; no problems means the answer is used and
    ``value`` is the exchange's. After an answer with problems the conversation grows by the
    answer (cut to :data:`ECHO_LIMIT` characters) and ``correction(problems)`` (a user
    message), and the model is asked again. A request that gets no answer (timeout,
    connection, HTTP error) is not sent again here: the client has already retried what can
    be retried (:func:`open_client`), so it is the last attempt, ``model-unavailable``, and its
    problem says how many retries the client made.

    Each request is ``model``, ``messages``, ``timeout`` (when not None; else the client's
    own) and the options: ``temperature`` unless None, and with ``json_mode``
    ``response_format={"type": "json_object"}``. A server that refuses an option (HTTP
    400/422 naming it, :func:`refused_option`) is asked again without it, which does not count
    as an attempt.

    >>> def accept(text):
    ...     return text, []
    >>> client = ScriptedClient(["hello"])
    >>> converse(client, [], accept, model="m", max_attempts=1, correction=dict).value
    'hello'
    >>> client.requests
    [{'model': 'm', 'messages': [], 'temperature': 0.0, 'response_format': {'type': 'json_object'}}]
    >>> failed = converse(ScriptedClient([]), [], accept, model="m", max_attempts=3, correction=dict)
    >>> failed.category, len(failed.attempts), failed.attempts[0].problems
    ('model-unavailable', 1, ('RuntimeError: ScriptedClient: no answer left',))
    """
    options: dict[str, Any] = {}
    if temperature is not None:
        options["temperature"] = temperature
    if json_mode:
        options["response_format"] = {"type": "json_object"}
    conversation = list(messages)
    attempts: list[Attempt] = []
    error: Exception | None = None
    while len(attempts) < max_attempts:
        number = len(attempts) + 1
        request: dict[str, Any] = {"model": model, "messages": list(conversation)}
        if timeout is not None:
            request["timeout"] = timeout
        request.update(options)
        started = time.monotonic()
        try:
            response = client.chat.completions.create(**request)
        except Exception as exc:  # the client raises many kinds; each is one failed attempt
            refused = refused_option(exc, options)
            if refused is not None:  # at most once per option: the loop stays bounded
                del options[refused]
                continue
            message, _ = transport_failure(exc)
            retried = retries_taken(exc)
            if retried:
                message += f" (after {retried} {'retry' if retried == 1 else 'retries'})"
            attempts.append(Attempt(number, (message,), None, time.monotonic() - started, "model-unavailable"))
            error = exc
            break
        seconds = time.monotonic() - started
        error = None
        text, cut = _answer_text(response)
        value, problems = check(text)
        if not problems:
            attempts.append(Attempt(number, (), text, seconds))
            return Exchange(value, tuple(attempts), tuple(conversation))
        problems = list(problems)
        if cut:
            problems.append("the answer was cut off (finish_reason=length)")
        attempts.append(Attempt(number, tuple(problems), text, seconds, "invalid-model-answer"))
        if len(attempts) < max_attempts:
            echo = {"role": "assistant", "content": (text or "")[:ECHO_LIMIT]}
            conversation = [*conversation, echo, dict(correction(problems))]
    return Exchange(None, tuple(attempts), tuple(conversation), error)


def _answer_text(response: Any) -> tuple[str | None, bool]:
    """The first choice's text, and whether it was cut off at the length limit."""
    try:
        choice = response.choices[0]
        text = choice.message.content
    except (AttributeError, IndexError, TypeError):
        return None, False
    return text, getattr(choice, "finish_reason", None) == "length"


def retries_taken(exc: Exception) -> int:
    """How many times the ``openai`` client retried the request that ended in ``exc`` (it
    numbers each try in the ``x-stainless-retry-count`` header of the request); 0 when unknown.

    >>> import types
    >>> retries_taken(types.SimpleNamespace(request=types.SimpleNamespace(headers={"x-stainless-retry-count": "2"})))
    2
    >>> retries_taken(ValueError("no request"))
    0
    """
    headers = getattr(getattr(exc, "request", None), "headers", None)
    try:
        return max(0, int(headers.get("x-stainless-retry-count", 0))) if headers is not None else 0
    except (TypeError, ValueError, AttributeError):
        return 0


def transport_failure(exc: Exception) -> tuple[str, bool]:
    """(what went wrong, worth asking again) for an exception the client raised; "worth asking
    again" is the client's own rule (timeouts, connections, HTTP 408, 409, 429, 5xx).

    >>> transport_failure(TimeoutError("slow"))
    ('no answer within the timeout (TimeoutError)', True)
    >>> class Unauthorized(Exception):
    ...     status_code = 401
    >>> transport_failure(Unauthorized("Error code: 401 - bad key"))
    ('the server answered HTTP 401: bad key', False)
    """
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if "Timeout" in name or isinstance(exc, TimeoutError):
        return f"no answer within the timeout ({name})", True
    if status is not None:
        detail = re.sub(r"^Error code: \d+ - ", "", getattr(exc, "message", None) or str(exc))
        body = getattr(exc, "body", None)
        if isinstance(body, Mapping) and isinstance(body.get("message"), str):
            detail = body["message"]  # the server's own words, without the client's wrapping
        retry = status >= 500 or status in (408, 409, 429)
        return f"the server answered HTTP {status}: {detail}", retry
    if "Connection" in name or isinstance(exc, OSError):
        return f"cannot reach the model endpoint: {exc}", True
    return f"{name}: {exc}", False


# Request options a server may refuse (HTTP 400/422 naming them): the request is sent again
# without the option, and that does not count as an attempt.
_OPTIONAL = {"response_format": r"response_format|json_object|json mode", "temperature": r"temperature"}


def refused_option(exc: Exception, request: Mapping[str, Any]) -> str | None:
    """The optional request key a 400/422 answer complains about, if any.

    >>> class Refused(Exception):
    ...     status_code = 400
    >>> refused_option(Refused("'response_format' is not supported"), {"response_format": {}})
    'response_format'
    >>> refused_option(Refused("bad messages"), {"response_format": {}}) is None
    True
    """
    if getattr(exc, "status_code", None) not in (400, 422):
        return None
    for key, pattern in _OPTIONAL.items():
        if key in request and re.search(pattern, str(exc), re.IGNORECASE):
            return key
    return None


# -- reading answers ----------------------------------------------------------------------------

# One Markdown code fence around the answer: a language tag then a new line, or ``json`` and
# the answer on the same line.
_FENCE = re.compile(r"\s*```(?:[A-Za-z0-9_-]*[^\S\n]*\n|json)?\s*(.*?)\s*```\s*", re.DOTALL)


def strip_fence(text: str) -> str:
    """An answer wrapped in one Markdown code fence, unwrapped (models do this in spite of
    being told not to); anything else is returned as it is.

    >>> strip_fence('```json\\n{"a": 1}\\n```'), strip_fence('```json {"a": 1}```'), strip_fence("{}")
    ('{"a": 1}', '{"a": 1}', '{}')
    """
    match = _FENCE.fullmatch(text)
    return match.group(1) if match else text


def read_json(text: str | None) -> tuple[Any, list[str]]:
    """``(value, problems)``: the answer as one JSON value, or why it is not one.

    >>> read_json('{"a": 1}')
    ({'a': 1}, [])
    >>> read_json("Sure! Here it is.")
    (None, ['not valid JSON: Expecting value at line 1, column 1'])
    >>> read_json("  ")
    (None, ['the answer is empty'])
    """
    if text is None or not text.strip():
        return None, ["the answer is empty"]
    try:
        return parse_json(strip_fence(text)), []  # too deep or too long a number: a JSONDecodeError too
    except json.JSONDecodeError as exc:
        return None, [f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"]


class AnswerSchema:
    """A JSON Schema (draft 2020-12) answers must satisfy. The validator is made on first use:
    importing ``jsonschema`` costs start-up time that commands never asking a model should not
    pay.

    >>> schema = AnswerSchema({"type": "object", "required": ["reason"]})
    >>> [(list(e.absolute_path), e.message) for e in schema.errors({})]
    [([], "'reason' is a required property")]
    """

    def __init__(self, schema: Mapping[str, Any]):
        self.schema = schema
        self._validator: Any = None

    def errors(self, doc: Any) -> list[Any]:
        """Every ``jsonschema.ValidationError`` of ``doc``, in the validator's order."""
        if self._validator is None:
            import jsonschema

            self._validator = jsonschema.Draft202012Validator(self.schema)
        return list(self._validator.iter_errors(doc))


def json_path(parts: Iterable[Any]) -> str:
    """The JSONPath of a place in an answer (``$`` is the answer itself).

    >>> json_path(["added", 0, "step"])
    '$.added[0].step'
    """
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text
