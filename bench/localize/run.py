"""Evaluate hgm's path-level localization on task-plan data; write the results and the table.

    /work/venv/bin/python bench/localize/run.py [--data DIR] [--embedders hashed,minilm]
        [--scale 10000,100000] [--tune hashed] [--out bench/results/localize.json]
        [--doc docs/localization.md]

UltraTool: memory = every request not in ``test_ids.chain``, queries = those ids. TMDB:
leave-one-out over its 100 requests. Systems: the engine (default embedder; MiniLM too when
``minilm`` is listed and installed), its ablations, TF-IDF and BM25 over request text and a
flat single-step retrieval. ``--tune hashed`` also runs the leave-one-out grid on the UltraTool
*memory* side that the defaults were chosen with (never the held-out ids).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import random
import sys
import time
from typing import Any, Callable, Mapping

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import attrs  # noqa: E402

from evaluate import (  # noqa: E402
    Bm25Baseline,
    EngineSystem,
    FlatStepBaseline,
    TfidfBaseline,
    engine_loo,
    latency,
    leave_one_out_protocol,
    miss_analysis,
    split_protocol,
)
from synthetic import synthetic_paths  # noqa: E402

from hgm_engine.paths.localize import DENSE_SCORE_CONFIG, PathIndex, ScoreConfig, SentenceTransformerEmbedder
from hgm_engine.errors import LocalizationError
from hgm_engine.paths.localize.taskplan import find_taskplan_root, gold_sequence, load_taskplan  # noqa: E402

ABLATIONS: dict[str, dict[str, Any]] = {
    "no tags": {"config": {"use_tags": False}},
    "no structure": {"config": {"use_structure": False}},
    "no entry steps": {"config": {"use_steps": False}},
    "no merging": {"config": {"merge": False}},
    "no expansion": {"expand": False},
}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def engine_variants(index: PathIndex, base: ScoreConfig, vocabulary: list[str], prefix: str,
                    ablations: bool) -> dict[str, EngineSystem]:
    systems = {prefix: EngineSystem(index, config=base, tag_vocabulary=vocabulary)}
    if ablations:
        for name, change in ABLATIONS.items():
            config = attrs.evolve(base, **change.get("config", {}))
            systems[f"{prefix}, {name}"] = EngineSystem(
                index, config=config, tag_vocabulary=vocabulary, expand=change.get("expand", True))
    return systems


def make_embedder(name: str):
    if name == "hashed":
        return None, ScoreConfig()
    if name == "minilm":
        return SentenceTransformerEmbedder.bundled_minilm(), DENSE_SCORE_CONFIG
    raise SystemExit(f"unknown embedder {name!r}")


def public(result: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in result.items() if not k.startswith("_")}


def run_ultratool(data, embedders: list[str]) -> dict[str, Any]:
    memory = data.memory_rows()
    records = data.records(memory)
    vocabulary = data.tag_vocabulary
    stored = {r.signature for r in records}
    reachable = sum(1 for r in data.test_rows() if gold_sequence(r) in stored)
    out: dict[str, Any] = {
        "memory": len(memory), "queries": len(data.test_rows()),
        "best_possible_hit": reachable / len(data.test_rows()), "systems": {}, "misses": {},
    }
    systems: dict[str, Callable[[str], Any]] = {}
    engines: dict[str, tuple[PathIndex, EngineSystem]] = {}
    for embedder_name in embedders:
        embedder, base = make_embedder(embedder_name)
        start = time.perf_counter()
        index = PathIndex.from_records(records, embedder=embedder, config=base)
        log(f"ultratool index ({embedder_name}) built in {time.perf_counter() - start:.1f}s")
        prefix = "hgm" if embedder_name == "hashed" else f"hgm ({embedder_name})"
        variants = engine_variants(index, base, vocabulary, prefix, ablations=embedder_name == "hashed")
        for name, system in variants.items():
            systems[name] = system.rank
        engines[prefix] = (index, variants[prefix])
    systems["TF-IDF cosine (request text)"] = TfidfBaseline(memory).rank
    systems["BM25 (request text)"] = Bm25Baseline(memory).rank
    systems["flat step top-k (default embedder)"] = FlatStepBaseline(records).rank
    results = split_protocol(data, systems, progress=log)
    test_rows = data.test_rows()
    for prefix, (index, system) in engines.items():
        out["misses"][prefix] = miss_analysis(test_rows, results[prefix]["_ranks"], index, system)
    out["systems"] = {name: public(r) for name, r in results.items()}
    return out


def run_tmdb(data, embedders: list[str]) -> dict[str, Any]:
    rows = data.rows
    records = data.records(rows)
    systems: dict[str, Callable] = {}
    engines = {}
    for embedder_name in embedders:
        embedder, base = make_embedder(embedder_name)
        index = PathIndex.from_records(records, embedder=embedder, config=base)
        prefix = "hgm" if embedder_name == "hashed" else f"hgm ({embedder_name})"
        variants = engine_variants(index, base, data.tag_vocabulary, prefix,
                                   ablations=embedder_name == "hashed")
        for name, system in variants.items():
            systems[name] = engine_loo(system)
        engines[prefix] = (index, variants[prefix])
    for name, baseline in [("TF-IDF cosine (request text)", TfidfBaseline(rows)),
                           ("BM25 (request text)", Bm25Baseline(rows)),
                           ("flat step top-k (default embedder)", FlatStepBaseline(records))]:
        systems[name] = (lambda b: lambda row: b.rank(row["user_request"], exclude=[str(row["id"])]))(baseline)
    results = leave_one_out_protocol(rows, systems, progress=lambda m: log("tmdb " + m))
    signatures = [r.signature for r in records]
    reachable = sum(1 for i, r in enumerate(records) if signatures.count(r.signature) > 1)
    out = {"queries": len(rows), "best_possible_hit": reachable / len(rows),
           "systems": {name: public(r) for name, r in results.items()}, "misses": {}}
    for prefix, (index, system) in engines.items():
        out["misses"][prefix] = miss_analysis(rows, results[prefix]["_ranks"], index, system, loo=True)
    return out


def run_scale(data, sizes: list[int]) -> dict[str, Any]:
    seeds = data.records(data.memory_rows()) if data is not None else None
    queries = [r["user_request"] for r in data.test_rows()[:300]] if data is not None else [
        "book a flight to Shanghai", "cancel my alarm", "where is my order"] * 100
    out = {}
    for size in sizes:
        start = time.perf_counter()
        index = PathIndex.from_records(synthetic_paths(size, seeds) if seeds else synthetic_paths(size))
        built = time.perf_counter() - start
        plain = latency(index, queries, expand=False)
        expanded = latency(index, queries, expand=True)
        out[str(size)] = {"paths": size, "build_s": round(built, 1), "queries": len(queries),
                          **{k: round(v, 2) for k, v in plain.items()},
                          **{f"expand_{k}": round(v, 2) for k, v in expanded.items()}}
        log(f"scale {size}: built {built:.0f}s, p50 {plain['p50_ms']:.2f} ms, p95 {plain['p95_ms']:.2f} ms; "
            f"with expansion p50 {expanded['p50_ms']:.2f} ms, p95 {expanded['p95_ms']:.2f} ms")
        del index
    return out


TUNING_GRID: list[dict[str, Any]] = [
    {},
    {"support_power": 1.0}, {"support_power": 4.0}, {"support_top": 1}, {"support_top": 5},
    {"w_steps": 1.0}, {"w_steps": 3.0}, {"w_structure": 0.0}, {"w_structure": 0.6},
    {"w_text": 0.0}, {"w_text": 1.0}, {"w_support": 1.0}, {"w_support": 3.0},
]


def run_tuning(data, embedder_name: str, sample: int = 600) -> list[dict[str, Any]]:
    """Leave-one-out on a fixed sample of the UltraTool memory side, one knob at a time."""
    memory = data.memory_rows()
    records = data.records(memory)
    embedder, base = make_embedder(embedder_name)
    index = PathIndex.from_records(records, embedder=embedder, config=base)
    chosen = random.Random(0).sample(memory, min(sample, len(memory)))
    table = []
    for change in TUNING_GRID:
        system = EngineSystem(index, config=attrs.evolve(base, **change), tag_vocabulary=data.tag_vocabulary)
        result = leave_one_out_protocol(chosen, {"x": engine_loo(system)})["x"]
        table.append({"change": change, "hit@1": round(result["hit@1"], 4), "hit@5": round(result["hit@5"], 4),
                      "mrr@10": round(result["mrr@10"], 4)})
        log(f"tune {embedder_name} {change}: {table[-1]}")
    return table


def fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def markdown(results: dict[str, Any], command: str) -> str:
    lines = [
        "# Path-level localization: evaluation",
        "",
        "Generated by `bench/localize/run.py` (do not edit by hand; rerun it). Command:",
        "",
        f"    {command}",
        "",
        f"Machine: {results['machine']}. Data: GNN4TaskPlan conversions of UltraTool and RestBench TMDB "
        "(`../shared/data/taskplan`, read in place).",
        "",
    ]
    summary = []
    engine = results.get("ultratool", {}).get("systems", {}).get("hgm")
    if engine:
        summary.append(f"| UltraTool test hit@1 (default embedder) | >= 0.45 | {engine['hit@1']:.3f} |")
        summary.append(f"| UltraTool test hit@5 (default embedder) | >= 0.75 | {engine['hit@5']:.3f} |")
    for size, target in (("10000", 10), ("100000", 50)):
        row = results.get("scale", {}).get(size)
        if row:
            summary.append(f"| `locate` p95 at {int(size):,} paths | <= {target} ms | {row['p95_ms']} ms "
                           f"({row['expand_p95_ms']} ms with expansion) |")
    if summary:
        lines += ["## Against the targets", "", "| what | target | measured |", "|---|---|---|",
                  *summary, ""]
    columns = ["hit@1", "hit@5", "hit@10", "mrr@10", "node_f1", "edge_f1", "p50_ms", "p95_ms"]
    for name, title in [("ultratool", "UltraTool — memory: all but `test_ids.chain`; queries: the 500 test ids"),
                        ("tmdb", "TMDB — leave-one-out over the 100 requests")]:
        section = results.get(name)
        if not section:
            continue
        lines += [f"## {title}", "",
                  f"Best possible hit rate (gold structure present in memory): "
                  f"{section['best_possible_hit']:.3f}.", "",
                  "| system | " + " | ".join(columns) + " |",
                  "|---|" + "---:|" * len(columns)]
        for system, row in section["systems"].items():
            lines.append(f"| {system} | " + " | ".join(fmt(row.get(c, "")) for c in columns) + " |")
        lines.append("")
        for prefix, buckets in section.get("misses", {}).items():
            lines += [f"Where the top-5 results of **{prefix}** stand ({name}):", "",
                      "| outcome | queries |", "|---|---:|"]
            lines += [f"| {k} | {v} |" for k, v in buckets.items()]
            lines.append("")
    if results.get("scale"):
        lines += ["## Latency of `locate` (default embedder, k = 5)", "",
                  "Synthetic paths, generated deterministically from the UltraTool memory "
                  "(`bench/localize/synthetic.py`); queries: 300 UltraTool test requests. `locate` as "
                  "called by default (no expander), and with the 2-hop shared-step expander.", "",
                  "| stored paths | build (s) | p50 (ms) | p95 (ms) | p50 with expansion | p95 with expansion |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for row in results["scale"].values():
            lines.append(f"| {row['paths']} | {row['build_s']} | {row['p50_ms']} | {row['p95_ms']} | "
                         f"{row['expand_p50_ms']} | {row['expand_p95_ms']} |")
        lines.append("")
    if results.get("tuning"):
        lines += ["## Tuning (UltraTool memory side, leave-one-out on 600 stored requests)", "",
                  "| embedder | change from the defaults | hit@1 | hit@5 | mrr@10 |", "|---|---|---:|---:|---:|"]
        for embedder, table in results["tuning"].items():
            for row in table:
                lines.append(f"| {embedder} | {row['change'] or 'defaults'} | {row['hit@1']:.3f} | "
                             f"{row['hit@5']:.3f} | {row['mrr@10']:.3f} |")
        lines.append("")
    lines += [(HERE / "NOTES.md").read_text(encoding="utf-8").strip(), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="taskplan folder (default: ../shared/data/taskplan)")
    parser.add_argument("--embedders", default="hashed,minilm")
    parser.add_argument("--scale", default="10000,100000", help="stored-path counts for latency ('' to skip)")
    parser.add_argument("--tune", default="", help="embedders to run the memory-side tuning grid for (e.g. hashed)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "localize.json"))
    parser.add_argument("--doc", default=str(REPO / "docs" / "localization.md"))
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite --doc from the results already in --out, running nothing")
    args = parser.parse_args(argv)
    if args.render_only:
        results = json.loads(pathlib.Path(args.out).read_text(encoding="utf-8"))
        pathlib.Path(args.doc).write_text(markdown(results, results.get("command", "")), encoding="utf-8")
        return 0
    root = pathlib.Path(args.data) if args.data else find_taskplan_root(REPO)
    if root is None or not root.is_dir():
        print("task-plan data not found (give --data or set HGM_TASKPLAN_DATA)", file=sys.stderr)
        return 2
    embedders = [e for e in args.embedders.split(",") if e]
    usable = []
    for name in embedders:
        try:
            make_embedder(name)
            usable.append(name)
        except LocalizationError as exc:
            log(f"skipping embedder {name}: {exc.message}")
    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "embedders": usable,
    }
    ultratool = load_taskplan(root / "ultratool")
    results["ultratool"] = run_ultratool(ultratool, usable)
    results["tmdb"] = run_tmdb(load_taskplan(root / "tmdb"), usable)
    sizes = [int(s) for s in args.scale.split(",") if s]
    results["scale"] = run_scale(ultratool, sizes) if sizes else {}
    tune = [e for e in args.tune.split(",") if e in usable]
    if tune:
        results["tuning"] = {name: run_tuning(ultratool, name) for name in tune}
    command = "/work/venv/bin/python bench/localize/run.py " + " ".join(argv if argv is not None else sys.argv[1:])
    results["command"] = command.strip()
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    pathlib.Path(args.doc).write_text(markdown(results, command.strip()), encoding="utf-8")
    log(f"wrote {out} and {args.doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
