"""docs/rules.md is a doctest: every example on the page must run and print what it shows."""

from __future__ import annotations

import doctest
import os
import pathlib

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "rules.md"


def test_rules_documentation_examples_run() -> None:
    here = os.getcwd()
    try:
        result = doctest.testfile(str(DOC), module_relative=False, encoding="utf-8", verbose=False, report=True)
    finally:
        os.chdir(here)  # the command-line examples change directory
    assert result.attempted > 100
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in docs/rules.md failed (output above)"
