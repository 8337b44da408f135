"""docs/time.md is a doctest: every example on the page runs and prints what it shows."""

from __future__ import annotations

import doctest
import pathlib

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "time.md"


def test_time_documentation_examples_run() -> None:
    result = doctest.testfile(str(DOC), module_relative=False, encoding="utf-8", verbose=False, report=True)
    assert result.attempted > 20
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in docs/time.md failed (output above)"
