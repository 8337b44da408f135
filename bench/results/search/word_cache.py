"""How many distinct words real text has, for the bound of the word -> term cache of
``hgm_engine.model.text`` (sixth session): the words of every string of the UltraTool data
(requests, plans, tool descriptions; ``../shared/data/taskplan/ultratool``) and of this
repository's own documentation (``docs/*.md``, ``README.md``), split as ``words()`` splits.

Reports, per corpus: word occurrences, distinct words, the share of occurrences the most
frequent 1,000 / 10,000 words cover, and the lookups a cache of ``_STEM_CACHE_SIZE`` words
answers (every occurrence after a word's first, when the distinct words fit).

    python bench/results/search/word_cache.py --out bench/results/search/word-cache-s6.json
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hgm_engine.model import text  # noqa: E402


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def ultratool(directory: pathlib.Path):
    for path in sorted(directory.glob("*.json")):
        raw = path.read_text(encoding="utf-8")
        try:
            yield from strings(json.loads(raw))
        except json.JSONDecodeError:  # one JSON document per line
            for line in raw.splitlines():
                if line.strip():
                    yield from strings(json.loads(line))


def report(texts) -> dict:
    counts: collections.Counter = collections.Counter()
    for item in texts:
        counts.update(text.words(item))
    total = sum(counts.values())
    ranked = [n for _, n in counts.most_common()]
    fits = len(counts) <= text._STEM_CACHE_SIZE  # noqa: SLF001 (the bound being measured)
    return {
        "occurrences": total,
        "distinct": len(counts),
        "top_1000_share": round(sum(ranked[:1000]) / total, 4),
        "top_10000_share": round(sum(ranked[:10000]) / total, 4),
        "cache_size": text._STEM_CACHE_SIZE,  # noqa: SLF001
        "cache_hit_share": round(1 - len(counts) / total, 4) if fits else None,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=pathlib.Path, default=ROOT.parent / "shared" / "data" / "taskplan" / "ultratool")
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args(argv)
    docs = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))] + [(ROOT / "README.md").read_text(encoding="utf-8")]
    out = {"ultratool": report(ultratool(args.data)), "docs": report(docs)}
    out["both"] = report([*ultratool(args.data), *docs])
    print(json.dumps(out, indent=2))
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
