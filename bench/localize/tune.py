"""Tune localization on the development split only, freeze the result, and log every trial.

    .venv/bin/python bench/localize/tune.py [--data DIR] [--out bench/results/localize-tuning.json]

Development = :func:`protocol.dev_rows` (1,000 requests of the published split's *memory side*),
each located against the rest of that memory side (leave-one-out: its own path leaves the index
first). No test request of the published split, of the random folds or of TMDB is read here.

The search is coordinate ascent from ``START`` (the defaults before this tuning): the knobs are
tried one at a time, in the order of ``STAGES``; a value is kept when it raises development hit@5
by at least ``MARGIN`` (two of the 1,000 queries), or keeps hit@5 and raises MRR@10 by as much;
graph expansion is switched off unless it is better by that margin, so it stays on only if it
helps. The stages run ``PASSES`` times (once, for time). Every configuration tried is logged with its
development figures. The like-for-like baselines are tuned the same way afterwards, on the same
queries, with hgm's frozen plan vote (BM25's ``k1`` and ``b``).

The frozen configuration is written under ``"frozen"``; ``bench/localize/run.py`` evaluates it
and refuses to run when it is missing. It becomes the engine's default (``ScoreConfig()`` and
the default embedder) only if it beats the old defaults on development; ``"frozen_wins"`` says
whether it did.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import sys
import time
from typing import Any, Mapping

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import attrs  # noqa: E402

from evaluate import EngineSystem, PlanVoteBaseline, engine_loo, leave_one_out_protocol  # noqa: E402
from protocol import DEV_SEED, DEV_SIZE, dev_rows  # noqa: E402

from hgm_engine.paths.localize import HashedTfidfEmbedder, PathIndex, ScoreConfig  # noqa: E402
from hgm_engine.paths.localize.taskplan import find_taskplan_root, load_taskplan  # noqa: E402

# The defaults before this tuning (commit 7168f25), expansion on as the old harness ran it; every
# tuned knob is listed, so the start does not move when ScoreConfig's defaults do.
START: dict[str, Any] = {
    "bigram_weight": 0.0,
    "config": {"w_text": 2.0, "w_support": 2.0, "w_steps": 2.0, "w_structure": 0.3, "w_tags": 0.2,
               "support_top": 3, "support_power": 2.0, "recall_paths": 200, "recall_steps": 300,
               "expand_limit": 200,
               # the components added with this tuning, off as they were before it
               "w_vote": 0.0, "vote_top": 20, "vote_power": 1.0, "vote_pairs": False, "w_order": 0.0},
}

# (knob, values); a knob is a ScoreConfig field or "bigram_weight" (the default embedder's).
STAGES: list[tuple[str, list[Any]]] = [
    ("expand_limit", [200, 0]),
    ("w_vote", [0.0, 0.5, 1.0, 2.0]),
    ("vote_pairs", [False, True]),
    ("vote_top", [10, 20, 40]),
    ("vote_power", [1.0, 2.0, 4.0]),
    ("w_order", [0.0, 0.25, 0.5]),
    ("bigram_weight", [0.0, 0.25, 0.5, 1.0]),
    ("support_top", [1, 3, 5, 8]),
    ("support_power", [1.0, 2.0, 4.0, 8.0]),
    ("w_text", [1.0, 2.0, 3.0, 4.0, 6.0]),
    ("w_support", [1.0, 2.0, 3.0, 4.0]),
    ("w_steps", [1.0, 1.5, 2.0, 3.0]),
    ("w_structure", [0.0, 0.15, 0.3, 0.6, 1.0]),
    ("w_tags", [0.0, 0.2, 0.5, 1.0]),
    ("recall_paths", [100, 200, 400]),
    ("recall_steps", [150, 300, 600]),
]
PASSES = 1   # one pass over the stages (a pass takes 10-30 minutes on the shared 2-core machine)
# A value that wins ties: graph expansion must *raise* development scores to stay on.
PREFERRED_ON_TIES: dict[str, Any] = {"expand_limit": 0}
BM25_GRID = {"k1": [0.6, 0.9, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0], "b": [0.3, 0.5, 0.75, 0.9, 1.0]}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rounded(result: Mapping[str, Any]) -> dict[str, float]:
    return {k: round(result[k], 4) for k in ("hit@1", "hit@5", "hit@10", "mrr@10")}


def key(result: Mapping[str, float]) -> tuple[float, float]:
    return (result["hit@5"], result["mrr@10"])


# A change must move at least two of the 1,000 development queries: hit@5 up by MARGIN, or
# hit@5 equal and MRR@10 up by MARGIN. Smaller moves are noise, and chasing them overfits.
MARGIN = 0.002


def better(new: Mapping[str, float], old: Mapping[str, float]) -> bool:
    if new["hit@5"] >= old["hit@5"] + MARGIN - 1e-9:
        return True
    return new["hit@5"] >= old["hit@5"] - 1e-9 and new["mrr@10"] >= old["mrr@10"] + MARGIN - 1e-9


def not_worse(new: Mapping[str, float], old: Mapping[str, float]) -> bool:
    return not better(old, new) and new["hit@5"] >= old["hit@5"] - 1e-9


def config_of(setting: Mapping[str, Any]) -> ScoreConfig:
    return attrs.evolve(ScoreConfig(), **setting["config"])


class DevBench:
    """Leave-one-out on the development requests, one index per embedder setting."""

    def __init__(self, data: Any):
        self.data = data
        self.memory = data.memory_rows()
        self.records = data.records(self.memory)
        self.dev = dev_rows(data)
        self.indexes: dict[float, PathIndex] = {}
        self.cache: dict[str, dict[str, float]] = {}

    def index(self, bigram_weight: float) -> PathIndex:
        if bigram_weight not in self.indexes:
            self.indexes.clear()   # one at a time: each holds the whole memory side
            self.indexes[bigram_weight] = PathIndex.from_records(
                self.records, embedder=HashedTfidfEmbedder(bigram_weight=bigram_weight))
        return self.indexes[bigram_weight]

    def engine(self, setting: Mapping[str, Any]) -> dict[str, float]:
        name = json.dumps(setting, sort_keys=True)
        if name not in self.cache:
            config = config_of(setting)
            index = self.index(setting["bigram_weight"])
            system = EngineSystem(index, config=config, tag_vocabulary=self.data.tag_vocabulary,
                                  expand=config.expand_limit > 0)
            result = leave_one_out_protocol(self.dev, {"x": engine_loo(system)})["x"]
            self.cache[name] = rounded(result)
        return self.cache[name]

    def baseline(self, scorer: str, config: ScoreConfig, **knobs: float) -> dict[str, float]:
        system = PlanVoteBaseline(self.records, scorer=scorer, config=config, **knobs)
        result = leave_one_out_protocol(
            self.dev, {"x": lambda row: system.rank(row["user_request"], exclude=[str(row["id"])])})["x"]
        return rounded(result)


def with_knob(setting: Mapping[str, Any], knob: str, value: Any) -> dict[str, Any]:
    new = {"bigram_weight": setting["bigram_weight"], "config": dict(setting["config"])}
    if knob == "bigram_weight":
        new["bigram_weight"] = value
    else:
        new["config"][knob] = value
    return new


def tune(bench: DevBench) -> dict[str, Any]:
    trials: list[dict[str, Any]] = []

    def trial(setting: Mapping[str, Any], note: str) -> dict[str, float]:
        start = time.perf_counter()
        result = bench.engine(setting)
        trials.append({"n": len(trials) + 1, "note": note, "setting": setting, "dev": result,
                       "seconds": round(time.perf_counter() - start, 1)})
        log(f"trial {len(trials)} {note}: {result}")
        return result

    current = json.loads(json.dumps(START))
    best = trial(current, "start: the defaults before tuning")
    start_result = best
    for round_no in range(1, PASSES + 1):
        changed = False
        for knob, values in STAGES:
            present = current["bigram_weight"] if knob == "bigram_weight" else current["config"][knob]
            for value in values:
                if value == present:
                    continue
                candidate = with_knob(current, knob, value)
                result = trial(candidate, f"pass {round_no}: {knob} = {value}")
                preferred = PREFERRED_ON_TIES.get(knob) == value
                if better(result, best) or (preferred and not_worse(result, best)):
                    best, current, present, changed = result, candidate, value, True
            log(f"pass {round_no}: {knob} stays {present} (dev hit@5 {best['hit@5']})")
        if not changed:
            break
    return {
        "trials": trials,
        "start": {"setting": START, "dev": start_result},
        "frozen": {"setting": current, "dev": best},
        "frozen_wins": better(best, start_result),
        **tune_baselines(bench, config_of(current)),
    }


def tune_baselines(bench: DevBench, config: ScoreConfig) -> dict[str, Any]:
    """The like-for-like baselines on the same development queries, with hgm's frozen plan vote:
    every (k1, b) of ``BM25_GRID`` for BM25 (the best by hit@5, then MRR@10, is kept); TF-IDF has
    no knob."""
    baselines: dict[str, Any] = {"bm25": [], "tfidf": []}
    bm25_best = None
    for k1 in BM25_GRID["k1"]:
        for b in BM25_GRID["b"]:
            result = bench.baseline("bm25", config, k1=k1, b=b)
            baselines["bm25"].append({"k1": k1, "b": b, "dev": result})
            log(f"bm25 k1={k1} b={b}: {result}")
            if bm25_best is None or key(result) > key(bm25_best["dev"]):
                bm25_best = baselines["bm25"][-1]
    tfidf = bench.baseline("tfidf", config)
    baselines["tfidf"].append({"dev": tfidf})
    log(f"tfidf: {tfidf}")
    return {"baselines": baselines,
            "baselines_frozen": {"bm25": {"k1": bm25_best["k1"], "b": bm25_best["b"], "dev": bm25_best["dev"]},
                                 "tfidf": {"dev": tfidf}}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="taskplan folder (default: ../shared/data/taskplan)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "localize-tuning.json"))
    parser.add_argument("--baselines-only", action="store_true",
                        help="keep the engine trials and frozen configuration of --out; tune the baselines again "
                             "(on the same development queries) and rewrite their part of the log")
    args = parser.parse_args(argv)
    root = pathlib.Path(args.data) if args.data else find_taskplan_root(REPO)
    if root is None or not (root / "ultratool").is_dir():
        print("task-plan data not found (give --data or set HGM_TASKPLAN_DATA)", file=sys.stderr)
        return 2
    bench = DevBench(load_taskplan(root / "ultratool"))
    if args.baselines_only:
        out = pathlib.Path(args.out)
        doc = json.loads(out.read_text(encoding="utf-8"))
        started = time.time()
        doc.update(tune_baselines(bench, config_of(doc["frozen"]["setting"])))
        doc["baselines_grid"] = BM25_GRID
        doc["baselines_command"] = "bench/localize/tune.py " + " ".join(argv if argv is not None else sys.argv[1:])
        doc["baselines_minutes"] = round((time.time() - started) / 60, 1)
        out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        log(f"wrote {out}: bm25 {doc['baselines_frozen']['bm25']}")
        return 0
    started = time.time()
    doc = {
        "what": "localization tuning on the development split (UltraTool memory side, leave-one-out)",
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "protocol": {"dev_size": len(bench.dev), "dev_seed": DEV_SEED, "requested_dev_size": DEV_SIZE,
                     "memory_side": len(bench.memory), "stages": STAGES, "passes": PASSES,
                     "rule": "coordinate ascent; keep a value when it raises dev hit@5 by >= margin, or keeps "
                             "hit@5 and raises MRR@10 by >= margin; a preferred_on_ties value wins unless "
                             "the other is better by that margin",
                     "margin": MARGIN,
                     "preferred_on_ties": PREFERRED_ON_TIES},
        **tune(bench),
        "baselines_grid": BM25_GRID,
        "command": "bench/localize/tune.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    doc["minutes"] = round((time.time() - started) / 60, 1)
    out = pathlib.Path(args.out)
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {out}: frozen {doc['frozen']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
