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
import re

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
    "formats.md": 3,
    "integrations.md": 25,
    "language.md": 40,
    "llm.md": 10,
    "paths.md": 50,
    "planners.md": 20,
    "retrieval.md": 6,
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
COMMANDS_AT_LEAST = {"cli.md": 100, "formats.md": 25, "postgres.md": 15}


def test_the_pages_with_shell_sessions_are_the_ones_expected():
    assert set(COMMANDS_AT_LEAST) <= set(SESSION_PAGES)


# docs/postgres.md names its server postgresql://hgm@localhost:5432/ and its database memory.
PAGE_SERVER = "postgresql://hgm@localhost:5432/"


def postgres_substitutions(request) -> tuple[tuple[str, str], ...]:
    """(as on the page, as run) pairs that point docs/postgres.md at the suite's server and a
    new, empty database on it (tests/conftest.py; skipped without a server, as the store's
    other tests are)."""
    from tests.conftest import create_postgres_database

    server = request.getfixturevalue("postgres_server")
    netloc = server.split("://", 1)[1].split("/", 1)[0]
    user, _, host = netloc.rpartition("@")
    user = user.split(":", 1)[0]
    real = f"postgresql://{netloc}/"
    database = create_postgres_database(server, "hgm_docs").split("?", 1)[0]
    return (
        (f"{PAGE_SERVER}memory", database),
        ("postgresql://hgm:secret@localhost:5432/", f"postgresql://{user}:secret@{host}/"),
        ("postgresql://hgm:***@localhost:5432/", f"postgresql://{user}:***@{host}/"),
        (PAGE_SERVER, real),
    )


@pytest.mark.parametrize("page", SESSION_PAGES)
def test_page_shell_sessions_print_what_the_page_shows(page, tmp_path, request):
    text = (DOCS / page).read_text(encoding="utf-8")
    assert len(parse(text)) >= COMMANDS_AT_LEAST.get(page, 1)
    substitutions = postgres_substitutions(request) if PAGE_SERVER in text else ()
    failures = run_page(text, str(tmp_path), where=f"docs/{page}", substitutions=substitutions)
    assert not failures, "\n\n".join(failures)


# -- what the pages point at ------------------------------------------------------------------

REPO = DOCS.parent
# Pages and the README refer only to what ships with the project. docs/localization.md is
# written by bench/localize and says where its data sets were read from.
LINKED = sorted([*DOCS.glob("*.md"), REPO / "README.md"])
OUTSIDE = re.compile(r"spec/|DESIGN\.md|DESIGN §|\.\./shared")


def heading_anchors(text: str) -> set[str]:
    """The anchors a Markdown renderer gives the headings of ``text`` (GitHub's rule: lower
    case, punctuation dropped, spaces as dashes)."""
    found = set()
    for line in text.splitlines():
        if re.match(r"#{1,6} ", line):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", LINKED, ids=lambda p: p.name)
def test_every_relative_link_points_at_a_file_and_heading_that_ship(page):
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code holds no links
    text = re.sub(r"`[^`\n]*`", "", text)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        assert destination.exists(), f"{page.name} links to {target}, which is not in the repository"
        assert REPO in destination.parents or destination == REPO, f"{page.name} links outside the repository: {target}"
        if anchor and destination.suffix == ".md":
            assert anchor in heading_anchors(destination.read_text(encoding="utf-8")), f"{page.name}: no heading for {target}"


@pytest.mark.parametrize("page", [p for p in LINKED if p.name != "localization.md"], ids=lambda p: p.name)
def test_no_page_refers_to_files_outside_the_repository(page):
    found = [line for line in page.read_text(encoding="utf-8").splitlines() if OUTSIDE.search(line)]
    assert not found, f"{page.name} refers to files that do not ship: {found}"
