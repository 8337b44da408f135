"""`hgm serve` and `hgm mcp` hand their options to the servers' own parsers."""

from __future__ import annotations

from hgm_engine.cli import main


def test_hgm_serve_help_is_the_rest_servers_help(capsys):
    assert main(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: hgm serve" in out and "--token" in out and "--db" in out


def test_hgm_mcp_help_is_the_mcp_servers_help(capsys):
    assert main(["mcp", "--help"]) == 0
    assert "usage: hgm mcp" in capsys.readouterr().out


def test_servers_are_listed_in_the_main_help(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "serve" in out and "mcp" in out
