"""Evaluate hgm's path-level localization once, with the configuration frozen on development.

    .venv/bin/python bench/localize/run.py [--data DIR] [--scale 10000,100000]
        [--tuning bench/results/localize-tuning.json] [--out bench/results/localize.json]
        [--doc docs/localization.md] [--render-only]

Refuses to run without the tuning log (``bench/localize/tune.py`` writes it): the configuration
scored here is the log's ``frozen`` one, chosen on the development split alone; no test request
has been seen by then. In one run, on the same queries:

- UltraTool, the published split (memory = all but ``test_ids.chain``, queries = those 500);
- UltraTool, 5 random folds of the requests outside the development set (``protocol.py``);
- TMDB, leave-one-out over its 100 requests (too few for folds; never tuned on);

systems: hgm (frozen), hgm with the defaults before tuning, ablations of the frozen one, and the
like-for-like baselines over the fields hgm indexes with hgm's plan vote — BM25 (``bm25s``, its
``k1`` and ``b`` tuned on the same development split) and TF-IDF — plus plain TF-IDF over request
text (the README's reference figure) and a flat single-step retrieval. Every rate carries a 95%
bootstrap interval over queries; differences hgm − baseline carry the paired bootstrap interval.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import sys
import time
from typing import Any, Callable, Mapping, Sequence

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import attrs  # noqa: E402

from evaluate import (  # noqa: E402
    EngineSystem,
    FlatStepBaseline,
    PlanVoteBaseline,
    TfidfBaseline,
    engine_loo,
    latency,
    leave_one_out_protocol,
    miss_analysis,
    score_rankings,
)
from protocol import FOLD_SEED, FOLDS, bootstrap_interval, fold_splits, hits_at, paired_interval  # noqa: E402
from synthetic import synthetic_paths  # noqa: E402

from hgm_engine.paths.localize import HashedTfidfEmbedder, PathIndex, ScoreConfig  # noqa: E402
from hgm_engine.paths.localize.taskplan import find_taskplan_root, gold_sequence, load_taskplan  # noqa: E402

HGM = "hgm"
PREVIOUS = "hgm, defaults before tuning"
BM25 = "BM25 (bm25s), same fields and plan vote"
TFIDF = "TF-IDF, same fields and plan vote"
TFIDF_REQUEST = "TF-IDF cosine (request text only)"
FLAT = "flat step top-k"
ABLATIONS: dict[str, dict[str, Any]] = {
    "no tags": {"use_tags": False},
    "no structure": {"use_structure": False},
    "no entry steps": {"use_steps": False},
    "no merging": {"merge": False},
    "no vote": {"w_vote": 0.0},
    "with expansion (2 hops, 200 paths)": {"expand_limit": 200},
}
COMPARED = (BM25, TFIDF, TFIDF_REQUEST, PREVIOUS)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Setting:
    """One engine configuration from the tuning log: embedder knob and ScoreConfig fields."""

    def __init__(self, doc: Mapping[str, Any]):
        self.bigram_weight = float(doc["bigram_weight"])
        self.config = attrs.evolve(ScoreConfig(), **doc["config"])

    def index(self, records) -> PathIndex:
        return PathIndex.from_records(records, embedder=HashedTfidfEmbedder(bigram_weight=self.bigram_weight),
                                      config=self.config)


def engine(index: PathIndex, config: ScoreConfig, vocabulary) -> EngineSystem:
    return EngineSystem(index, config=config, tag_vocabulary=vocabulary, expand=config.expand_limit > 0)


def public(result: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in result.items() if not k.startswith("_")}
    for k in (1, 5):
        low, high = bootstrap_interval(hits_at(result["_ranks"], k))
        out[f"hit@{k}_ci"] = [round(low, 4), round(high, 4)]
    return out


def comparisons(results: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """hgm − each compared system on the same queries: hit@1 and hit@5, paired intervals."""
    out = {}
    ours = results[HGM]["_ranks"]
    for name in COMPARED:
        if name not in results:
            continue
        theirs = results[name]["_ranks"]
        out[name] = {f"hit@{k}": {key: round(v, 4) for key, v in
                                  paired_interval(hits_at(ours, k), hits_at(theirs, k)).items()}
                     for k in (1, 5)}
    return out


def run_split(memory_rows, query_rows, data, frozen: Setting, previous: Setting, bm25: Mapping[str, Any], *,
              ablations: bool, flat: bool, label: str, misses: bool = False) -> dict[str, Any]:
    records = data.records(memory_rows)
    vocabulary = data.tag_vocabulary
    stored = {r.signature for r in records}
    systems: dict[str, Callable[[str], Any]] = {}
    index = frozen.index(records)
    main = engine(index, frozen.config, vocabulary)
    systems[HGM] = main.rank
    if ablations:
        for name, change in ABLATIONS.items():
            config = attrs.evolve(frozen.config, **change)
            systems[f"hgm, {name}"] = engine(index, config, vocabulary).rank
    if (previous.bigram_weight, previous.config) == (frozen.bigram_weight, frozen.config):
        systems[PREVIOUS] = main.rank
    else:
        old_index = index if previous.bigram_weight == frozen.bigram_weight else previous.index(records)
        systems[PREVIOUS] = engine(old_index, previous.config, vocabulary).rank
    systems[BM25] = PlanVoteBaseline(records, scorer="bm25", k1=bm25["k1"], b=bm25["b"], config=frozen.config).rank
    systems[TFIDF] = PlanVoteBaseline(records, scorer="tfidf", config=frozen.config).rank
    systems[TFIDF_REQUEST] = TfidfBaseline(memory_rows).rank
    if flat:
        systems[FLAT] = FlatStepBaseline(records).rank
    results = {}
    for name, rank in systems.items():
        rankings, latencies = [], []
        for row in query_rows:
            start = time.perf_counter()
            rankings.append(rank(row["user_request"]))
            latencies.append(time.perf_counter() - start)
        results[name] = score_rankings(query_rows, rankings, latencies)
        log(f"{label} {name}: hit@1 {results[name]['hit@1']:.3f} hit@5 {results[name]['hit@5']:.3f}")
    reachable = sum(1 for r in query_rows if gold_sequence(r) in stored) / max(1, len(query_rows))
    out = {"memory": len(memory_rows), "queries": len(query_rows), "best_possible_hit": round(reachable, 4),
           "systems": {name: public(r) for name, r in results.items()},
           "hgm_minus": comparisons(results), "_ranks": {n: r["_ranks"] for n, r in results.items()}}
    if misses:
        out["misses"] = miss_analysis(query_rows, results[HGM]["_ranks"], index, main)
    return out


def run_ultratool(data, frozen: Setting, previous: Setting, bm25) -> dict[str, Any]:
    published = run_split(data.memory_rows(), data.test_rows(), data, frozen, previous, bm25,
                          ablations=True, flat=True, label="published", misses=True)
    folds = []
    for i, (memory, queries) in enumerate(fold_splits(data)):
        folds.append(run_split(memory, queries, data, frozen, previous, bm25, ablations=True, flat=False,
                               label=f"fold {i + 1}"))
    pooled: dict[str, Any] = {}
    names = list(folds[0]["systems"])
    for name in names:
        ranks = [r for fold in folds for r in fold["_ranks"][name]]
        per_fold = [fold["systems"][name]["hit@5"] for fold in folds]
        pooled[name] = {
            "mean_hit@5_over_folds": round(sum(per_fold) / len(per_fold), 4),
            "hit@5_ci": [round(x, 4) for x in bootstrap_interval(hits_at(ranks, 5))],
            "mean_hit@1_over_folds": round(sum(f["systems"][name]["hit@1"] for f in folds) / len(folds), 4),
            "hit@1_ci": [round(x, 4) for x in bootstrap_interval(hits_at(ranks, 1))],
            "mean_mrr@10_over_folds": round(sum(f["systems"][name]["mrr@10"] for f in folds) / len(folds), 4),
        }
    ours = [r for fold in folds for r in fold["_ranks"][HGM]]
    pooled_diff = {}
    for name in COMPARED:
        theirs = [r for fold in folds for r in fold["_ranks"][name]]
        pooled_diff[name] = {f"hit@{k}": {key: round(v, 4) for key, v in
                                          paired_interval(hits_at(ours, k), hits_at(theirs, k)).items()}
                             for k in (1, 5)}
    for split in [published, *folds]:
        split.pop("_ranks")
    return {"published": published, "folds": folds,
            "folds_protocol": {"folds": FOLDS, "seed": FOLD_SEED, "queries": sum(f["queries"] for f in folds)},
            "over_folds": pooled, "over_folds_hgm_minus": pooled_diff}


def run_tmdb(data, frozen: Setting, previous: Setting, bm25) -> dict[str, Any]:
    """Leave-one-out: the engine takes the query's path out of its index (so its IDF and step
    profiles never see it); the baselines are built again on the other 99 for every query."""
    rows = data.rows
    records = data.records(rows)
    index = frozen.index(records)
    main = engine(index, frozen.config, data.tag_vocabulary)
    systems: dict[str, Callable] = {HGM: engine_loo(main)}
    for name, change in ABLATIONS.items():
        systems[f"hgm, {name}"] = engine_loo(engine(index, attrs.evolve(frozen.config, **change), data.tag_vocabulary))
    old_index = index if previous.bigram_weight == frozen.bigram_weight else previous.index(records)
    systems[PREVIOUS] = engine_loo(engine(old_index, previous.config, data.tag_vocabulary))
    others = {i: [r for j, r in enumerate(records) if j != i] for i in range(len(records))}
    position = {str(r["id"]): i for i, r in enumerate(rows)}

    def rebuilt(make: Callable[[list], Any]) -> Callable:
        return lambda row: make(others[position[str(row["id"])]]).rank(row["user_request"])

    systems[BM25] = rebuilt(lambda rs: PlanVoteBaseline(rs, scorer="bm25", k1=bm25["k1"], b=bm25["b"],
                                                        config=frozen.config))
    systems[TFIDF] = rebuilt(lambda rs: PlanVoteBaseline(rs, scorer="tfidf", config=frozen.config))
    row_others = {str(r["id"]): [x for x in rows if x is not r] for r in rows}
    systems[TFIDF_REQUEST] = lambda row: TfidfBaseline(row_others[str(row["id"])]).rank(row["user_request"])
    flat = FlatStepBaseline(records)
    systems[FLAT] = lambda row: flat.rank(row["user_request"], exclude=[str(row["id"])])
    results = leave_one_out_protocol(rows, systems, progress=lambda m: log("tmdb " + m))
    signatures = [r.signature for r in records]
    reachable = sum(1 for r in records if signatures.count(r.signature) > 1) / len(records)
    return {"queries": len(rows), "best_possible_hit": reachable,
            "systems": {name: public(r) for name, r in results.items()},
            "hgm_minus": comparisons(results),
            "misses": miss_analysis(rows, results[HGM]["_ranks"], index, main, loo=True)}


def run_scale(data, sizes: Sequence[int], config: ScoreConfig) -> dict[str, Any]:
    seeds = data.records(data.memory_rows())
    queries = [r["user_request"] for r in data.test_rows()[:300]]
    out = {}
    for size in sizes:
        start = time.perf_counter()
        index = PathIndex.from_records(synthetic_paths(size, seeds), config=config)
        built = time.perf_counter() - start
        plain = latency(index, queries, expand=False)
        expanded = latency(index, queries, expand=True)
        out[str(size)] = {"paths": size, "build_s": round(built, 1), "queries": len(queries),
                          **{k: round(v, 2) for k, v in plain.items()},
                          **{f"expand_{k}": round(v, 2) for k, v in expanded.items()}}
        log(f"scale {size}: built {built:.0f}s, p95 {plain['p95_ms']:.2f} ms ({expanded['p95_ms']:.2f} expanded)")
        del index
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="taskplan folder (default: ../shared/data/taskplan)")
    parser.add_argument("--scale", default="10000,100000", help="stored-path counts for latency ('' to skip)")
    parser.add_argument("--tuning", default=str(REPO / "bench" / "results" / "localize-tuning.json"))
    parser.add_argument("--reopen", default=str(REPO / "bench" / "results" / "localize-reopen.json"))
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "localize.json"))
    parser.add_argument("--doc", default=str(REPO / "docs" / "localization.md"))
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite --doc from the results already in --out, running nothing")
    args = parser.parse_args(argv)
    from report import markdown

    tuning_path = pathlib.Path(args.tuning)
    reopen_path = pathlib.Path(args.reopen)
    reopen = json.loads(reopen_path.read_text(encoding="utf-8")) if reopen_path.exists() else {}
    if args.render_only:
        results = json.loads(pathlib.Path(args.out).read_text(encoding="utf-8"))
        tuning = json.loads(tuning_path.read_text(encoding="utf-8"))
        pathlib.Path(args.doc).write_text(markdown(results, tuning, reopen), encoding="utf-8")
        return 0
    if not tuning_path.exists():
        print(f"no tuning log at {tuning_path}: run bench/localize/tune.py first (the configuration is "
              "frozen on development before any test request is scored)", file=sys.stderr)
        return 2
    tuning = json.loads(tuning_path.read_text(encoding="utf-8"))
    root = pathlib.Path(args.data) if args.data else find_taskplan_root(REPO)
    if root is None or not root.is_dir():
        print("task-plan data not found (give --data or set HGM_TASKPLAN_DATA)", file=sys.stderr)
        return 2
    frozen, previous = Setting(tuning["frozen"]["setting"]), Setting(tuning["start"]["setting"])
    bm25 = tuning["baselines_frozen"]["bm25"]
    default_is_frozen = (ScoreConfig() == frozen.config
                         and HashedTfidfEmbedder().bigram_weight == frozen.bigram_weight)
    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "frozen": tuning["frozen"], "engine_default_is_frozen": default_is_frozen,
        "bm25": {"k1": bm25["k1"], "b": bm25["b"]},
    }
    ultratool = load_taskplan(root / "ultratool")
    results["ultratool"] = run_ultratool(ultratool, frozen, previous, bm25)
    results["tmdb"] = run_tmdb(load_taskplan(root / "tmdb"), frozen, previous, bm25)
    sizes = [int(s) for s in args.scale.split(",") if s]
    results["scale"] = run_scale(ultratool, sizes, frozen.config) if sizes else {}
    command = ".venv/bin/python bench/localize/run.py " + " ".join(argv if argv is not None else sys.argv[1:])
    results["command"] = command.strip()
    out = pathlib.Path(args.out)
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    pathlib.Path(args.doc).write_text(markdown(results, tuning, reopen), encoding="utf-8")
    log(f"wrote {out} and {args.doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
