"""Where the LLM routes send their requests: an OpenAI-compatible chat endpoint
(:class:`LLMEndpoint`, set by the ``--llm-*`` options: :func:`add_llm_arguments`,
:func:`llm_endpoint`), and the LLM planner, found through an entry point group
(:data:`PLANNER_GROUP`, :func:`planner_entry`).

>>> LLMEndpoint(model="m").model
'm'
"""

from __future__ import annotations

import os
from typing import Any

import attrs

from hgm_engine.errors import RewriteProposalError
from hgm_engine.llm import DEFAULT_ATTEMPTS, DEFAULT_TIMEOUT, open_client
from hgm_engine.server.service.checks import fail

__all__ = ["PLANNER_GROUP", "LLMEndpoint", "add_llm_arguments", "llm_endpoint", "planner_entry"]

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
            raise fail("invalid-argument", "'attempts' must be an integer from 1 to 10", "attempts")
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


def planner_entry() -> Any:
    """The LLM planner's step, from the first entry point of :data:`PLANNER_GROUP`.

    >>> hasattr(planner_entry(), "step")
    True
    """
    from importlib.metadata import entry_points

    found = list(entry_points(group=PLANNER_GROUP))
    if not found:
        raise fail(
            "missing-package",
            f"the LLM planner is offered by a package through the entry point group {PLANNER_GROUP!r}; "
            "none is installed (it ships with hgm: reinstall it)",
        )
    try:
        return found[0].load()
    except ImportError as exc:
        raise fail("missing-package", f"cannot load the LLM planner ({found[0].value}): {exc}") from None
