"""docs/planners.md and docs/tutorial.md are doctests: every example runs and prints what it shows."""

from __future__ import annotations

import doctest
import os
import pathlib

import pytest


DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("page", ["planners.md", "tutorial.md"])
def test_planner_documentation_examples_run(page: str) -> None:
    here = os.getcwd()
    try:
        result = doctest.testfile(str(DOCS / page), module_relative=False, encoding="utf-8", verbose=False, report=True)
    finally:
        os.chdir(here)
    assert result.attempted > 20
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in docs/{page} failed (output above)"
