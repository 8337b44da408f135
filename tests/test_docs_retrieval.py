"""docs/retrieval.md is a doctest: every example on the page runs and prints what it shows."""

from __future__ import annotations

import doctest
import pathlib

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "retrieval.md"


def test_retrieval_page_examples_run() -> None:
    result = doctest.testfile(str(PAGE), module_relative=False, encoding="utf-8", optionflags=doctest.ELLIPSIS, report=True)
    assert result.attempted >= 6
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in docs/retrieval.md failed (output above)"
