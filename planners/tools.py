"""Simulated tools: plain Python functions behind a :class:`Toolbox` that can fail on cue.

A toolbox maps tool names to callables (``tool(**args) -> value``), the way the agent loop
expects any tool mapping to. On top it scripts failures, deterministically:

- ``toolbox.script(name, [outcome, ...])``: the n-th call of ``name`` gets the n-th outcome —
  ``None`` runs the tool, ``"timeout"`` raises :class:`ToolTimeout`, any other string raises
  :class:`ToolError` with that message, an exception instance is raised as it is. Calls after
  the script has run out run normally.
- ``toolbox.fail_when(name, predicate, error)``: every call whose arguments satisfy
  ``predicate(args)`` raises ``error`` (a message or an exception).

Every call is logged in ``toolbox.calls`` (name, args, ok, error).

>>> tools = Toolbox({"check_policy": lambda order: {"refundable": True}})
>>> tools.script("check_policy", ["timeout", None])
>>> try:
...     tools["check_policy"](order="A1")
... except ToolError as err:
...     print(err.kind, err)
timeout check_policy timed out
>>> tools["check_policy"](order="A1")
{'refundable': True}
>>> [(c.name, c.ok) for c in tools.calls]
[('check_policy', False), ('check_policy', True)]
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Sequence

import attrs

__all__ = ["Toolbox", "ToolError", "ToolTimeout", "ToolLogEntry"]


class ToolError(Exception):
    """A tool failure with a ``kind`` (``timeout``, ``closed``, ``unavailable``, ...).

    >>> ToolError("The Forbidden City is closed on Mondays", kind="closed").kind
    'closed'
    """

    def __init__(self, message: str, *, kind: str = "error"):
        super().__init__(message)
        self.kind = kind


class ToolTimeout(ToolError):
    """A simulated timeout (raised at once; no clock is involved)."""

    def __init__(self, message: str):
        super().__init__(message, kind="timeout")


@attrs.frozen
class ToolLogEntry:
    name: str
    args: Mapping[str, Any]
    ok: bool
    error: str | None = None


def _to_exception(name: str, outcome: Any) -> BaseException | None:
    if outcome is None:
        return None
    if isinstance(outcome, BaseException):
        return outcome
    if outcome == "timeout":
        return ToolTimeout(f"{name} timed out")
    return ToolError(str(outcome))


class Toolbox(Mapping[str, Callable[..., Any]]):
    """Named tools with scripted failures and a call log (see the module documentation)."""

    def __init__(self, tools: Mapping[str, Callable[..., Any]] | None = None):
        self._tools: dict[str, Callable[..., Any]] = dict(tools or {})
        self._scripts: dict[str, list[Any]] = {}
        self._conditions: dict[str, list[tuple[Callable[[Mapping[str, Any]], bool], Any]]] = {}
        self.calls: list[ToolLogEntry] = []

    # -- building --------------------------------------------------------------------------

    def register(self, name: str, function: Callable[..., Any] | None = None):
        """Add a tool; usable as a decorator.

        >>> tools = Toolbox()
        >>> @tools.register("echo")
        ... def echo(text):
        ...     return text
        >>> tools["echo"](text="hi")
        'hi'
        """
        if function is None:
            def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
                self._tools[name] = fn
                return fn

            return decorate
        self._tools[name] = function
        return function

    def script(self, name: str, outcomes: Sequence[Any]) -> None:
        """Outcomes for the next calls of ``name`` (appended to any still unused)."""
        self._scripts.setdefault(name, []).extend(outcomes)

    def fail_when(self, name: str, predicate: Callable[[Mapping[str, Any]], bool], error: Any) -> None:
        """Every call of ``name`` whose args satisfy ``predicate`` raises ``error``.

        >>> tools = Toolbox({"visit": lambda place, day: "ok"})
        >>> tools.fail_when("visit", lambda a: a["day"] == "Mon", ToolError("closed on Mondays", kind="closed"))
        >>> tools["visit"](place="Museum", day="Tue")
        'ok'
        >>> tools["visit"](place="Museum", day="Mon")
        Traceback (most recent call last):
        ...
        planners.tools.ToolError: closed on Mondays
        """
        self._conditions.setdefault(name, []).append((predicate, error))

    # -- the mapping -----------------------------------------------------------------------

    def __getitem__(self, name: str) -> Callable[..., Any]:
        function = self._tools[name]

        def call(**args: Any) -> Any:
            failure = None
            script = self._scripts.get(name)
            if script:
                failure = _to_exception(name, script.pop(0))
            if failure is None:
                for predicate, error in self._conditions.get(name, ()):
                    if predicate(args):
                        failure = _to_exception(name, error)
                        break
            try:
                if failure is not None:
                    raise failure
                value = function(**args)
            except Exception as exc:
                self.calls.append(ToolLogEntry(name, dict(args), False, f"{type(exc).__name__}: {exc}"))
                raise
            self.calls.append(ToolLogEntry(name, dict(args), True))
            return value

        call.__name__ = name
        return call

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)
