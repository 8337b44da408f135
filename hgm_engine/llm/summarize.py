"""A summary written by a model: the prompt (a pure function of the extractive draft), the
JSON Schema its answer must meet, and the call through the one LLM loop
(:func:`~hgm_engine.llm.chat.converse`). Nothing changes when no valid answer comes.

>>> draft = {"summary_of": "s", "level": "scenario", "content": "Summary of scenario 's': 2 events.",
...          "counts": {"type": {"action": 2}, "status": {"done": 2}},
...          "events": [{"id": "s", "type": "goal", "content": "Refund"}, {"id": "a", "type": "action", "content": "Look up"}]}
>>> messages = build_summary_prompt(draft)
>>> [m["role"] for m in messages], "Look up" in messages[1]["content"]
(['system', 'user'], True)
>>> check_summary_answer('{"summary": "Refunded after looking the order up."}')
('Refunded after looking the order up.', [])
>>> check_summary_answer('{"summary": ""}')[1]
["$.summary: '' should be non-empty"]
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from hgm_engine.errors import Problem, RewriteProposalError
from hgm_engine.llm.chat import (
    DEFAULT_ATTEMPTS,
    DEFAULT_TIMEOUT,
    AnswerSchema,
    converse,
    json_path,
    model_name,
    open_client,
    read_json,
)

__all__ = [
    "SUMMARY_ANSWER_SCHEMA",
    "MAX_SUMMARY_LENGTH",
    "build_summary_prompt",
    "check_summary_answer",
    "summary_from_model",
    "summarize_with_model",
]

MAX_SUMMARY_LENGTH = 2000
"""The longest summary text a model may answer with (characters)."""

SUMMARY_ANSWER_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string", "minLength": 1, "maxLength": MAX_SUMMARY_LENGTH}},
    "required": ["summary"],
    "additionalProperties": False,
}
_SCHEMA = AnswerSchema(SUMMARY_ANSWER_SCHEMA)

_SYSTEM = (
    "You summarize one part of an agent's memory graph: a scenario's events (or any subtree). "
    "Write a faithful summary a planner can read before the events themselves: what was tried, "
    "in what order, what came out, what failed, which entities it concerns, with counts. Use "
    "only what the events say. Answer with one JSON object: "
    '{"summary": "..."} (at most ' + str(MAX_SUMMARY_LENGTH) + " characters)."
)


def build_summary_prompt(draft: Mapping[str, Any]) -> list[dict[str, str]]:
    """The conversation that asks for a summary of ``draft`` (the extractive summary's
    attributes with ``events``, as ``Memory.summarize`` gives them): the same draft always
    gives the same messages."""
    events = [
        {k: event[k] for k in ("id", "type", "status", "content") if event.get(k) is not None} for event in draft.get("events", ())
    ]
    facts = {
        "summarized": draft.get("summary_of"),
        "level": draft.get("level"),
        "counts": draft.get("counts"),
        "events (the summarized node first, then its events in order)": events,
        "extractive summary (a starting point)": draft.get("content"),
    }
    return [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": json.dumps(facts, ensure_ascii=False, indent=1, sort_keys=False)},
    ]


def check_summary_answer(text: str | None) -> tuple[str | None, list[str]]:
    """``(summary text, [])`` for an answer that meets :data:`SUMMARY_ANSWER_SCHEMA`, else
    ``(None, problems)`` (the messages the model is asked to correct)."""
    doc, problems = read_json(text)
    if problems:
        return None, list(problems)
    errors = _SCHEMA.errors(doc)
    if errors:
        return None, [f"{json_path(e.absolute_path)}: {e.message}" for e in errors]
    summary = " ".join(doc["summary"].split())
    if not summary:
        return None, ["$.summary: should be non-empty"]
    return summary, []


def _correction(problems: Any) -> dict[str, str]:
    listed = "; ".join(problems)
    return {"role": "user", "content": f"That answer cannot be used: {listed}. Answer again with one JSON object {{\"summary\": \"...\"}}."}


def summary_from_model(
    draft: Mapping[str, Any],
    *,
    client: Any = None,
    model: str | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    timeout: float = DEFAULT_TIMEOUT,
) -> str:
    """Ask a model (``client``, else the endpoint the environment names) for the summary of
    ``draft``; returns its text or raises :class:`RewriteProposalError`
    (``invalid-model-answer``, ``model-unavailable``) listing every attempt.

    >>> from hgm_engine.llm import ScriptedClient
    >>> summary_from_model({"events": []}, client=ScriptedClient(['{"summary": 3}', '{"summary": "ok"}']), model="m")
    'ok'
    """
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise RewriteProposalError.single("invalid-argument", f"attempts is a positive integer, not {attempts!r}")
    client = client if client is not None else open_client(timeout)
    name = model_name(model)
    exchange = converse(
        client,
        build_summary_prompt(draft),
        check_summary_answer,
        model=name,
        max_attempts=attempts,
        correction=_correction,
        timeout=timeout,
    )
    if exchange.ok:
        return exchange.value
    category = exchange.category or "invalid-model-answer"
    head = (
        f"no valid summary from {name} after {len(exchange.attempts)} attempt(s); nothing was changed"
        if category == "invalid-model-answer"
        else f"the model {name} did not answer; nothing was changed"
    )
    problems = [Problem(category, head)] + [
        Problem(a.category or category, "; ".join(a.problems) or "no problem recorded", where=f"attempt {a.number}")
        for a in exchange.attempts
    ]
    error = RewriteProposalError(problems)
    error.attempts = tuple(exchange.attempts)
    raise error


def summarize_with_model(memory: Any, node_id: str, *, client: Any = None, model: str | None = None,
                         attempts: int = DEFAULT_ATTEMPTS, timeout: float = DEFAULT_TIMEOUT, **options: Any) -> Any:
    """``memory.summarize(node_id, ...)`` with the text written by a model; the report of
    the commit. Without a valid answer nothing is written and :class:`RewriteProposalError`
    says why.

    >>> from hgm_engine import Memory
    >>> from hgm_engine.llm import ScriptedClient
    >>> m = Memory()
    >>> _ = m.apply({"ops": [{"op": "add_node", "id": "s", "type": "goal"},
    ...     {"op": "add_node", "id": "a", "type": "action", "parent": "s", "content": "Ask"}]})
    >>> _ = summarize_with_model(m, "s", client=ScriptedClient(['{"summary": "One question was asked."}']), model="m")
    >>> m.node("summary-s")["content"], m.node("summary-s")["method"]
    ('One question was asked.', 'model')
    """
    return memory.summarize(
        node_id,
        content=lambda draft: summary_from_model(draft, client=client, model=model, attempts=attempts, timeout=timeout),
        **options,
    )
