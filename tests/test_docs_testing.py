"""docs/testing.md is a doctest: every example on the page runs and prints what it shows."""

from __future__ import annotations

import doctest
import os
import pathlib

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "testing.md"


def test_testing_page_examples_run(tmp_path) -> None:
    here = os.getcwd()
    os.chdir(tmp_path)  # the page writes memory files next to it
    try:
        result = doctest.testfile(
            str(PAGE), module_relative=False, encoding="utf-8", optionflags=doctest.ELLIPSIS, report=True
        )
    finally:
        os.chdir(here)
    assert result.attempted > 10
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in docs/testing.md failed (output above)"
