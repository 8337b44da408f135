"""Load test of ``hgm serve``: concurrent clients mixing queries and transactions (issue 7).

Starts ``python -m hgm_engine.server.rest`` on a free loopback port over a generated memory
(``bench/generate.py``, 10k nodes by default) and runs two bounded phases with N client threads
(keep-alive HTTP/1.1 connections, ``http.client``, TCP_NODELAY):

1. **queries**: only queries: the twelve benchmark queries of ``bench/baselines.py`` on the
   generator's anchors plus a point lookup of the client's own counter node, drawn uniformly;
2. **mixed**: the same queries, and with probability ``--write-ratio`` a small transaction:
   client *i* sets ``n`` on its own counter node and adds an action under its own goal, with
   ``base_t`` = the last ``t`` it saw. A further ``--bad-ratio`` of transactions name a node
   that does not exist and must be refused (404) without using up a ``t``.

Then it checks that nothing was lost or duplicated: the ``t`` of every committed report (and
of the setup transaction) is exactly ``t0+1 .. T`` with no repeats, where ``T`` is the server's
final ``t``; each client's counter holds the number of its commits; its goal's children are
exactly the nodes it added, in order; the history of its counter lists exactly its commits'
``t``. After a graceful stop (SIGTERM) the store is reopened in this process and checked again.

Every loop is bounded by ``--duration`` seconds and ``--max-requests`` requests per phase, and
traffic goes to 127.0.0.1 only. ``--db`` takes a SQLite path (default: a fresh temporary file)
or any location ``Memory.open`` accepts (e.g. ``postgresql://...`` once that store exists); an
existing memory must be empty or already hold the generated graph (its anchors).

    python bench/serve/load_test.py --nodes 10000 --clients 8 --duration 20 \\
        --out bench/results/serve.json --markdown /tmp/serve.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.baselines import QUERIES  # noqa: E402
from bench.generate import generate  # noqa: E402

import hgm_engine  # noqa: E402
from hgm_engine import Memory  # noqa: E402

__all__ = ["run", "main", "start_server", "percentile"]


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile of ``values`` (None when empty).

    >>> percentile([1, 2, 3, 4], 0.5), percentile([], 0.5)
    (2, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, int(round(fraction * len(ordered) + 0.4999)))
    return ordered[min(rank, len(ordered)) - 1]


def _ms(values: list[float]) -> dict[str, Any]:
    def r(x: float | None) -> float | None:
        return None if x is None else round(x * 1000, 3)

    return {
        "count": len(values),
        "p50_ms": r(percentile(values, 0.50)),
        "p95_ms": r(percentile(values, 0.95)),
        "p99_ms": r(percentile(values, 0.99)),
        "max_ms": r(max(values) if values else None),
    }


# -- the server ----------------------------------------------------------------------------------


class Server:
    """A ``python -m hgm_engine.server.rest`` child on 127.0.0.1 and a free port."""

    def __init__(self, db: str, log_path: pathlib.Path, extra: list[str] | None = None):
        self.log_path = log_path
        self._log = open(log_path, "wb")
        command = [sys.executable, "-m", "hgm_engine.server.rest", "--db", db, "--host", "127.0.0.1", "--port", "0"]
        command += ["--no-access-log", *(extra or [])]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        env.pop("HGM_TOKEN", None)
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT))
        self.port = self._wait_for_port()
        self._wait_healthy()

    def _wait_for_port(self, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"hgm serve exited ({self.process.returncode}):\n{self.log_path.read_text()}")
            for line in self.log_path.read_text(errors="replace").splitlines():
                if "listening on http://" in line:
                    return int(line.rsplit(":", 1)[1].strip("/ "))
            time.sleep(0.05)
        raise RuntimeError("hgm serve did not start in time")

    def _wait_healthy(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                status, _ = Client(self.port).request("GET", "/health")
                if status == 200:
                    return
            except (OSError, EOFError):
                time.sleep(0.05)
        raise RuntimeError("hgm serve did not answer /health")

    def cpu_seconds(self) -> float | None:
        """User + system CPU time so far of the server process and its workers (Linux)."""
        stats: dict[int, list[str]] = {}
        for entry in pathlib.Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stats[int(entry.name)] = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue  # gone meanwhile
        if self.process.pid not in stats:
            return None
        tree, total = {self.process.pid}, 0
        for pid in sorted(stats):  # workers are forked after the server: higher pids (no wrap here)
            fields = stats[pid]
            if pid in tree or int(fields[1]) in tree:
                tree.add(pid)
                total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (graceful: requests in flight finish, the memory is closed); the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode


def start_server(db: str, log_path: pathlib.Path, extra: list[str] | None = None) -> Server:
    """Start ``hgm serve`` on ``db`` (loopback, free port) and wait until it is healthy."""
    return Server(db, log_path, extra)


class Client:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1, written for a light client side.

    A load generator that spends more CPU per request than the server distorts the result on a
    small machine (the two share its cores), so this speaks just the HTTP the server answers
    with: a request in one ``send``, a response with ``Content-Length``.
    """

    def __init__(self, port: int):
        self.port = port
        self.sock: socket.socket | None = None
        self.buffer = b""

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        return sock

    def request(self, method: str, path: str, body: Any = None, *, parse: bool = True) -> tuple[int, Any]:
        """``(status, document)``; with ``parse=False`` the raw bytes (decoding a large result
        would cost the client more than the server spent on it)."""
        payload = b"" if body is None else json.dumps(body).encode("utf-8")
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(payload)}\r\n"
        if body is not None:
            head += "Content-Type: application/json\r\n"
        message = head.encode("ascii") + b"\r\n" + payload
        for attempt in (0, 1):
            fresh = self.sock is None
            if fresh:
                self.sock = self._connect()
            try:
                self.sock.sendall(message)
                status, data, close = self._response()
                break
            except (ConnectionError, EOFError):
                # Only a request on a reused connection the server had closed is sent again.
                self.close()
                if attempt or fresh:
                    raise
        if close:
            self.close()
        if not parse:
            return status, data
        return status, json.loads(data) if data else None

    def _response(self) -> tuple[int, bytes, bool]:
        buffer = self.buffer
        while (end := buffer.find(b"\r\n\r\n")) < 0:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            buffer += chunk
        head = buffer[:end].lower()
        status = int(head[9:12])
        length = 0
        at = head.find(b"\r\ncontent-length:")
        if at >= 0:
            stop = head.find(b"\r\n", at + 2)
            length = int(head[at + 17 : stop if stop >= 0 else len(head)])
        data = buffer[end + 4 :]
        while len(data) < length:
            chunk = self.sock.recv(max(65536, length - len(data)))
            if not chunk:
                raise EOFError("connection closed")
            data += chunk
        self.buffer = data[length:]
        return status, data[:length], b"\r\nconnection: close" in head

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


# -- the workload ----------------------------------------------------------------------------------


class Worker(threading.Thread):
    """One client: a loop of queries and (in the mixed phase) transactions on its own nodes."""

    def __init__(self, index: int, port: int, run_id: str, queries: dict[str, str], phase: dict[str, Any], shared: dict[str, Any]):
        super().__init__(daemon=True)
        self.index = index
        self.client = Client(port)
        self.run_id = run_id
        self.goal = f"{run_id}-c{index}"
        self.counter = f"{run_id}-c{index}-counter"
        self.queries = dict(queries, own_counter=f"#{self.counter}")
        self.names = sorted(self.queries)
        self.phase = phase
        self.shared = shared
        self.random = random.Random(f"{run_id}/{index}/{phase['name']}")
        self.query_latency: dict[str, list[float]] = {name: [] for name in self.names}
        self.txn_latency: list[float] = []
        self.bad_latency: list[float] = []
        self.errors: list[str] = []
        self.last_t = shared["setup_t"]

    def run(self) -> None:
        deadline = self.phase["deadline"]
        budget = self.shared["budget"]
        try:
            while time.perf_counter() < deadline:
                with budget["lock"]:
                    if budget["left"] <= 0:
                        return
                    budget["left"] -= 1
                roll = self.random.random()
                if roll < self.phase["write_ratio"]:
                    if self.random.random() < self.phase["bad_ratio"]:
                        self.bad_transaction()
                    else:
                        self.transaction()
                else:
                    self.query()
        except Exception as exc:  # noqa: BLE001 - recorded and reported
            self.errors.append(f"client {self.index}: {type(exc).__name__}: {exc}")
        finally:
            self.client.close()

    def query(self) -> None:
        name = self.names[self.random.randrange(len(self.names))]
        started = time.perf_counter()
        status, data = self.client.request("POST", "/api/v1/query", {"expr": self.queries[name]}, parse=False)
        self.query_latency[name].append(time.perf_counter() - started)
        if status != 200:
            self.errors.append(f"query {name}: {status} {data[:300]!r}")
            return
        # The document ends with ..."t":T}: read t from the tail instead of decoding it all.
        t = int(data[data.rindex(b'"t":') + 4 : -1])
        if t > self.last_t:
            self.last_t = t

    def transaction(self) -> None:
        commits = self.shared["commits"][self.index]
        k = len(commits)
        doc = {
            "author": f"load-client-{self.index}",
            "reason": f"step {k + 1}",
            "base_t": self.last_t,
            "ops": [
                {"op": "update_node", "id": self.counter, "set": {"n": k + 1}},
                {"op": "add_node", "id": f"{self.goal}-a{k + 1}", "type": "action", "parent": self.goal, "status": "pending", "order": k + 1},
            ],
        }
        started = time.perf_counter()
        status, report = self.client.request("POST", "/api/v1/transactions", doc)
        self.txn_latency.append(time.perf_counter() - started)
        if status == 200 and report.get("committed"):
            commits.append({"t": report["t"], "node": f"{self.goal}-a{k + 1}", "n": k + 1})
            self.last_t = max(self.last_t, report["t"])
        else:
            self.errors.append(f"transaction {k + 1}: {status} {report}")

    def bad_transaction(self) -> None:
        doc = {"author": f"load-client-{self.index}", "ops": [{"op": "update_node", "id": f"{self.goal}-missing", "set": {"n": -1}}]}
        started = time.perf_counter()
        status, body = self.client.request("POST", "/api/v1/transactions", doc)
        self.bad_latency.append(time.perf_counter() - started)
        if status != 404 or body.get("error", {}).get("category") != "unknown-node":
            self.errors.append(f"bad transaction: expected 404 unknown-node, got {status} {body}")


def run_phase(
    name: str,
    port: int,
    run_id: str,
    queries: dict[str, str],
    shared: dict[str, Any],
    server: Server,
    *,
    clients: int,
    duration: float,
    max_requests: int,
    write_ratio: float,
    bad_ratio: float,
) -> dict[str, Any]:
    """N workers for at most ``duration`` seconds and ``max_requests`` requests."""
    shared["budget"] = {"lock": threading.Lock(), "left": max_requests}
    phase = {"name": name, "write_ratio": write_ratio, "bad_ratio": bad_ratio, "deadline": 0.0}
    workers = [Worker(i, port, run_id, queries, phase, shared) for i in range(clients)]
    load_before = [round(x, 2) for x in os.getloadavg()]
    cpu_before = server.cpu_seconds()
    client_cpu_before = time.process_time()
    started = time.perf_counter()
    phase["deadline"] = started + duration
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(duration + 120)
    elapsed = time.perf_counter() - started
    cpu_after = server.cpu_seconds()
    client_cpu = time.process_time() - client_cpu_before
    per_query: dict[str, list[float]] = {}
    for worker in workers:
        for query_name, values in worker.query_latency.items():
            key = "own_counter" if query_name == "own_counter" else query_name
            per_query.setdefault(key, []).extend(values)
    all_queries = [v for values in per_query.values() for v in values]
    txns = [v for w in workers for v in w.txn_latency]
    bad = [v for w in workers for v in w.bad_latency]
    total = len(all_queries) + len(txns) + len(bad)
    return {
        "clients": clients,
        "load_average_at_start": load_before,
        "seconds": round(elapsed, 3),
        "requests": total,
        "throughput_rps": round(total / elapsed, 1),
        "queries": {**_ms(all_queries), "throughput_rps": round(len(all_queries) / elapsed, 1)},
        "transactions": {**_ms(txns), "throughput_rps": round(len(txns) / elapsed, 1)},
        "refused_transactions": _ms(bad),
        "per_query": {k: _ms(v) for k, v in sorted(per_query.items())},
        # Uneven shares between server workers show here (each client keeps one connection).
        "per_client_query_p50_ms": [
            _ms([v for values in w.query_latency.values() for v in values])["p50_ms"] for w in workers
        ],
        "server_cpu_ms_per_request": None
        if cpu_before is None or cpu_after is None or not total
        else round((cpu_after - cpu_before) / total * 1000, 3),
        "client_cpu_ms_per_request": round(client_cpu / total * 1000, 3) if total else None,
        "errors": [e for w in workers for e in w.errors][:20],
        "error_count": sum(len(w.errors) for w in workers),
    }


# -- checks ------------------------------------------------------------------------------------------


def check_state(read, shared: dict[str, Any], clients: int, run_id: str, final_t: int) -> dict[str, Any]:
    """Nothing lost, nothing duplicated. ``read(kind, arg)`` answers from the server or a
    reopened memory: ``("t", None)``, ``("node", id)``, ``("children", id)``, ``("history", id)``."""
    problems: list[str] = []
    committed = [shared["setup_t"]] + [c["t"] for i in range(clients) for c in shared["commits"][i]]
    duplicates = sorted({t for t in committed if committed.count(t) > 1})
    if duplicates:
        problems.append(f"duplicate t in committed reports: {duplicates[:10]}")
    expected_ts = list(range(shared["t0"] + 1, final_t + 1))
    if sorted(committed) != expected_ts:
        missing = sorted(set(expected_ts) - set(committed))[:10]
        extra = sorted(set(committed) - set(expected_ts))[:10]
        problems.append(f"committed t values are not exactly {shared['t0'] + 1}..{final_t}: missing {missing}, unexpected {extra}")
    if read("t", None) != final_t:
        problems.append(f"t is {read('t', None)}, expected {final_t}")
    for i in range(clients):
        commits = shared["commits"][i]
        goal, counter = f"{run_id}-c{i}", f"{run_id}-c{i}-counter"
        node = read("node", counter)
        if node is None or node.get("n") != len(commits):
            problems.append(f"client {i}: counter is {node and node.get('n')}, expected {len(commits)}")
        children = read("children", goal)
        if children != [c["node"] for c in commits]:
            problems.append(f"client {i}: goal has {len(children or [])} children, expected {len(commits)} in commit order")
        history = read("history", counter)
        if history != [shared["setup_t"]] + [c["t"] for c in commits]:
            problems.append(f"client {i}: the counter's history does not list exactly its commits")
    return {"ok": not problems, "commits": len(committed), "problems": problems[:20]}


def _server_reader(client: Client):
    def read(kind: str, arg: Any) -> Any:
        if kind == "t":
            return client.request("GET", "/health")[1]["t"]
        if kind == "node":
            status, doc = client.request("GET", f"/api/v1/nodes/{arg}")
            return doc if status == 200 else None
        if kind == "children":
            return client.request("POST", "/api/v1/query", {"expr": "#$g.children", "params": {"g": arg}, "nodes": False})[1]["ids"]
        if kind == "history":
            status, doc = client.request("GET", f"/api/v1/history?node={arg}")
            return [entry["t"] for entry in doc["history"]] if status == 200 else None
        raise ValueError(kind)

    return read


def _memory_reader(memory: Memory):
    def read(kind: str, arg: Any) -> Any:
        if kind == "t":
            return memory.t
        if kind == "node":
            return memory.node(arg)
        if kind == "children":
            return memory.query("#$g.children", params={"g": arg}).ids
        if kind == "history":
            return [entry["t"] for entry in memory.history(arg)]
        raise ValueError(kind)

    return read


# -- the run ---------------------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    versions = {}
    for name in ("fastapi", "starlette", "uvicorn", "pydantic", "orjson", "httptools", "uvloop"):
        try:
            from importlib.metadata import version

            versions[name] = version(name)
        except Exception:  # noqa: BLE001 - not installed
            versions[name] = None
    cpu = platform.machine()
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "hgm": hgm_engine.__version__,
        # a run from an export of a commit (git archive) names it in HGM_BENCH_COMMIT
        "git_commit": commit or os.environ.get("HGM_BENCH_COMMIT") or None,
        "packages": versions,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def prepare(db: str, nodes: int, seed: int, log) -> tuple[dict[str, str], dict[str, Any]]:
    """Load the generated graph into an empty memory (or check it is there); the queries."""
    doc, meta = generate(nodes, seed)
    memory = Memory.open(db)
    try:
        if memory.t == 0 and len(memory) == 0:
            started = time.perf_counter()
            memory.load(doc, author="load-test", reason=f"generated memory n={nodes} seed={seed}")
            log(f"loaded {nodes} nodes into {db} in {time.perf_counter() - started:.2f} s")
        else:
            missing = [a for a in meta["anchors"].values() if memory.node(a) is None]
            if missing:
                raise SystemExit(f"{db} is not empty and does not hold the generated graph (missing {missing[:3]}); use an empty database")
            log(f"{db} already holds the generated graph (t={memory.t}, {len(memory)} nodes)")
    finally:
        memory.close()
    queries = {name: template.format(**meta["anchors"]) for name, (template, _) in QUERIES.items()}
    return queries, meta


def select_queries(queries: dict[str, str], names: str | None) -> dict[str, str]:
    """The benchmark queries named in ``names`` (comma-separated; None or "all": every one).
    ``own_counter`` (a point lookup of the client's own node) is always part of the mix."""
    if not names or names == "all":
        return queries
    wanted = [n.strip() for n in names.split(",") if n.strip() and n.strip() != "own_counter"]
    unknown = sorted(set(wanted) - set(queries))
    if unknown:
        raise SystemExit(f"unknown queries {unknown}; known: {', '.join(sorted(queries))}")
    return {n: queries[n] for n in wanted}


def run(
    *,
    db: str | None = None,
    nodes: int = 10_000,
    seed: int = 0,
    clients: int = 8,
    duration: float = 20.0,
    max_requests: int = 200_000,
    write_ratio: float = 0.1,
    bad_ratio: float = 0.05,
    phases: tuple[str, ...] = ("queries", "mixed"),
    query_names: str | None = None,
    server_args: list[str] | None = None,
    log=lambda message: print(message, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Run the load test; returns the report (``checks.ok`` says whether nothing was lost)."""
    env = environment()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="hgm-serve-load-"))
    db = db or str(workdir / "memory.db")
    queries, meta = prepare(db, nodes, seed, log)
    queries = select_queries(queries, query_names)
    run_id = f"load{int(time.time() * 1000) % 10**10}"
    server = start_server(db, workdir / "server.log", server_args)
    log(f"hgm serve on 127.0.0.1:{server.port} (log {server.log_path})")
    report: dict[str, Any] = {
        "benchmark": "serve-load",
        "environment": env,
        "config": {
            "db": "temporary SQLite file" if db.startswith(str(workdir)) else db.split("@")[-1],
            "nodes": nodes,
            "edges": meta["edges"],
            "seed": seed,
            "clients": clients,
            "duration_per_phase_s": duration,
            "max_requests_per_phase": max_requests,
            "write_ratio": write_ratio,
            "bad_ratio": bad_ratio,
            "queries": dict(queries, own_counter="#{client's counter node}"),
        },
        "phases": {},
    }
    try:
        client = Client(server.port)
        t0 = client.request("GET", "/health")[1]["t"]
        ops: list[dict[str, Any]] = [{"op": "add_node", "id": run_id, "type": "goal", "content": "load test run"}]
        for i in range(clients):
            ops.append({"op": "add_node", "id": f"{run_id}-c{i}", "type": "goal", "parent": run_id, "content": f"client {i}"})
            ops.append({"op": "add_node", "id": f"{run_id}-c{i}-counter", "type": "fact", "parent": run_id, "n": 0})
        status, setup = client.request("POST", "/api/v1/transactions", {"author": "load-test", "reason": "setup", "ops": ops})
        if status != 200:
            raise RuntimeError(f"setup transaction failed: {status} {setup}")
        shared: dict[str, Any] = {"t0": t0, "setup_t": setup["t"], "commits": {i: [] for i in range(clients)}}
        for name in phases:
            log(f"phase {name}: {clients} clients, up to {duration:g} s / {max_requests} requests")
            result = run_phase(
                name,
                server.port,
                run_id,
                queries,
                shared,
                server,
                clients=clients,
                duration=duration,
                max_requests=max_requests,
                write_ratio=write_ratio if name == "mixed" else 0.0,
                bad_ratio=bad_ratio,
            )
            report["phases"][name] = result
            log(
                f"  {result['throughput_rps']} req/s; queries p50 {result['queries']['p50_ms']} ms p95 {result['queries']['p95_ms']} ms; "
                f"transactions {result['transactions']['count']} p50 {result['transactions']['p50_ms']} ms p95 {result['transactions']['p95_ms']} ms; "
                f"errors {result['error_count']}"
            )
        final_t = client.request("GET", "/health")[1]["t"]
        report["checks"] = {"server": check_state(_server_reader(client), shared, clients, run_id, final_t)}
        client.close()
    finally:
        exit_code = server.stop()
    report["server_exit_code"] = exit_code
    reopened = Memory.open(db)
    try:
        report["checks"]["reopened"] = check_state(_memory_reader(reopened), shared, clients, run_id, final_t)
    finally:
        reopened.close()
    report["checks"]["ok"] = (
        report["checks"]["server"]["ok"]
        and report["checks"]["reopened"]["ok"]
        and exit_code == 0
        and not any(p["error_count"] for p in report["phases"].values())
    )
    report["environment"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    query_phase = report["phases"].get("queries") or report["phases"].get("mixed")
    report["targets"] = {
        "query_p95_ms": 5.0,
        "query_p95_measured_ms": query_phase["queries"]["p95_ms"] if query_phase else None,
        "query_p95_met": bool(query_phase and query_phase["queries"]["p95_ms"] is not None and query_phase["queries"]["p95_ms"] <= 5.0),
        "nothing_lost_or_duplicated": report["checks"]["ok"],
    }
    log(f"checks: {'ok' if report['checks']['ok'] else 'FAILED'}; commits {report['checks']['server']['commits']}")
    if report["checks"]["ok"]:
        shutil.rmtree(workdir, ignore_errors=True)  # the temporary database and the server log
    else:
        log(f"kept {workdir} (server log, database) for a look")
    for where in ("server", "reopened"):
        for problem in report["checks"][where]["problems"]:
            log(f"  {where}: {problem}")
    return report


def markdown(report: dict[str, Any]) -> str:
    """The results as a Markdown table (for docs/performance.md)."""
    lines = [
        "| phase | clients | requests | req/s | query p50 / p95 (ms) | transactions | txn p50 / p95 (ms) | server CPU per request (ms) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, phase in report["phases"].items():
        q, t = phase["queries"], phase["transactions"]
        txn = f"{t['p50_ms']} / {t['p95_ms']}" if t["count"] else "-"
        lines.append(
            f"| {name} | {phase['clients']} | {phase['requests']} | {phase['throughput_rps']} | {q['p50_ms']} / {q['p95_ms']} "
            f"| {t['count']} ({t['throughput_rps']}/s) | {txn} | {phase['server_cpu_ms_per_request']} |"
        )
    lines += ["", "| query | " + " | ".join(f"{n} p50 / p95 (ms)" for n in report["phases"]) + " |", "|---|" + "---|" * len(report["phases"])]
    names = sorted({q for p in report["phases"].values() for q in p["per_query"]})
    for name in names:
        cells = []
        for phase in report["phases"].values():
            s = phase["per_query"].get(name)
            cells.append(f"{s['p50_ms']} / {s['p95_ms']}" if s and s["count"] else "-")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=None, help="SQLite path or store URL (default: a fresh temporary SQLite file)")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per phase (bound)")
    parser.add_argument("--max-requests", type=int, default=200_000, help="requests per phase (bound)")
    parser.add_argument("--write-ratio", type=float, default=0.1, help="share of transactions in the mixed phase")
    parser.add_argument("--bad-ratio", type=float, default=0.05, help="share of those that must be refused")
    parser.add_argument("--phases", default="queries,mixed")
    parser.add_argument("--queries", default="all", help="benchmark queries in the mix (comma-separated names; default all)")
    parser.add_argument("--server-arg", action="append", default=[], help="extra option for hgm serve (repeatable)")
    parser.add_argument("--out", type=pathlib.Path, help="write the JSON report here")
    parser.add_argument("--markdown", type=pathlib.Path, help="write a Markdown table here")
    args = parser.parse_args(argv)
    report = run(
        db=args.db,
        nodes=args.nodes,
        seed=args.seed,
        clients=args.clients,
        duration=args.duration,
        max_requests=args.max_requests,
        write_ratio=args.write_ratio,
        bad_ratio=args.bad_ratio,
        phases=tuple(p for p in args.phases.split(",") if p),
        query_names=args.queries,
        server_args=args.server_arg,
    )
    report["command"] = "python bench/serve/load_test.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = json.dumps(report, indent=1) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    else:
        print(text)
    if args.markdown:
        args.markdown.write_text(markdown(report), encoding="utf-8")
    return 0 if report["checks"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
