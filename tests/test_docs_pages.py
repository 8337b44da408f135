"""Every example on the pages of docs/ runs and prints what the page shows.

- Python sessions (``>>>``): each page that has them is a doctest and passes as the pages say
  it does, ``python -m doctest docs/PAGE.md``, with no option flags (an example that needs
  ``...`` to stand for a varying part says so, with ``# doctest: +ELLIPSIS``).
- Shell sessions (```` ```console ```` blocks, ``$ hgm ...``): run by tests/docs_console.py,
  which compares what each command prints with the page.

Each page runs in an empty directory of its own, as a reader would run it."""

from __future__ import annotations

import doctest
import os
import pathlib

import pytest

from tests.docs_console import parse, run_page

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
PARSER = doctest.DocTestParser()


def examples_in(page: pathlib.Path) -> int:
    return len(PARSER.get_examples(page.read_text(encoding="utf-8")))


PAGES = sorted(page.name for page in DOCS.glob("*.md") if examples_in(page))
SESSION_PAGES = sorted(page.name for page in DOCS.glob("*.md") if parse(page.read_text(encoding="utf-8")))

# Pages that must keep at least this many examples (a page whose examples stopped being
# Python sessions, e.g. lost their ``>>>``, would otherwise pass by running nothing).
AT_LEAST = {
    "api.md": 50,
    "cli.md": 5,
    "formats.md": 5,
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


# Pages whose shell sessions must keep at least this many commands.
COMMANDS_AT_LEAST = {"cli.md": 100, "formats.md": 25}


def test_the_pages_with_shell_sessions_are_the_ones_expected():
    assert set(COMMANDS_AT_LEAST) <= set(SESSION_PAGES)


@pytest.mark.parametrize("page", SESSION_PAGES)
def test_page_shell_sessions_print_what_the_page_shows(page, tmp_path):
    text = (DOCS / page).read_text(encoding="utf-8")
    assert len(parse(text)) >= COMMANDS_AT_LEAST.get(page, 1)
    failures = run_page(text, str(tmp_path), where=f"docs/{page}")
    assert not failures, "\n\n".join(failures)
