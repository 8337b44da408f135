"""The MCP prompts: reusable instructions with arguments (``next_step``, ``review_stale``,
``improve_path``), each taking the optional ``memory`` to work in (:func:`get_prompt`).

>>> [p.name for p in PROMPTS]
['next_step', 'review_stale', 'improve_path']
"""

from __future__ import annotations

from typing import Mapping

import attrs

__all__ = ["Prompt", "PROMPTS", "get_prompt"]

@attrs.frozen
class Prompt:
    """One MCP prompt: a reusable instruction with arguments, filled in by :func:`get_prompt`."""

    name: str
    title: str
    description: str
    arguments: tuple[tuple[str, str, bool], ...]  # (name, description, required)
    template: str


PROMPTS: tuple[Prompt, ...] = (
    Prompt(
        "next_step",
        "Decide the next step of a goal",
        "Work out what to do next for a goal from the memory, then record it.",
        (("goal", "The goal's node id.", True),),
        "You are working on goal {goal} in the hgm task memory. First call frontier with goal "
        "{goal} to see the actions that can run now, and stale to see what rules marked for "
        "review. Read what you need with query (for example \"#{goal}.descendants.where(status = "
        "'failed')\"). Then choose one action, do it, and record the result with one transact call "
        "(update the action's status, add a result node under it); pass the t you read as base_t.",
    ),
    Prompt(
        "review_stale",
        "Review stale nodes",
        "Go through the nodes rules marked needs_review or blocked and settle each.",
        (),
        "Call stale. For each node listed, read it and what its marks name as the cause (get_node, "
        "history). If it still holds, clear its marks with confirm; if not, correct it with "
        "transact (update_node), citing the cause in the reason.",
    ),
    Prompt(
        "improve_path",
        "Improve a stored path from feedback",
        "Turn feedback on a stored decision path into a new version of it.",
        (("path_id", "The stored path's id.", True), ("feedback", "What went wrong or changed.", True)),
        "The stored path {path_id} needs a change: {feedback}\nRead it with get_path. Propose the "
        "smallest rewrite that answers the feedback: call rewrite_path with edit ops ({{\"keep\": i}}, "
        "{{\"change\": i, ...}}, {{\"add\": {{...}}, \"after\": i}}, {{\"remove\": i}}) and the feedback as "
        "the reason, or let the server's model do it with llm_rewrite. After the next run, "
        "record_outcome on the new version.",
    ),
)


_PROMPT_MEMORY = ("memory", "The memory to work in (default: the server's default memory).", False)
PROMPTS = tuple(attrs.evolve(p, arguments=p.arguments + (_PROMPT_MEMORY,)) for p in PROMPTS)


def get_prompt(name: str, arguments: Mapping[str, str] | None) -> tuple[str, str] | None:
    """``(description, text)`` of prompt ``name`` with ``arguments`` filled in; None for an
    unknown prompt; ValueError naming a missing required argument.

    >>> get_prompt("next_step", {"goal": "trip"})[1].split(".")[0]
    'You are working on goal trip in the hgm task memory'
    >>> get_prompt("review_stale", {"memory": "acme/alice"})[1].split("\\n")[-1]
    "Work in the memory 'acme/alice': pass it as the memory argument of every tool call."
    >>> get_prompt("next_step", {})
    Traceback (most recent call last):
    ...
    ValueError: prompt 'next_step' needs the argument 'goal'
    """
    prompt = next((p for p in PROMPTS if p.name == name), None)
    if prompt is None:
        return None
    values = dict(arguments or {})
    for arg, _, required in prompt.arguments:
        if required and not str(values.get(arg, "")).strip():
            raise ValueError(f"prompt {name!r} needs the argument {arg!r}")
    filled = {arg: str(values.get(arg, "")) for arg, _, _ in prompt.arguments}
    text = prompt.template.format(**filled)
    memory = str(values.get("memory") or "").strip()
    if memory:
        text += f"\nWork in the memory {memory[:200]!r}: pass it as the memory argument of every tool call."
    return prompt.description, text
