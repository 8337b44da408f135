"""`hgm serve` and `hgm mcp` hand their options to the servers' own parsers."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from hgm_engine.cli import main

REPO = pathlib.Path(__file__).resolve().parents[1]


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


def _without(module: str, *argv: str, tmp_path) -> "subprocess.CompletedProcess[str]":
    """``hgm ARGV`` in a Python where ``module`` cannot be imported (as without the extra)."""
    code = f"import sys; sys.modules[{module!r}] = None; from hgm_engine.cli import main; sys.exit(main({list(argv)!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )


# The extra of the hgm-engine distribution each server needs (pyproject.toml).
EXTRA = {"serve": "server", "mcp": "mcp"}


@pytest.mark.parametrize(
    "command,module", [("mcp", "anyio"), ("mcp", "mcp"), ("serve", "uvicorn"), ("serve", "fastapi")]
)
def test_a_server_without_the_server_extra_says_how_to_install_it(tmp_path, command, module):
    result = _without(module, command, "--db", str(tmp_path / "m.db"), tmp_path=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert f"hgm {command}: needs the {EXTRA[command]} extra: pip install 'hgm-engine[{EXTRA[command]}]'" in result.stderr
    assert not (tmp_path / "m.db").exists()  # nothing opened or created


@pytest.mark.parametrize("module", ["hgm_engine.server.mcp", "hgm_engine.server.mcp_server"])
def test_the_mcp_server_runs_as_a_module_under_its_name_and_its_old_name(tmp_path, module):
    # `python -m hgm_engine.server.mcp` is the documented command; `...mcp_server` is the name
    # MCP hosts were configured with before the server became a package, and keeps working.
    result = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: hgm mcp") and "--transport" in result.stdout
