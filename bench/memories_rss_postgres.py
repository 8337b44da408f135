"""The open/evict cycle on PostgreSQL, in process: is anything kept per memory opened?

A throwaway cluster (as the tests start one), ``--memories`` memories of 1,000 nodes, one
:class:`~hgm_engine.server.registry.MemoryRegistry` with ``--max-open``, memories taken in
turn (each lease opens one and evicts one); every 100 opens: RSS, Python's allocated blocks,
the collector's objects, the live ``Memory`` objects and the open psycopg connections (two
per open memory and the catalog's).

    python bench/memories_rss_postgres.py --memories 40 --max-open 8 --opens 600
"""

from __future__ import annotations

import argparse
import gc
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["main"]


def _rss() -> float:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def main(argv: list[str] | None = None) -> int:
    import psycopg

    from bench.memories_bench import _query, build, name_of
    from hgm_engine.memory import Memory
    from hgm_engine.server.registry import MemoryRegistry
    from tests.conftest import PostgresCluster, _postgres_binaries, create_postgres_database

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=40)
    parser.add_argument("--max-open", type=int, default=8)
    parser.add_argument("--opens", type=int, default=600)
    args = parser.parse_args(argv)
    binaries = _postgres_binaries()
    if binaries is None:
        raise SystemExit("no PostgreSQL binaries")
    cluster = PostgresCluster(binaries)
    cluster.start()
    try:
        url = create_postgres_database(cluster.url, "hgm_rss")
        build(url, args.memories, 1000, 2)
        registry = MemoryRegistry(url, max_open=args.max_open)
        for i in range(1, args.opens + 1):
            k = i % args.memories
            with registry.lease(name_of(k)) as service:
                service.query(_query(k)[1]["expr"])
            if i % 100 == 0:
                registry.flush()
                gc.collect()
                objects = gc.get_objects()
                memories = sum(1 for obj in objects if type(obj) is Memory)
                connections = sum(1 for obj in objects if isinstance(obj, psycopg.Connection) and not obj.closed)
                print(f"{i} opens: rss {_rss()} MiB, blocks {sys.getallocatedblocks()}, objects {len(objects)}, "
                      f"memories {memories}, open connections {connections}", flush=True)
                del objects
        registry.close()
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
