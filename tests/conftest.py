"""Shared test helpers: where the normative compliance cases and evaluation data live."""

from __future__ import annotations

import json
import pathlib

import pytest

from hgm_engine.testing.profiles import load_profile

# HYPOTHESIS_PROFILE=ci (the default) or long: hgm_engine/testing/profiles.py.
load_profile()

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SHARED_COMPLIANCE = SHARED / "spec" / "compliance"
OWN_COMPLIANCE = REPO / "tests" / "compliance"


def compliance_suites() -> list[tuple[str, pathlib.Path, dict]]:
    """(suite name, folder, document) for the spec's cases (when present) and our own."""
    suites = []
    for folder, origin in ((SHARED_COMPLIANCE, "spec"), (OWN_COMPLIANCE, "own")):
        if folder.is_dir():
            for path in sorted(folder.glob("*.cases.json")):
                suites.append((f"{origin}/{path.name}", folder, json.loads(path.read_text())))
    return suites


def compliance_cases() -> list:
    """pytest params: one per case, id ``suite::case``."""
    params = []
    for name, folder, doc in compliance_suites():
        graph = folder / doc["graph"]
        for case in doc["cases"]:
            params.append(pytest.param(graph, case, id=f"{name}::{case['id']}"))
    return params


@pytest.fixture
def travel_graph_path() -> pathlib.Path:
    """The spec's travel memory (tests that use it speak of its nodes by name)."""
    path = SHARED_COMPLIANCE / "travel.graph.json"
    if not path.exists():
        pytest.skip(f"the spec's travel graph is not here ({path}); ../shared is absent")
    return path


# -- PostgreSQL: a throwaway cluster for the store tests ----------------------------------------

import contextlib  # noqa: E402
import glob  # noqa: E402
import itertools  # noqa: E402
import os  # noqa: E402
import pwd  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

# Set HGM_TEST_POSTGRES_URL to a server you run (a role allowed to CREATE DATABASE) to use it
# instead of starting a cluster.
POSTGRES_URL_ENV = "HGM_TEST_POSTGRES_URL"


def _postgres_binaries() -> dict[str, str] | None:
    """initdb, pg_ctl and postgres from PATH, /usr/local/bin or Debian's versioned folders."""
    folders = [os.path.dirname(p) for p in [shutil.which("pg_ctl")] if p]
    folders += ["/usr/local/bin", "/usr/bin"]
    folders += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    folders += sorted(glob.glob("/usr/local/pgsql*/bin"), reverse=True)
    for folder in folders:
        found = {name: os.path.join(folder, name) for name in ("initdb", "pg_ctl", "postgres")}
        if all(os.access(path, os.X_OK) for path in found.values()):
            return found
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _unprivileged_user() -> pwd.struct_passwd | None:
    """Who runs the server: initdb refuses root. None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in ("hgmtest", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    added = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "hgmtest"],
                           capture_output=True, text=True)
    try:  # (another xdist worker may have added it a moment before: useradd then fails)
        return pwd.getpwnam("hgmtest")
    except KeyError:
        raise RuntimeError(f"useradd hgmtest failed: {added.stderr}") from None


class PostgresCluster:
    """A cluster in a temporary folder, on a free loopback port, with trust auth for ``hgm``."""

    def __init__(self, binaries: dict[str, str]):
        self.binaries = binaries
        self.user = _unprivileged_user()
        base = "/tmp" if self.user is not None and os.path.isdir("/tmp") else None
        self.folder = tempfile.mkdtemp(prefix="hgm-pg-", dir=base)
        self.data = os.path.join(self.folder, "data")
        self.log = os.path.join(self.folder, "server.log")
        self.port = 0
        self._names = itertools.count(1)
        if self.user is not None:
            os.chown(self.folder, self.user.pw_uid, self.user.pw_gid)

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        kwargs = {}
        if self.user is not None:
            kwargs = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        env = dict(os.environ, LC_ALL="C", LANG="C")
        env.pop("PGDATA", None)
        return subprocess.run(
            args, capture_output=True, text=True, timeout=timeout, env=env, cwd=self.folder, **kwargs
        )

    def start(self) -> None:
        done = self._run(self.binaries["initdb"], "-D", self.data, "-A", "trust", "-U", "hgm",
                         "-E", "UTF8", "--no-sync")
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{done.stdout}\n{done.stderr}")
        # fsync=off: the cluster is thrown away at the end and no test outlives the machine, so
        # nothing needs its WAL on the disk; every commit still writes it (a server stopped with
        # -m immediate still recovers each acknowledged commit). A CHECKPOINT or a VACUUM FULL
        # took 1-3 s of fsyncs on the shared machine (the two purge tests alone: 2.9 and 2.6 s -> 1.1 and 0.55 s).
        for _attempt in range(3):
            self.port = _free_port()
            options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
                       "-c max_connections=200 -c shared_buffers=32MB -c fsync=off")
            done = self._run(self.binaries["pg_ctl"], "-D", self.data, "-o", options, "-l", self.log,
                             "-w", "-t", "60", "start")
            if done.returncode == 0:
                return
        with contextlib.suppress(OSError):
            done.stderr += open(self.log).read()[-3000:]
        raise RuntimeError(f"pg_ctl start failed:\n{done.stdout}\n{done.stderr}")

    def stop(self) -> None:
        """Stop the server (no shutdown checkpoint: the cluster is thrown away) and remove the
        folder; thousands of small files take seconds to delete, so ``rm`` runs on its own."""
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self._run(self.binaries["pg_ctl"], "-D", self.data, "-m", "immediate", "-w", "-t", "60", "stop")
        try:
            subprocess.Popen(["rm", "-rf", self.folder], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError:
            shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def url(self) -> str:
        return f"postgresql://hgm@127.0.0.1:{self.port}/postgres"


def _with_database(url: str, name: str) -> str:
    head, _, tail = url.partition("://")
    netloc, _, rest = tail.partition("/")
    query = rest.partition("?")[2]
    return f"{head}://{netloc}/{name}" + (f"?{query}" if query else "")


@pytest.fixture(scope="session")
def postgres_server():
    """The URL of a PostgreSQL server (its ``postgres`` database) for the session.

    A throwaway cluster started here (stopped and removed at the end), or the server named by
    $HGM_TEST_POSTGRES_URL. Skips when psycopg or the server binaries are missing."""
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -e '.[test]')")
    external = os.environ.get(POSTGRES_URL_ENV)
    if external:
        yield external
        return
    binaries = _postgres_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl, postgres) found; "
                    f"install PostgreSQL or set {POSTGRES_URL_ENV}")
    cluster = PostgresCluster(binaries)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    try:
        yield cluster.url
    finally:
        cluster.stop()


_database_numbers = itertools.count(1)


def create_postgres_database(server_url: str, prefix: str = "hgm_test") -> str:
    """A new empty database on the server; its URL."""
    import psycopg

    name = f"{prefix}_{os.getpid()}_{next(_database_numbers)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return _with_database(server_url, name)


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """A fresh, empty database for one test (on the session's server): its URL."""
    return create_postgres_database(postgres_server)


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request, tmp_path) -> str:
    """Where a durable memory lives: a SQLite file, then a PostgreSQL database (fresh each test)."""
    if request.param == "sqlite":
        return str(tmp_path / "memory.db")
    return request.getfixturevalue("postgres_url")

