"""Many memories behind one server (issue 13): 1,000 memories of 1,000 nodes in one store,
one ``hgm serve --max-open 100``, clients choosing memories at random.

For each store (SQLite, PostgreSQL) it builds the memories (``--memories`` x ``--nodes``, a
bulk load: one genesis commit per memory, built in ``--builders`` processes; SQLite is built
on tmpfs and copied to disk, so building does not wait for fsync but serving does), starts
``python -m hgm_engine.server.rest --db STORE --max-open N`` on loopback, and measures:

1. **must be opened**: queries to memories no request named before, one at a time, once the
   server holds ``--max-open`` memories (each request opens one and evicts one): p50/p95;
   also the first ``--max-open`` opens, before anything is evicted;
2. **resident**: ``--clients`` threads querying memories drawn at random among the resident
   ones: p50/p95, and the server's CPU time per query;
3. **random**: the same clients drawing among all the memories (about ``max_open/memories``
   of the requests find theirs resident): p50/p95;
4. **cycles**: ``--cycles`` requests from the same clients taking the memories in turn, so
   that each one opens a memory and evicts another (every memory opened ``cycles/memories``
   times): the server's resident set every ``--rss-every`` opens, and its CPU time per open.
   This is the phase that shows whether the resident set levels off;
5. the server's resident set (``VmRSS``, ``VmHWM`` from ``/proc``) after each phase: bounded
   by ``--max-open``, not by the number of memories named;
6. **commits**: ``--writers`` threads committing small transactions (one ``add_node``) for
   ``--commit-seconds`` each: spread over 100 memories, then all on one memory; commits per
   second and p95, and the server's CPU time per commit.

The query is an id lookup and one hop (``#gK.children.where(status = 'done')``, ids only).
Wall-clock figures on a shared machine depend on its load (recorded at start and end);
the server's CPU time per request (``/proc/PID/stat``) and the ratios of one run do less.

    python bench/memories_bench.py --stores sqlite,postgres --memories 1000 --nodes 1000 \\
        --max-open 100 --out bench/results/memories/memories.json
    python bench/memories_bench.py --stores sqlite --memories 200 --nodes 1000   # quicker
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import os
import pathlib
import random
import shutil
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.serve.load_test import Client, Server, _ms, environment  # noqa: E402

from hgm_engine import open_store  # noqa: E402
from hgm_engine.server.rest.memories import memory_url  # noqa: E402

__all__ = ["graph", "build", "run_store", "queries_one_at_a_time", "queries_from_clients", "write_report", "main"]

GOALS = 50  # goals under the root; the rest are actions spread over them


def graph(index: int, nodes: int) -> dict[str, Any]:
    """The graph file of memory ``index``: a root goal, ``GOALS`` goals, actions under them.

    >>> doc = graph(3, 100)
    >>> len(doc["nodes"]), doc["nodes"][0]["content"]
    (100, 'memory 3')
    """
    goals = max(1, min(GOALS, nodes // 20))
    out = [{"id": "root", "type": "goal", "content": f"memory {index}", "status": "active"}]
    edges = []
    for g in range(goals):
        out.append({"id": f"g{g}", "type": "goal", "content": f"goal {g} of memory {index}", "status": "active"})
        edges.append({"from": "root", "to": f"g{g}", "type": "parent_of"})
    k = 0
    while len(out) < nodes:
        g = k % goals
        status = "done" if k % 3 == 0 else "pending"
        out.append({"id": f"a{k}", "type": "action", "content": f"step {k} toward goal {g}", "status": status})
        edges.append({"from": f"g{g}", "to": f"a{k}", "type": "parent_of"})
        k += 1
    return {"format": "hgm-graph/1", "nodes": out, "edges": edges}


def name_of(index: int) -> str:
    """Memories are named as a platform would: tenant / user.

    >>> name_of(42)
    'tenant-2/user-0042'
    """
    return f"tenant-{index % 10}/user-{index:04d}"


def _build_some(location: str, indexes: list[int], nodes: int) -> int:
    store = open_store(location)
    try:
        for index in indexes:
            memory = store.create(name_of(index))
            try:
                memory.load(graph(index, nodes), author="bench", reason="bulk load")
            finally:
                memory.close()
    finally:
        store.close()
    return len(indexes)


def build(location: str, memories: int, nodes: int, builders: int, log=print) -> float:
    """Make ``memories`` memories of ``nodes`` nodes at ``location`` (one bulk load each, in
    ``builders`` processes); the wall seconds it took."""
    started = time.perf_counter()
    chunks = [list(range(i, memories, builders)) for i in range(builders)]
    with concurrent.futures.ProcessPoolExecutor(builders) as pool:
        done = 0
        for count in pool.map(_build_some, [location] * builders, chunks, [nodes] * builders):
            done += count
    log(f"built {done} memories of {nodes} nodes in {time.perf_counter() - started:.1f} s")
    return time.perf_counter() - started


def _rss(pid: int) -> dict[str, float]:
    found = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = round(int(value.split()[0]) / 1024, 1)  # MiB
    return found


def _query(index: int) -> tuple[str, dict[str, Any]]:
    return memory_url(name_of(index), "query"), {"expr": f"#g{index % GOALS}.children.where(status = 'done')", "nodes": False}


def queries_one_at_a_time(port: int, indexes: list[int]) -> list[float]:
    """One client asks a query of each memory of ``indexes`` in turn: the latencies (s)."""
    client, latencies = Client(port), []
    try:
        for index in indexes:
            path, body = _query(index)
            started = time.perf_counter()
            status, data = client.request("POST", path, body, parse=False)
            latencies.append(time.perf_counter() - started)
            if status != 200 or not data.startswith(b'{"kind"'):
                raise RuntimeError(f"{path}: {status} {data[:300]!r}")
    finally:
        client.close()
    return latencies


def queries_from_clients(port: int, clients: int, draw, requests: int, seed: int) -> list[float]:
    """``clients`` threads ask ``requests`` queries in all, each of the memory ``draw(rng)``
    picks: the latencies (s)."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    per_client = max(1, requests // clients)

    def work(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        client = Client(port)
        mine = []
        try:
            for _ in range(per_client):
                path, body = _query(draw(rng))
                started = time.perf_counter()
                status, data = client.request("POST", path, body, parse=False)
                mine.append(time.perf_counter() - started)
                if status != 200 or not data.startswith(b'{"kind"'):
                    errors.append(f"{path}: {status} {data[:300]!r}")
                    return
        finally:
            client.close()
            with lock:
                latencies.extend(mine)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(errors[0])
    return latencies


def _commits(port: int, writers: int, seconds: float, targets: list[int], each: bool = False) -> dict[str, Any]:
    """``writers`` threads committing one add_node each time to a random memory of
    ``targets`` for ``seconds``; with ``each``, one thread commits once to every target."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def work(n: int) -> None:
        rng = random.Random(n)
        client = Client(port)
        mine = []
        try:
            for k in (range(len(targets)) if each else iter(int, 1)):
                if not each and time.perf_counter() >= deadline:
                    break
                index = targets[k] if each else targets[rng.randrange(len(targets))]
                doc = {"author": f"writer-{n}", "ops": [{"op": "add_node", "type": "fact", "content": f"note from writer {n}"}]}
                started = time.perf_counter()
                status, report = client.request("POST", memory_url(name_of(index), "transactions"), doc)
                mine.append(time.perf_counter() - started)
                if status != 200:
                    errors.append(f"{status} {report}")
                    return
        finally:
            client.close()
            with lock:
                latencies.extend(mine)

    started = time.perf_counter()
    threads = [threading.Thread(target=work, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(errors[0])
    return {"commits": len(latencies), "seconds": round(elapsed, 2), "per_second": round(len(latencies) / elapsed, 1), **_ms(latencies)}


def _cycles(server: Any, args: argparse.Namespace, log=print) -> dict[str, Any]:
    """``args.cycles`` requests taking the memories in turn (each opens one and evicts one,
    the server being full), from ``args.clients`` threads: the resident set every
    ``args.rss_every`` of them, and the server's CPU per open."""
    turn = itertools.count()  # ``next`` on a count is atomic: the clients share the turns
    samples = [{"opens": 0, **_rss(server.process.pid)}]
    cpu, latencies = server.cpu_seconds(), []
    done = 0
    while done < args.cycles:
        step = min(args.rss_every, args.cycles - done)
        latencies += queries_from_clients(server.port, args.clients, lambda r: next(turn) % args.memories, step, seed=4)
        done += step
        samples.append({"opens": done, **_rss(server.process.pid)})
        log(f"cycles: {done} opens, rss {samples[-1]}")
    spent = server.cpu_seconds() - cpu
    rss = [sample["VmRSS"] for sample in samples[1:]]
    return {**_ms(latencies), "opens": done, "server_cpu_ms_per_open": round(spent * 1000 / max(1, done), 2), "rss": samples,
            "rss_spread_mib": round(max(rss) - min(rss), 1) if rss else None}


def run_store(kind: str, location: str, args: argparse.Namespace, log=print) -> dict[str, Any]:
    """Every phase against one store (already built); the figures."""
    out: dict[str, Any] = {"store": kind, "memories": args.memories, "nodes": args.nodes, "max_open": args.max_open,
                           # the server inherits the environment: HGM_MALLOC_TRIM=0 turns the registry's trim off
                           "malloc_trim": os.environ.get("HGM_MALLOC_TRIM", "1").strip() != "0",
                           "malloc_arena_max": os.environ.get("MALLOC_ARENA_MAX")}
    work = pathlib.Path(tempfile.mkdtemp(prefix="hgm-membench-"))
    server = Server(location, work / "server.log", ["--max-open", str(args.max_open), "--max-concurrency", "0", "--log-level", "warning"])
    pid = server.process.pid
    try:
        rng = random.Random(args.seed)
        order = list(range(args.memories))
        rng.shuffle(order)
        first, rest = order[: args.max_open], order[args.max_open:]
        cpu0 = server.cpu_seconds()
        out["open_first"] = _ms(queries_one_at_a_time(port := server.port, first))  # nothing evicted yet
        out["rss_after_first"] = _rss(pid)
        cold = rest[: args.cold]
        cpu1 = server.cpu_seconds()
        out["open_evicting"] = _ms(queries_one_at_a_time(port, cold))
        cpu2 = server.cpu_seconds()
        out["open_evicting"]["server_cpu_ms_per_request"] = round((cpu2 - cpu1) * 1000 / max(1, len(cold)), 2)
        out["rss_after_cold"] = _rss(pid)
        resident = cold[-args.max_open:]
        log(f"{kind}: opened {len(first) + len(cold)} memories; first opens p95 {out['open_first']['p95_ms']} ms, "
            f"evicting p95 {out['open_evicting']['p95_ms']} ms")
        queries_from_clients(port, args.clients, lambda r: resident[r.randrange(len(resident))], args.clients * 20, seed=1)  # warm
        cpu3 = server.cpu_seconds()
        latencies = queries_from_clients(port, args.clients, lambda r: resident[r.randrange(len(resident))], args.requests, seed=2)
        cpu4 = server.cpu_seconds()
        out["resident"] = {**_ms(latencies), "server_cpu_ms_per_request": round((cpu4 - cpu3) * 1000 / len(latencies), 3)}
        log(f"{kind}: resident p50 {out['resident']['p50_ms']} ms p95 {out['resident']['p95_ms']} ms")
        latencies = queries_from_clients(port, args.clients, lambda r: r.randrange(args.memories), args.requests, seed=3)
        cpu5 = server.cpu_seconds()
        out["random"] = {**_ms(latencies), "server_cpu_ms_per_request": round((cpu5 - cpu4) * 1000 / len(latencies), 3),
                         "expected_resident_share": round(args.max_open / args.memories, 3)}
        out["rss_after_random"] = _rss(pid)
        log(f"{kind}: random p50 {out['random']['p50_ms']} ms p95 {out['random']['p95_ms']} ms; rss {out['rss_after_random']}")
        if args.cycles:
            out["cycles"] = _cycles(server, args, log)
        spread = order[: min(100, args.max_open - 1)]
        queries_one_at_a_time(port, spread)  # make them resident
        # the first commit after a memory opens does more (the node index's first write):
        # made once per memory here, timed apart, so the phases below compare steady states
        started = time.perf_counter()
        out["first_commits"] = _commits(port, 1, 0.0, spread, each=True)
        out["first_commits"]["seconds"] = round(time.perf_counter() - started, 2)
        cpu6 = server.cpu_seconds()
        out["commits_spread"] = _commits(port, args.writers, args.commit_seconds, spread)
        cpu7 = server.cpu_seconds()
        out["commits_spread"]["server_cpu_ms_per_commit"] = round((cpu7 - cpu6) * 1000 / max(1, out["commits_spread"]["commits"]), 2)
        out["commits_one"] = _commits(port, args.writers, args.commit_seconds, spread[:1])
        cpu8 = server.cpu_seconds()
        out["commits_one"]["server_cpu_ms_per_commit"] = round((cpu8 - cpu7) * 1000 / max(1, out["commits_one"]["commits"]), 2)
        out["spread_over_one"] = round(out["commits_spread"]["per_second"] / max(0.1, out["commits_one"]["per_second"]), 2)
        out["rss_at_end"] = _rss(pid)
        out["server_cpu_seconds"] = round(cpu8 - cpu0, 2)
        log(f"{kind}: commits/s spread {out['commits_spread']['per_second']} vs one {out['commits_one']['per_second']} "
            f"(x{out['spread_over_one']})")
    finally:
        out["server_exit"] = server.stop()
        kept = pathlib.Path(tempfile.gettempdir()) / f"hgm-membench-{kind}-server.log"
        shutil.copy(work / "server.log", kept)  # what the server logged (warnings and errors)
        log(f"{kind}: server log in {kept}")
        shutil.rmtree(work, ignore_errors=True)
    return out


def _sqlite(args: argparse.Namespace, log) -> dict[str, Any]:
    disk = pathlib.Path(tempfile.mkdtemp(prefix="hgm-membench-disk-"))
    shm_root = "/dev/shm" if os.path.isdir("/dev/shm") and not args.no_tmpfs else None
    built = pathlib.Path(tempfile.mkdtemp(prefix="hgm-membench-build-", dir=shm_root))
    try:
        seconds = build(str(built / "memories.db"), args.memories, args.nodes, args.builders, log)
        if shm_root:
            shutil.copytree(built / "memories.db.memories", disk / "memories.db.memories")
            shutil.rmtree(built, ignore_errors=True)
            location = str(disk / "memories.db")
        else:
            location = str(built / "memories.db")
        size = sum(f.stat().st_size for f in pathlib.Path(location + ".memories").iterdir())
        result = run_store("sqlite", location, args, log)
        result["build_seconds"] = round(seconds, 1)
        result["store_mib"] = round(size / 2**20, 1)
        return result
    finally:
        shutil.rmtree(built, ignore_errors=True)
        shutil.rmtree(disk, ignore_errors=True)


def _postgres(args: argparse.Namespace, log) -> dict[str, Any]:
    url = args.postgres_url
    cluster = None
    if url is None:
        from tests.conftest import PostgresCluster, _free_port, _postgres_binaries, create_postgres_database

        class Cluster(PostgresCluster):
            """The tests' throwaway cluster, with room for two connections per open memory."""

            def start(self) -> None:
                done = self._run(self.binaries["initdb"], "-D", self.data, "-A", "trust", "-U", "hgm", "-E", "UTF8", "--no-sync")
                if done.returncode != 0:
                    raise RuntimeError(f"initdb failed:\n{done.stdout}\n{done.stderr}")
                self.port = _free_port()
                options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
                           f"-c max_connections={4 * args.max_open + 50} -c shared_buffers=128MB")
                done = self._run(self.binaries["pg_ctl"], "-D", self.data, "-o", options, "-l", self.log, "-w", "-t", "60", "start")
                if done.returncode != 0:
                    raise RuntimeError(f"pg_ctl start failed:\n{done.stdout}\n{done.stderr}")

        binaries = _postgres_binaries()
        if binaries is None:
            raise SystemExit("no PostgreSQL binaries: give --postgres-url")
        cluster = Cluster(binaries)
        cluster.start()
        url = create_postgres_database(cluster.url, "hgm_membench")
    try:
        seconds = build(url, args.memories, args.nodes, args.builders, log)
        result = run_store("postgres", url, args, log)
        result["build_seconds"] = round(seconds, 1)
        return result
    finally:
        if cluster is not None:
            cluster.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--max-open", type=int, default=100)
    parser.add_argument("--cold", type=int, default=200, help="memories opened one by one once the server is full")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--requests", type=int, default=2000, help="queries per random phase (all clients)")
    parser.add_argument("--cycles", type=int, default=3000, help="requests taking the memories in turn, each opening one (0: skip)")
    parser.add_argument("--rss-every", type=int, default=1000, help="opens between resident-set samples in the cycles phase")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--commit-seconds", type=float, default=10.0)
    parser.add_argument("--builders", type=int, default=2)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--postgres-url", default=None, help="an empty database (default: a throwaway cluster, as the tests start)")
    parser.add_argument("--no-tmpfs", action="store_true", help="build the SQLite store on disk")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"environment": environment(), "settings": {k: v for k, v in vars(args).items() if k != "out"}, "results": []}
    for kind in args.stores.split(","):
        runner = {"sqlite": _sqlite, "postgres": _postgres}[kind.strip()]
        report["results"].append(runner(args, lambda text: print(text, file=sys.stderr, flush=True)))
    write_report(report, args.out)
    return 0


def write_report(report: dict[str, Any], out: str | None) -> None:
    """Print ``report`` as JSON, with the load average at the end, and write it to ``out``."""
    report["environment"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(report, indent=2)
    if out:
        pathlib.Path(out).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
