"""docs/cli.md is the complete reference of the ``hgm`` command: every command and every option
the parser has is on the page, and every example on it runs against the sample memory
(``hgm demo --sample``) and prints what the page shows. The command's own help says what
``--db`` takes: a SQLite file or a PostgreSQL URL."""

from __future__ import annotations

import argparse

import pytest

from hgm_engine.cli import build_parser


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
