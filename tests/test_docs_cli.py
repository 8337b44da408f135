"""docs/cli.md is the complete reference of the ``hgm`` command: every command and every option
the parser has is on the page, and its sessions start from the sample memory (``hgm demo
--sample``; tests/test_docs_pages.py runs them and compares what they print with the page).
The command's own help says what ``--db`` takes: a SQLite file or a PostgreSQL URL."""

from __future__ import annotations

import argparse
import re

import pytest

from hgm_engine.cli import build_parser
from tests.conftest import REPO
from tests.docs_console import parse

PAGE = REPO / "docs" / "cli.md"
TEXT = PAGE.read_text(encoding="utf-8")


def subcommands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """Every (command words, parser) pair below ``parser``, nested groups included."""
    for action in parser._actions:  # noqa: SLF001 - argparse offers no public walk
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                yield (*prefix, name), sub
                yield from subcommands(sub, (*prefix, name))


def db_options():
    for words, sub in subcommands(build_parser()):
        for action in sub._actions:  # noqa: SLF001
            if "--db" in action.option_strings:
                yield " ".join(words), action


@pytest.mark.parametrize("command,action", list(db_options()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_db_option_says_it_takes_a_postgresql_url(command, action):
    if command == "demo":  # a scenario's memory is always a new SQLite file
        assert "SQLite" in action.help
        return
    assert "SQLite file" in action.help and "postgresql://" in action.help, f"hgm {command} --db: {action.help!r}"


@pytest.mark.parametrize("server", ["serve", "mcp"])
def test_the_servers_db_option_says_it_takes_a_postgresql_url(server, capsys):
    from hgm_engine.cli import main

    assert main([server, "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "postgresql://" in help_text


def test_a_file_loaded_into_a_memory_may_join_its_nodes_to_nodes_already_there(tmp_path, capsys):
    """cli.md: into a memory that holds something, the file's nodes and edges are added, and
    its edges may point at the memory's nodes (as ``Memory.load`` allows)."""
    import json

    from hgm_engine.cli import main

    db = str(tmp_path / "m.db")
    first = tmp_path / "first.json"
    first.write_text(json.dumps({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}]}))
    more = tmp_path / "more.json"
    more.write_text(json.dumps({"format": "hgm-graph/1", "nodes": [{"id": "a", "type": "action"}],
                                "edges": [{"from": "g", "to": "a", "type": "parent_of"}]}))
    assert main(["load", str(first), "--db", db]) == 0
    assert main(["load", str(more), "--db", db]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["query", "#g.children", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ids"] == ["a"]
    assert main(["load", str(more), "--db", db]) == 1  # a is there now: every problem named
    err = capsys.readouterr().err
    assert "duplicate-id at nodes[0]: node id 'a' is already in the memory" in err
    assert "missing-node" not in err


def test_the_pages_sessions_start_from_the_sample():
    """tests/test_docs_pages.py runs them; they start from the sample memory and use its ids."""
    commands = parse(TEXT)
    assert commands[0].command == "hgm demo --sample > trip.json"
    assert commands[1].command == "hgm load trip.json --db memory.db"


def sections() -> dict[str, str]:
    """Each ``### `hgm ...` `` heading of the page with the text up to the next heading."""
    found = {}
    parts = re.split(r"^(#{2,3} .*)$", TEXT, flags=re.M)
    for heading, body in zip(parts[1::2], parts[2::2]):
        found[heading] = body
    return found


def section_of(words: str) -> str:
    for heading, body in sections().items():
        if re.search(rf"`hgm {re.escape(words)}(?=[ `])", heading):
            return heading + body
    raise AssertionError(f"docs/cli.md has no heading for hgm {words}")


def commands_with_options():
    for words, sub in subcommands(build_parser()):
        if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):  # noqa: SLF001
            continue  # a group (constraint, rules): its commands have the sections
        if words[0] in ("serve", "mcp"):
            continue  # their own parsers: below
        yield " ".join(words), sub


# Options every --db command takes, documented once, under "Which memory".
GLOBAL_OPTIONS = ("--memory",)


def test_the_global_options_are_on_the_page():
    conventions = next(body for heading, body in sections().items() if heading == "### Which memory")
    for option in GLOBAL_OPTIONS:
        assert option in conventions, f"{option} is not explained under 'Which memory'"


@pytest.mark.parametrize("command,sub", list(commands_with_options()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_command_and_every_option_has_its_place_on_the_page(command, sub):
    section = section_of(command)
    for action in sub._actions:  # noqa: SLF001
        for option in action.option_strings:
            if option in ("-h", "--help") or option in GLOBAL_OPTIONS:
                continue
            assert re.search(rf"{re.escape(option)}(?![\w-])", section), f"hgm {command} {option} is not on the page"
        if not action.option_strings and action.dest != "help":
            shown = action.metavar or action.dest.upper()
            assert (shown in section) or all(c in section for c in (action.choices or ())), (
                f"hgm {command}: argument {shown} is not on the page"
            )


def test_the_servers_options_are_on_the_page():
    from hgm_engine.server.mcp import build_parser as mcp_parser
    from hgm_engine.server.rest.command import build_parser as rest_parser

    servers = sections()["## Servers"]
    for name, parser in (("serve", rest_parser()), ("mcp", mcp_parser())):
        line = next(line for line in servers.split("\n- ") if line.startswith(f"`hgm {name}`"))
        for action in parser._actions:  # noqa: SLF001
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert re.search(rf"`{re.escape(option)}`", line), f"hgm {name} {option} is not on the page"

