"""A progress display for long commands (``hgm load``, ``hgm ingest``), drawn with `rich
<https://rich.readthedocs.io>`_ on standard error when it is a terminal, and nothing at all
when it is not (a pipe, a file, a test's capture): what a script reads never holds progress.

The engine reports progress through a plain callback, ``progress(phase, done, total)``
(``total`` None when the work cannot be counted), and knows nothing of terminals;
:class:`ProgressDisplay` is such a callback. Set ``HGM_PROGRESS=0`` to turn the display off on
a terminal too (``HGM_PROGRESS=1`` draws it even when standard error is not a terminal).

>>> import io
>>> with ProgressDisplay(io.StringIO()) as progress:  # not a terminal: no display, no callback
...     progress.callback is None
True
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, TextIO

__all__ = ["ProgressDisplay", "ProgressCallback", "PROGRESS_ENV", "wanted"]

ProgressCallback = Callable[[str, int, "int | None"], None]
"""``progress(phase, done, total)``: ``done`` of ``total`` items of ``phase`` are done
(``total`` None: not countable)."""

PROGRESS_ENV = "HGM_PROGRESS"
_REFRESH = 0.1  # seconds between two updates of one phase that are passed on to the display


def wanted(stream: TextIO) -> bool:
    """Whether a display belongs on ``stream``: it is a terminal (``$HGM_PROGRESS`` decides
    when set: ``0`` never, ``1`` always).

    >>> import io
    >>> wanted(io.StringIO())
    False
    """
    setting = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if setting in ("0", "no", "never", "off", "false"):
        return False
    if setting in ("1", "yes", "always", "on", "true"):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed stream
        return False


class ProgressDisplay:
    """A context manager whose :attr:`callback` (None when no display is wanted) shows each
    phase as a line with a spinner, a bar and counts when they are known, and the time spent.
    The lines are cleared when the work ends, leaving the command's own output alone. With
    ``log_above`` (the benchmarks) what is printed meanwhile is shown above the display;
    ``refresh`` is how many times a second it is redrawn. Updates
    are passed on to the display at most ten times a second per phase, so the engine may
    report every item.
    """

    def __init__(self, stream: TextIO, *, enabled: bool | None = None, log_above: bool = False, refresh: float = 10):
        self.stream = stream
        self.enabled = wanted(stream) if enabled is None else enabled
        self.log_above = log_above  # what is printed to sys.stdout/sys.stderr meanwhile goes above the display
        self.refresh = refresh
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}
        self._shown: dict[str, float] = {}
        self._current: str | None = None

    @property
    def callback(self) -> ProgressCallback | None:
        """The ``progress(phase, done, total)`` to hand to the engine, or None."""
        return self.update if self._progress is not None else None

    def __enter__(self) -> "ProgressDisplay":
        if not self.enabled:
            return self
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
        except ImportError:  # rich is a dependency; without it the command still works, silently
            return self
        console = Console(file=self.stream, stderr=True)
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            redirect_stdout=self.log_above,  # a command's output goes where it always goes
            redirect_stderr=self.log_above,
            refresh_per_second=self.refresh,
        )
        self._progress.start()
        return self

    def update(self, phase: str, done: int, total: int | None) -> None:
        """Show that ``done`` of ``total`` items of ``phase`` are done; a new phase ends the one
        before (shown complete)."""
        progress = self._progress
        if progress is None:
            return
        now = time.monotonic()
        if phase != self._current:
            if self._current is not None:
                previous = self._tasks[self._current]
                task = progress.tasks[progress.task_ids.index(previous)]
                if task.total is not None:
                    progress.update(previous, completed=task.total)
                progress.stop_task(previous)
            self._current = phase
            if phase not in self._tasks:
                self._tasks[phase] = progress.add_task(phase, total=total)
            self._shown[phase] = 0.0
        finished = total is not None and done >= total
        if not finished and now - self._shown[phase] < _REFRESH:
            return
        self._shown[phase] = now
        progress.update(self._tasks[phase], completed=done, total=total)

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
