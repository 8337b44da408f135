"""LLM calls: one chat-and-validate loop (:mod:`hgm_engine.llm.chat`) and, on top of it,
proposing a path rewrite through any OpenAI-compatible endpoint (:mod:`hgm_engine.llm.rewrite`).
"""

from __future__ import annotations

from hgm_engine.llm.chat import (
    DEFAULT_ATTEMPTS,
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT,
    ECHO_LIMIT,
    MODEL_ENV,
    AnswerSchema,
    Attempt,
    Exchange,
    ScriptedClient,
    converse,
    json_path,
    model_name,
    open_client,
    read_json,
    refused_option,
    strip_fence,
    transport_failure,
)
from hgm_engine.llm.summarize import (
    SUMMARY_ANSWER_SCHEMA,
    MAX_SUMMARY_LENGTH,
    build_summary_prompt,
    check_summary_answer,
    summary_from_model,
    summarize_with_model,
)
from hgm_engine.llm.rewrite import (
    EXAMPLE_ANSWER,
    REWRITE_ANSWER_SCHEMA,
    Proposal,
    build_prompt,
    guard_refusal,
    parse_answer,
    preview_steps,
    propose_rewrite,
    retry_message,
    rewrite_with_llm,
)

__all__ = [
    # a summary written by a model
    "SUMMARY_ANSWER_SCHEMA",
    "MAX_SUMMARY_LENGTH",
    "build_summary_prompt",
    "check_summary_answer",
    "summary_from_model",
    "summarize_with_model",
    # the path rewrite
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
    # the loop
    "DEFAULT_MODEL",
    "DEFAULT_TIMEOUT",
    "DEFAULT_ATTEMPTS",
    "MODEL_ENV",
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
]
