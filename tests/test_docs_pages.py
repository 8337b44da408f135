"""Every page of docs/ that carries Python examples is a doctest, and passes as the pages say it
does: ``python -m doctest docs/PAGE.md``, with no option flags (a page that needs ``...`` to
stand for a varying part says so on the example, with ``# doctest: +ELLIPSIS``). Each page runs
in a directory of its own, as a reader would run it in an empty one. The shell sessions of
docs/cli.md and docs/formats.md run in tests/test_docs_cli.py and tests/test_docs_formats.py."""

from __future__ import annotations

import doctest
import os
import pathlib

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
PARSER = doctest.DocTestParser()


def examples_in(page: pathlib.Path) -> int:
    return len(PARSER.get_examples(page.read_text(encoding="utf-8")))


PAGES = sorted(page.name for page in DOCS.glob("*.md") if examples_in(page))

# Pages that must keep at least this many examples (a page whose examples stopped being
# Python sessions, e.g. lost their ``>>>``, would otherwise pass by running nothing).
AT_LEAST = {
    "api.md": 50,
    "language.md": 40,
    "llm.md": 10,
    "paths.md": 50,
    "planners.md": 20,
    "rules.md": 100,
    "transactions.md": 25,
    "tutorial.md": 20,
}


def test_the_pages_with_examples_are_the_ones_expected():
    assert set(AT_LEAST) <= set(PAGES), f"pages without examples: {sorted(set(AT_LEAST) - set(PAGES))}"


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run_under_plain_doctest(page, tmp_path):
    here = os.getcwd()
    os.chdir(tmp_path)  # pages write memory files next to them
    try:
        result = doctest.testfile(str(DOCS / page), module_relative=False, encoding="utf-8", report=True)
    finally:
        os.chdir(here)
    assert result.attempted >= AT_LEAST.get(page, 1)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in docs/{page} failed (output above)"
