"""Every answer of the path index on a small fixed workload, to the last digit, for comparing
two versions of the engine (a refactoring must not change one).

    PYTHONHASHSEED=0 .venv/bin/python bench/localize/answers.py OUT.json [--queries 150] [--engine DIR]
    cmp BEFORE.json AFTER.json

``--engine DIR`` runs the ``hgm_engine`` found in DIR (e.g. ``git archive REV hgm_engine grammar``
unpacked there) instead of this checkout's. The workload, on the task-plan data: UltraTool's
published split (memory: all but the test requests) and TMDB, the first ``--queries`` requests
each located three ways (tags and k=10; with the shared-step expansion; excluding the request's
own path); the same after a save to bytes and a load, after ``to_state``/``from_state``, and
after removing and adding again 30 paths; and TMDB with a dense stand-in embedder (hashed word
vectors) through the same round trips. Each answer is written as ``repr`` of its
``LocateResult`` (every score unrounded). Fix ``PYTHONHASHSEED``: the plan vote sums over a set
of step names, whose order moves the last bit of a score from one process to the next.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent


def _dense_embedder():
    class HashedDense:
        """Word vectors from a hash: a dense embedder with no model, the same in every run."""

        name, sparse = "hashed-dense-24", False

        def _vector(self, text):
            vector = [0.0] * 24
            for word in text.lower().split():
                digest = hashlib.md5(word.encode()).digest()
                for i in range(24):
                    vector[i] += (digest[i % 16] - 127.5) / 128
            return vector

        def embed_documents(self, texts):
            return [self._vector(t) for t in texts]

        def embed_query(self, text):
            return self._vector(text)

    return HashedDense()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--engine", help="a folder holding the hgm_engine to run (default: this checkout's)")
    parser.add_argument("--data", help="taskplan folder (default: ../shared/data/taskplan)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(HERE))
    if args.engine:
        sys.path.insert(0, str(pathlib.Path(args.engine).resolve()))
    import attrs

    from hgm_engine.paths.localize import HashedTfidfEmbedder, PathIndex, ScoreConfig
    from hgm_engine.paths.localize.taskplan import find_taskplan_root, load_taskplan, suggest_tags

    tuning = json.loads((REPO / "bench" / "results" / "localize-tuning.json").read_text(encoding="utf-8"))
    setting = tuning["frozen"]["setting"]
    config = attrs.evolve(ScoreConfig(), **setting["config"])

    def embedder():
        return HashedTfidfEmbedder(bigram_weight=float(setting["bigram_weight"]))

    root = pathlib.Path(args.data) if args.data else find_taskplan_root(REPO)
    n = args.queries
    out: dict[str, list] = {}
    start = time.process_time()
    for name in ("ultratool", "tmdb"):
        data = load_taskplan(root / name)
        memory, queries = (data.memory_rows(), data.test_rows()[:n]) if name == "ultratool" else (data.rows, data.rows[:n])
        records = data.records(memory)
        index = PathIndex.from_records(records, embedder=embedder(), config=config)
        expand = index.shared_step_expander(2)
        answers = []
        for row in queries:
            text = row["user_request"]
            tags = suggest_tags(text, data.tag_vocabulary)
            answers.append(repr(index.locate(text, tags, 10, config=config)))
            answers.append(repr(index.locate(text, tags, 10, expand=expand, config=config.with_expansion())))
            answers.append(repr(index.locate(text, (), 5, exclude=[str(row["id"])])))
        out[name] = answers
        loaded = PathIndex.from_bytes(index.to_bytes(), embedder=embedder())
        from_state = PathIndex.from_state(index.to_state(), embedder=embedder())
        again = []
        for row in queries[:40]:
            again.append(repr(loaded.locate(row["user_request"], (), 10)))
            again.append(repr(from_state.locate(row["user_request"], (), 10)))
        for record in records[:30]:
            loaded.remove(record.id)
        for record in records[:30]:
            loaded.add(record)
        again += [repr(loaded.locate(row["user_request"], (), 10)) for row in queries[:40]]
        again += [loaded.ids()[:50], len(loaded.to_bytes())]
        out[name + " after save, load, remove and add"] = again
    data = load_taskplan(root / "tmdb")
    records = data.records(data.rows)
    index = PathIndex.from_records(records, embedder=_dense_embedder())
    dense = [repr(index.locate(r["user_request"], (), 5, exclude=[str(r["id"])])) for r in data.rows]
    loaded = PathIndex.from_bytes(index.to_bytes(), embedder=_dense_embedder())
    from_state = PathIndex.from_state(index.to_state(), embedder=_dense_embedder())
    for row in data.rows[:30]:
        dense.append(repr(loaded.locate(row["user_request"], (), 5)))
        dense.append(repr(from_state.locate(row["user_request"], (), 5)))
    for record in records[:20]:
        loaded.remove(record.id)
    for record in records[:20]:
        loaded.add(record)
    loaded.update(records[30])
    dense += [repr(loaded.locate(r["user_request"], (), 5)) for r in data.rows[:30]]
    out["tmdb, dense embedder"] = dense
    pathlib.Path(args.out).write_text(json.dumps(out, indent=0) + "\n", encoding="utf-8")
    import hgm_engine

    engine = pathlib.Path(hgm_engine.__file__).parent.parent
    print(f"{sum(len(v) for v in out.values())} answers of the engine in {engine} in "
          f"{time.process_time() - start:.1f} s of CPU: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
