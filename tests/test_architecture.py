"""The layer contracts of docs/architecture.md, checked on every run.

import-linter checks the contracts in ``pyproject.toml`` (``[tool.importlinter]``): the engine
never imports planners, each layer imports only the layers below it, and Lark is imported by
the parser alone. The tests below add what import-linter cannot see: imports by name in
strings (``importlib``), and private names taken from another module.
"""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
ENGINE = REPO / "hgm_engine"


def _modules(package: pathlib.Path):
    for path in sorted(package.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_the_import_contracts_hold():
    # In a subprocess: lint-imports builds its import graph from the files on disk and caches
    # nothing here (no_cache), so the result cannot come from an older tree.
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_engine_never_names_planners():
    # Not even for importlib: the demos reach the scenarios through an entry-point group.
    offenders = []
    for path, tree in _modules(ENGINE):
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value == "planners" or node.value.startswith("planners."):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


@pytest.mark.parametrize("root", ["hgm_engine", "planners"])
def test_no_module_imports_another_modules_private_names(root):
    offenders = []
    for path, tree in _modules(REPO / root):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if not node.module.startswith(("hgm_engine", "planners")):
                    continue
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        offenders.append(f"{path.relative_to(REPO)}:{node.lineno} {node.module}.{alias.name}")
    assert offenders == []
