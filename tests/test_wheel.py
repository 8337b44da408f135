"""The wheel carries the grammar (the only definition of the syntax), the package data (the
HTML picture's page, style and script; the sample memory), both packages, and the testing kit
with its extra (``hgm[testing]``)."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from tests.conftest import REPO


def test_wheel_ships_the_grammar_package_data_and_packages(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("hgm-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert "hgm_engine/grammar/hgm.lark" in names
        assert archive.read("hgm_engine/grammar/hgm.lark") == (REPO / "grammar" / "hgm.lark").read_bytes()
        assert "hgm_engine/__init__.py" in names
        for asset in ("page.html", "style.css", "script.js"):
            shipped = f"hgm_engine/render/assets/{asset}"
            assert shipped in names, shipped
            assert archive.read(shipped) == (REPO / shipped).read_bytes()
        assert "hgm_engine/data/sample_memory.json" in names
        assert "planners/__init__.py" in names
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "hgm = hgm_engine.cli:main" in archive.read(entry_points).decode()
        # hgm[testing]: the kit of docs/testing.md, and hypothesis with it
        assert {"hgm_engine/testing/__init__.py", "hgm_engine/testing/check.py", "hgm_engine/testing/stores.py"} <= names
        metadata = archive.read(next(n for n in names if n.endswith("METADATA"))).decode()
        assert "Provides-Extra: testing" in metadata
        assert any(line.startswith("Requires-Dist: hypothesis") and "extra == 'testing'" in line.replace('"', "'")
                   for line in metadata.splitlines())
