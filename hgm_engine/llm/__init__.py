"""LLM calls: proposing a path rewrite through any OpenAI-compatible endpoint.
"""

from __future__ import annotations

from hgm_engine.llm.rewrite import (
    REWRITE_ANSWER_SCHEMA,
    DEFAULT_MODEL,
    DEFAULT_ATTEMPTS,
    DEFAULT_TIMEOUT,
    MODEL_ENV,
    build_prompt,
    retry_message,
    parse_answer,
    preview_steps,
    propose_rewrite,
    rewrite_with_llm,
    guard_refusal,
    Proposal,
    Attempt,
    ScriptedClient,
)

__all__ = [
    "REWRITE_ANSWER_SCHEMA",
    "DEFAULT_MODEL",
    "DEFAULT_ATTEMPTS",
    "DEFAULT_TIMEOUT",
    "MODEL_ENV",
    "build_prompt",
    "retry_message",
    "parse_answer",
    "preview_steps",
    "propose_rewrite",
    "rewrite_with_llm",
    "guard_refusal",
    "Proposal",
    "Attempt",
    "ScriptedClient",
]
