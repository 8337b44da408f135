"""LLM-proposed path rewrites: ask a model how to fix a path, validate its answer, then commit.

A rewrite proposal is one round trip to any OpenAI-compatible chat endpoint (through the
``openai`` client; ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` say where). The prompt is a pure
function of the old path and the feedback (:func:`build_prompt`). The answer must be one JSON
object valid against :data:`REWRITE_ANSWER_SCHEMA` that accounts for every old step exactly
once (kept, changed or removed) and may add new ones (:func:`parse_answer`). An invalid answer
is sent back to the model with what is wrong, a bounded number of times; after that nothing
changes and :class:`RewriteProposalError` says what every attempt got wrong.

>>> path = {"id": "order-17", "goal": "Tell the user where order A1001 is",
...         "steps": [{"name": "query_order"}, {"name": "notify_user"}]}
>>> client = ScriptedClient(['{"kept": [0, 1], "changed": [], "removed": [], "reason": "x"}',
...     '{"kept": [0, 1], "changed": [], "removed": [], "reason": "the API is flaky",'
...     ' "added": [{"after": 0, "step": {"name": "retry_query"}}]}'])
>>> proposal = propose_rewrite(path, "the order API timed out", client=client, model="m")
>>> [step["name"] for step in proposal.steps], len(proposal.attempts)
(['query_order', 'retry_query', 'notify_user'], 2)
>>> proposal.attempts[0].problems
("$: missing 'added' (required)",)
>>> proposal.ops
({'keep': 0}, {'add': {'name': 'retry_query'}, 'after': 0}, {'keep': 1})

:func:`rewrite_with_llm` proposes and then commits through ``Memory.rewrite_path`` (a new
version of the path, the old one superseded); nothing is written when no valid answer came.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping, Sequence

import attrs

from hgm_engine.errors import HGMError, PathError, Problem, RewriteProposalError
from hgm_engine.llm.chat import (
    DEFAULT_ATTEMPTS,
    DEFAULT_MODEL,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    MODEL_ENV,
    AnswerSchema,
    Attempt,
    ScriptedClient,
    check_retries,
    converse,
    json_path,
    model_name,
    open_client,
    read_json,
)
from hgm_engine.paths import resolve_steps

__all__ = [
    "REWRITE_ANSWER_SCHEMA",
    "EXAMPLE_ANSWER",
    "build_prompt",
    "retry_message",
    "parse_answer",
    "preview_steps",
    "propose_rewrite",
    "rewrite_with_llm",
    "guard_refusal",
    "Proposal",
    # the loop's names, still importable from here (hgm_engine.llm exports them too)
    "DEFAULT_MODEL",
    "DEFAULT_TIMEOUT",
    "DEFAULT_ATTEMPTS",
    "MODEL_ENV",
    "Attempt",
    "ScriptedClient",
]

# A step's node id: hgm owns ids, so it is neither shown to the model nor taken from its answer.
_IDENTITY_KEYS = ("id",)
# Set by hgm, never by an answer: the node id, staleness marks (rules set them) and the status
# (a new version's steps start pending).
_ENGINE_KEYS = ("id", "dirty", "dirty_marks", "status")
_STEP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "pattern": "\\S"},
        "content": {"type": "string"},
    },
    "additionalProperties": True,
}

REWRITE_ANSWER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "hgm path rewrite",
    "description": (
        "Every old step index appears exactly once in kept, changed[].index or removed; "
        "added steps go after an old index (-1: before the first step)."
    ),
    "type": "object",
    "required": ["kept", "changed", "added", "removed", "reason"],
    "additionalProperties": False,
    "properties": {
        "kept": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "changed": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["index", "step"],
                "additionalProperties": False,
                "properties": {"index": {"type": "integer", "minimum": 0}, "step": _STEP_SCHEMA},
            },
        },
        "added": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["after", "step"],
                "additionalProperties": False,
                "properties": {"after": {"type": "integer", "minimum": -1}, "step": _STEP_SCHEMA},
            },
        },
        "removed": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "reason": {"type": "string", "minLength": 1, "pattern": "\\S"},
    },
}

_ANSWER_SCHEMA = AnswerSchema(REWRITE_ANSWER_SCHEMA)

_SYSTEM = """\
You revise the stored decision paths of an agent's task memory. A path is a goal and an \
ordered list of steps; each step has a "name" (the tool or operation) and optionally \
"content" (what it does) and further attributes. Given an old path and feedback on how it \
failed or went out of date, propose the smallest rewrite that addresses the feedback.

Answer with one JSON object and nothing else (no prose, no code fence). It must be valid \
against this JSON Schema:

{schema}

Rules:
- Refer to old steps by their index (the number in square brackets).
- List every old step index exactly once: in "kept" (unchanged), in "changed" (replaced by \
the "step" given) or in "removed".
- "added" holds new steps; "after" is the old index a new step follows (-1: before the \
first step). Several steps added after the same index keep the order given.
- A step in "changed" or "added" is complete: give every attribute it should have, with a \
non-empty "name". Do not give steps an "id"; the memory assigns ids.
- The rewrite must change something and leave at least one step.
- "reason" says in one or two sentences why the new path answers the feedback.

Example, for a path with steps [0] search, [1] book, [2] notify: keep the search, check the \
price before booking, book with a retry, drop the notification:
{example}"""

# The worked example in the system prompt (a valid answer for a path of three steps).
EXAMPLE_ANSWER = {
    "kept": [0],
    "changed": [{"index": 1, "step": {"name": "book", "content": "book, retrying once on a timeout"}}],
    "added": [{"after": 0, "step": {"name": "check_price", "content": "compare the price with the budget"}}],
    "removed": [2],
    "reason": "Bookings failed on timeouts and over-budget prices; the user is notified elsewhere.",
}


# -- the prompt ------------------------------------------------------------------------------


def _dumps(value: Any) -> str:
    """Canonical JSON: equal values give equal text (keys sorted, no locale, no time)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _shown_step(step: Any) -> Any:
    if isinstance(step, Mapping):
        return {k: v for k, v in step.items() if k not in _IDENTITY_KEYS}
    return {"name": str(step)}


def build_prompt(path: Mapping[str, Any], feedback: str) -> list[dict[str, str]]:
    """The chat messages asking for a rewrite of ``path`` given ``feedback``.

    A pure function: the same path and feedback always give the same messages (no time, no
    model name, keys in a fixed order), so a prompt can be cached, diffed and tested. The
    system message holds the rules and :data:`REWRITE_ANSWER_SCHEMA`; the user message the
    path (goal, status, version, result, reward, tags, earlier rewrites) with its steps
    numbered from 0, and the feedback.

    >>> path = {"id": "p1", "goal": "Check order A1001", "version": 2,
    ...         "steps": [{"name": "query_order", "content": "call the order API"}, {"name": "notify_user"}]}
    >>> messages = build_prompt(path, "the API now needs a login first")
    >>> [m["role"] for m in messages]
    ['system', 'user']
    >>> print(messages[1]["content"])  # doctest: +NORMALIZE_WHITESPACE
    Old path p1 (version 2)
    goal: Check order A1001
    steps:
    [0] {"content": "call the order API", "name": "query_order"}
    [1] {"name": "notify_user"}
    <BLANKLINE>
    Feedback:
    the API now needs a login first
    <BLANKLINE>
    Answer with the JSON object only.
    >>> build_prompt(path, "x") == build_prompt(dict(path), "x")
    True
    """
    system = _SYSTEM.format(schema=_dumps(REWRITE_ANSWER_SCHEMA), example=_dumps(EXAMPLE_ANSWER))
    header = f"Old path {path.get('id', '?')}"
    if path.get("version") is not None:
        header += f" (version {path['version']})"
    lines = [header, f"goal: {path.get('goal', '')}"]
    for key in ("status", "result", "reward"):
        if path.get(key) is not None:
            lines.append(f"{key}: {_dumps(path[key]) if not isinstance(path[key], str) else path[key]}")
    if path.get("tags"):
        lines.append(f"tags: {_dumps(list(path['tags']))}")
    if path.get("rewrite_reason"):
        lines.append(f"why this version was written: {path['rewrite_reason']}")
    earlier = [v for v in path.get("versions") or [] if isinstance(v, Mapping) and v.get("id") != path.get("id")]
    if earlier:
        lines.append("earlier versions (oldest first):")
        lines.extend(f"- {_dumps(v)}" for v in earlier[-5:])
    lines.append("steps:")
    steps = list(path.get("steps") or [])
    lines.extend(f"[{i}] {_dumps(_shown_step(step))}" for i, step in enumerate(steps))
    if not steps:
        lines.append("(none)")
    edges = [list(edge) for edge in path.get("edges") or []]
    if edges and edges != [[i, i + 1] for i in range(len(steps) - 1)]:
        lines.append(f"order (step i runs before step j): {_dumps(edges)}; the rewritten steps run in list order")
    lines += ["", "Feedback:", str(feedback).strip(), "", "Answer with the JSON object only."]
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def retry_message(problems: Sequence[str]) -> dict[str, str]:
    """The user message sent after an invalid answer: what is wrong, and to answer again.

    >>> print(retry_message(["$.kept[0]: 7 is out of range"])["content"])
    Your answer cannot be used:
    - $.kept[0]: 7 is out of range
    Answer again with the corrected JSON object only, valid against the schema.
    """
    listed = "\n".join(f"- {problem}" for problem in problems)
    return {
        "role": "user",
        "content": f"Your answer cannot be used:\n{listed}\n"
        "Answer again with the corrected JSON object only, valid against the schema.",
    }


# -- the answer ------------------------------------------------------------------------------


def _schema_problems(errors: Iterable[Any]) -> list[str]:
    """One line per place: the required properties missing there together, no repeats."""
    problems: list[str] = []
    missing: dict[str, list[str]] = {}
    for error in errors:
        where = json_path(error.absolute_path)
        if error.validator == "required":
            names = re.findall(r"'([^']+)' is a required property", error.message)
            if where not in missing:
                missing[where] = []
                problems.append(where)  # a placeholder, filled in below
            missing[where].extend(names)
            continue
        if error.validator in ("minLength", "pattern") and isinstance(error.instance, str):
            text = f"{where}: must be a non-empty string, got {json.dumps(error.instance)}"
        else:
            text = f"{where}: {error.message}"
        if text not in problems:
            problems.append(text)
    return [
        f"{p}: missing {', '.join(repr(name) for name in missing[p])} (required)" if p in missing else p
        for p in problems
    ]


def _checked(text: str | None, steps: Sequence[Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """``(answer, problems)``: ``text`` as a rewrite of ``steps``, or everything wrong with it."""
    doc, problems = read_json(text)
    if problems:
        return None, problems
    errors = sorted(_ANSWER_SCHEMA.errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        return None, _schema_problems(errors)
    count = len(steps)
    span = f"the path has {count} step{'s' if count != 1 else ''}" + (f", numbered 0 to {count - 1}" if count else "")
    problems: list[str] = []
    seen: dict[int, str] = {}
    listed = [(f"$.kept[{i}]", index, "kept") for i, index in enumerate(doc["kept"])]
    listed += [(f"$.changed[{i}].index", c["index"], "changed") for i, c in enumerate(doc["changed"])]
    listed += [(f"$.removed[{i}]", index, "removed") for i, index in enumerate(doc["removed"])]
    for where, index, kind in listed:
        if index >= count:
            problems.append(f"{where}: there is no step {index} ({span})")
        elif index in seen:
            again = "twice in " + kind if seen[index] == kind else f"in both {seen[index]} and {kind}"
            problems.append(f"{where}: step {index} is listed {again}; list each old step exactly once")
        else:
            seen[index] = kind
    missing = [i for i in range(count) if i not in seen]
    if missing:
        problems.append(
            f"$: step{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} "
            "not accounted for: list every old step once in kept, changed or removed"
        )
    for i, added in enumerate(doc["added"]):
        if added["after"] >= count:
            problems.append(f"$.added[{i}].after: {added['after']} is past the last step ({span}; -1 puts it first)")
    if not problems:
        same = all(_comparable(steps[c["index"]]) == _comparable(c["step"]) for c in doc["changed"])
        if same and not doc["added"] and not doc["removed"]:
            problems.append("$: the answer changes nothing; a rewrite must change, add or remove a step")
        elif len(doc["removed"]) == count and not doc["added"]:
            problems.append("$: the rewritten path would have no steps")
    return (None if problems else doc), problems


def _clean_step(step: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in step.items() if k not in _ENGINE_KEYS}


def _change(old: Any, new: Mapping[str, Any]) -> dict[str, Any]:
    """The ``change`` update making ``old`` into the complete step ``new``: ``rewrite_path``
    merges the update into the old step, so an attribute the answer left out is set to None
    (removed)."""
    update = _clean_step(new)
    if isinstance(old, Mapping):
        update.update({k: None for k in old if k not in update and k not in _ENGINE_KEYS})
    return update


def _comparable(step: Any) -> dict[str, Any]:
    return _clean_step(_shown_step(step))


def _ops_from(doc: Mapping[str, Any], steps: Sequence[Any]) -> list[dict[str, Any]]:
    """Edit ops in path order: what goes before step 0, then each old step and what follows it."""
    count = len(steps)
    changed = {c["index"]: _change(steps[c["index"]], c["step"]) for c in doc["changed"]}
    removed = set(doc["removed"])
    after: dict[int, list[dict[str, Any]]] = {}
    for added in doc["added"]:
        after.setdefault(added["after"], []).append(_clean_step(added["step"]))
    ops: list[dict[str, Any]] = [{"add": step, "after": -1} for step in after.get(-1, [])]
    for index in range(count):
        if index in changed:
            ops.append({"change": index, "step": changed[index]})
        elif index in removed:
            ops.append({"remove": index})
        else:
            ops.append({"keep": index})
        ops.extend({"add": step, "after": index} for step in after.get(index, []))
    return ops


def parse_answer(text: str | None, path: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The edit ops of a model's answer ``text`` for ``path``, or RewriteProposalError.

    The answer must be JSON (one surrounding code fence is tolerated), valid against
    :data:`REWRITE_ANSWER_SCHEMA`, with every index in range and every old step accounted for
    exactly once. Every problem found is listed, each with its place in the answer (``where``).
    The ops come in path order: ``{"keep": i}``, ``{"change": i, "step": {...}}``,
    ``{"remove": i}`` and ``{"add": {...}, "after": i}`` (``-1``: before the first step), the
    form ``Memory.rewrite_path`` takes. A changed step is complete: an attribute of the old
    step it leaves out is set to None (``rewrite_path`` merges changes). ``id``, ``status``
    and staleness marks in the answer's steps are dropped (hgm sets them).

    >>> path = {"id": "p1", "steps": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}
    >>> parse_answer('{"kept": [0, 2], "changed": [], "added": [], "removed": [1], "reason": "b is gone"}', path)
    [{'keep': 0}, {'remove': 1}, {'keep': 2}]
    >>> parse_answer('{"kept": [0, 0, 5], "changed": [{"index": 1, "step": {"name": ""}}], "added": [], "removed": [], "reason": "r"}', path)
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RewriteProposalError: invalid-model-answer at $.changed[0].step.name: must be a non-empty string, got ""
    >>> try:
    ...     parse_answer('{"kept": [0, 0, 5], "changed": [], "added": [], "removed": [], "reason": "r"}', path)
    ... except RewriteProposalError as err:
    ...     print(err)
    invalid-model-answer at $.kept[1]: step 0 is listed twice in kept; list each old step exactly once
    invalid-model-answer at $.kept[2]: there is no step 5 (the path has 3 steps, numbered 0 to 2)
    invalid-model-answer at $: steps 1, 2 not accounted for: list every old step once in kept, changed or removed
    >>> parse_answer('{"kept": [0, 1, 2], "oops"', path)
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RewriteProposalError: invalid-model-answer: not valid JSON: Expecting ':' delimiter at line 1, column 27
    """
    steps = list(path.get("steps") or [])
    doc, problems = _checked(text, steps)
    if problems:
        raise RewriteProposalError([_problem("invalid-model-answer", p) for p in problems], source=text)
    assert doc is not None
    return _ops_from(doc, steps)


def _problem(category: str, text: str) -> Problem:
    """``$.x: message`` as a Problem placed at ``$.x``."""
    match = re.match(r"(\$[^\s:]*): (.*)", text, re.DOTALL)
    if match:
        return Problem(category, match.group(2), where=match.group(1))
    return Problem(category, text)


def preview_steps(path: Mapping[str, Any], ops: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The steps ``path`` would have after ``ops`` (what :func:`parse_answer` returns), as
    ``rewrite_path`` makes them: the ops go through :func:`hgm_engine.paths.resolve_steps`,
    the interpreter the commit uses, so the preview is what commits. A ``change`` updates the
    old step's attributes (None removes one); an old step no op names is kept; steps added
    after the same old step keep their order. Ids, statuses and staleness marks are left to
    hgm. Ops that ``rewrite_path`` would refuse raise its ``PathError`` (``bad-steps``).

    >>> path = {"steps": [{"name": "a", "status": "done"}, {"name": "b", "args": {"x": 1}}]}
    >>> preview_steps(path, [{"add": {"name": "z"}, "after": -1}, {"keep": 0},
    ...                      {"change": 1, "step": {"name": "b2", "args": None}}, {"add": {"name": "c"}, "after": 1}])
    [{'name': 'z'}, {'name': 'a'}, {'name': 'b2'}, {'name': 'c'}]
    >>> [s["name"] for s in preview_steps(path, [{"add": {"name": "c"}, "after": 0}, {"keep": 0}, {"keep": 1}])]
    ['a', 'c', 'b']
    """
    old = [_comparable(step) for step in path.get("steps") or []]
    steps, _, _ = resolve_steps(old, [dict(op) for op in ops])
    return [_clean_step(step) for step in steps]


# -- asking the model --------------------------------------------------------------------------


@attrs.frozen
class Proposal:
    """A validated rewrite: the edit ops, the reason, the resulting steps and how it was got.

    >>> proposal = propose_rewrite({"id": "p", "steps": [{"name": "a"}, {"name": "b"}]}, "b is useless",
    ...     client=ScriptedClient(['{"kept": [0], "changed": [], "added": [], "removed": [1], "reason": "r"}']), model="m")
    >>> proposal.to_json()["ops"], [a.ok for a in proposal.attempts]
    ([{'keep': 0}, {'remove': 1}], [True])
    """

    path_id: str
    feedback: str
    ops: tuple[Mapping[str, Any], ...]
    reason: str
    steps: tuple[Mapping[str, Any], ...]
    answer: Mapping[str, Any]
    model: str
    attempts: tuple[Attempt, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path_id,
            "feedback": self.feedback,
            "model": self.model,
            "reason": self.reason,
            "ops": [dict(op) for op in self.ops],
            "steps": [dict(step) for step in self.steps],
            "answer": dict(self.answer),
            "attempts": [a.to_json() for a in self.attempts],
        }


def propose_rewrite(
    path: Mapping[str, Any],
    feedback: str,
    *,
    client: Any = None,
    model: str | None = None,
    max_attempts: int = DEFAULT_ATTEMPTS,
    timeout: float = DEFAULT_TIMEOUT,
    json_mode: bool = True,
    temperature: float | None = 0.0,
    retries: int = DEFAULT_RETRIES,
) -> Proposal:
    """Ask the model for a rewrite of ``path`` (a dict as ``Memory.path`` returns) given ``feedback``.

    ``client`` is an ``openai.OpenAI`` (or anything with ``chat.completions.create``); by
    default one is made from ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``. ``model`` defaults to
    ``$HGM_LLM_MODEL`` or :data:`DEFAULT_MODEL`. Each request has ``timeout`` seconds. With
    ``json_mode`` the request asks for ``response_format={"type": "json_object"}``, and for
    ``temperature`` unless it is None; a server that refuses either (HTTP 400/422 naming it) is
    asked again without it, which does not count as an attempt. The answer is validated
    whatever the server promised.

    At most ``max_attempts`` requests are made (through :func:`hgm_engine.llm.converse`). An
    invalid answer is sent back with what is wrong with it (:func:`retry_message`). A
    timeout, a connection failure or a server error (HTTP 408, 409, 429, 5xx) is retried by the
    client made here up to ``retries`` times, with backoff and the server's ``Retry-After``
    (a ``client`` you pass retries as it was made to); what still fails, and any other HTTP
    error, stops at once as ``model-unavailable``. Returns a
    :class:`Proposal`, or raises :class:`RewriteProposalError` listing every attempt's
    problems.

    >>> path = {"id": "p", "goal": "g", "steps": [{"name": "a"}]}
    >>> bad = ScriptedClient(["not json", '{"kept": [3]}'])
    >>> try:
    ...     propose_rewrite(path, "fb", client=bad, model="m", max_attempts=2)
    ... except RewriteProposalError as err:
    ...     print(err)
    invalid-model-answer: no valid rewrite after 2 attempts; nothing was changed
    invalid-model-answer at attempt 1: not valid JSON: Expecting value at line 1, column 1
    invalid-model-answer at attempt 2: $: missing 'changed', 'added', 'removed', 'reason' (required)
    >>> bad.requests[1]["messages"][-1]["content"].splitlines()[1]
    '- not valid JSON: Expecting value at line 1, column 1'
    """
    if max_attempts < 1:
        raise RewriteProposalError.single("invalid-argument", f"max_attempts must be 1 or more, not {max_attempts}")
    if not str(feedback).strip():
        raise RewriteProposalError.single("invalid-argument", "the feedback is empty: say what went wrong")
    check_retries(retries)
    model = model_name(model)
    if client is None:
        client = open_client(timeout, retries)
    steps = list(path.get("steps") or [])
    exchange = converse(
        client,
        build_prompt(path, feedback),
        lambda text: _checked(text, steps),
        model=model,
        max_attempts=max_attempts,
        correction=retry_message,
        timeout=timeout,
        json_mode=json_mode,
        temperature=temperature,
    )
    if not exchange.ok:
        raise _failure(exchange.attempts)
    doc = exchange.value
    ops = _ops_from(doc, steps)
    return Proposal(
        path_id=str(path.get("id", "")),
        feedback=str(feedback),
        ops=tuple(ops),
        reason=doc["reason"].strip(),
        steps=tuple(preview_steps(path, ops)),
        answer=doc,
        model=model,
        attempts=exchange.attempts,
    )


def _failure(attempts: Sequence[Attempt]) -> RewriteProposalError:
    answered = any(a.category == "invalid-model-answer" for a in attempts)
    category = "invalid-model-answer" if answered else "model-unavailable"
    count = f"{len(attempts)} attempt{'s' if len(attempts) != 1 else ''}"
    summary = f"no valid rewrite after {count}; nothing was changed"
    problems = [Problem(category, summary)]
    problems += [
        Problem(a.category or category, "; ".join(a.problems), where=f"attempt {a.number}") for a in attempts
    ]
    error = RewriteProposalError(problems)
    error.attempts = tuple(attempts)
    return error


def guard_refusal(memory: Any, path: Mapping[str, Any]) -> HGMError | None:
    """The error ``memory.rewrite_path`` would raise for ``path`` whatever the new steps are
    (not the current version, ``needs-human``, ``rewrite-cap``, ``version-cap``), or None.
    Checked before the model is asked, so a path the guards stop costs no request; the commit
    checks again.

    >>> guard_refusal(None, {"id": "p", "root": "p", "needs_human": True}).category
    'needs-human'
    >>> guard_refusal(None, {"id": "p", "current": True}) is None
    True
    """
    root = str(path.get("root") or path.get("id"))

    def refuse(category: str, message: str) -> HGMError:
        return PathError([Problem(category, message + " (nothing was sent to the model)", where=root)])

    if path.get("current") is False:
        return refuse("stale-version", f"{path.get('id')!r} is not the current version of {root!r} "
                      f"(that is {path.get('head')!r}); rewrite the current one")
    if path.get("needs_human"):
        return refuse("needs-human", f"{root!r} needs a human: {path.get('failed_streak', 0)} consecutive failures "
                      "of rewritten versions; reset it (reset_path) before rewriting again")
    guards = getattr(memory, "path_guards", None)
    rewrites = path.get("rewrite_count")
    if guards is not None and isinstance(rewrites, int) and rewrites >= guards.max_rewrites:
        return refuse("rewrite-cap", f"{root!r} has been rewritten {rewrites} times (max_rewrites={guards.max_rewrites})")
    versions = path.get("versions")
    if guards is not None and isinstance(versions, list) and len(versions) >= guards.max_versions:
        return refuse("version-cap", f"{root!r} has {len(versions)} versions (max_versions={guards.max_versions})")
    return None


def rewrite_with_llm(
    memory: Any,
    path_id: str,
    feedback: str,
    *,
    author: str | None = None,
    proposal: Proposal | None = None,
    **kwargs: Any,
) -> Any:
    """Propose a rewrite of the path ``path_id`` with a model, then commit it as a new version.

    ``kwargs`` go to :func:`propose_rewrite` (``client``, ``model``, ``max_attempts``,
    ``timeout``...); a ``proposal`` already made (a dry run the user accepted) is committed
    as it is. The commit is ``memory.rewrite_path(path_id, ops, reason, author=...)`` whose
    :class:`~hgm_engine.txn.ops.TransactionReport` is returned (refused, with the
    violations, when constraints do not hold). The reason recorded is the model's with the
    feedback; the author defaults to ``llm:MODEL``. When no valid answer comes,
    :class:`RewriteProposalError` is raised and nothing is written. The path's own refusals
    (``unknown-path``, ``stale-version``, and the storm guards ``rewrite-cap``,
    ``version-cap``, ``needs-human``) are ``PathError`` s from the memory; the guards are
    checked before the model is asked (:func:`guard_refusal`) and again at the commit.

    >>> class Paths:  # anything with path() and rewrite_path(), such as Memory
    ...     def path(self, path_id):
    ...         return {"id": path_id, "goal": "g", "steps": [{"name": "a"}, {"name": "b"}]}
    ...     def rewrite_path(self, path_id, ops, reason, *, author=None):
    ...         return (path_id, ops, reason, author)
    >>> client = ScriptedClient(['{"kept": [0], "changed": [], "added": [], "removed": [1], "reason": "b is useless"}'])
    >>> rewrite_with_llm(Paths(), "p", "b never helps", client=client, model="m")
    ('p', [{'keep': 0}, {'remove': 1}], 'b is useless (feedback: b never helps)', 'llm:m')
    """
    if proposal is None:
        path = memory.path(path_id)
        refusal = guard_refusal(memory, path)
        if refusal is not None:
            raise refusal
        proposal = propose_rewrite(path, feedback, **kwargs)
    reason = f"{proposal.reason} (feedback: {' '.join(str(feedback).split())})"
    return memory.rewrite_path(path_id, [dict(op) for op in proposal.ops], reason, author=author or f"llm:{proposal.model}")
