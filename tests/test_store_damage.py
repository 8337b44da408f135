"""Damaged, foreign, read-only and full stores (issue 12, item 7).

Every damaged store either opens as exactly its last good state (damage SQLite and hgm cannot
see, such as a flipped byte in a free page) or is refused with a ``StoreError`` that names the
store, what is wrong and how to recover — never a traceback from ``hgm``, with or without
``--json``, and never a store changed by the refused command.

The stores here are small SQLite files built once per module and copied for each case. The
full disk is simulated with a file-size limit (``RLIMIT_FSIZE``) in a child process, which
works as any user; where this machine lets a user mount a tmpfs in a namespace of its own
(``unshare -rm``), a real ``ENOSPC`` on a tiny tmpfs is tried as well.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import random
import shutil
import sqlite3
import subprocess
import sys

import pytest

from hgm_engine import Memory
from hgm_engine.cli import EXIT_FAILURE, EXIT_OK, main
from hgm_engine.cli.demo import sample_document
from hgm_engine.errors import StoreError
from hgm_engine.store import open_store

ROOT = pathlib.Path(__file__).resolve().parent.parent
ADD = {"ops": [{"op": "add_node", "id": "zz", "type": "fact", "content": "added after the damage"}]}


# -- a good store and what it holds ---------------------------------------------------------------


def build_good_store(path: pathlib.Path) -> None:
    """A sample memory with history, a snapshot and a user constraint (closed cleanly)."""
    with Memory.open(path) as memory:
        memory.load(sample_document(), reason="load the sample")
        memory.snapshot("loaded")
        for step in range(6):
            memory.apply(
                {
                    "author": "tester",
                    "reason": f"step {step}",
                    "ops": [
                        {"op": "add_node", "id": f"n{step}", "type": "fact", "content": f"fact {step} " * 8},
                        {"op": "add_edge", "from": f"n{step}", "to": "trip", "type": "related_to"},
                    ],
                }
            )
        memory.apply({"ops": [{"op": "delete_node", "id": "n0"}]})
        memory.add_constraint("facts_have_content", "each fact must content != ''")


def state_of(memory: Memory) -> tuple:
    """Everything a user can read from a memory: its t, state, history, snapshots, constraints."""
    return (
        memory.t,
        memory.export(),
        memory.commits(0),
        memory.snapshots(),
        memory.constraints(),
    )


def outcome(path: pathlib.Path) -> StoreError | tuple:
    """The state the store at ``path`` opens as, or the StoreError that refuses it."""
    try:
        with Memory(store=open_store(path, create=False)) as memory:
            return state_of(memory)
    except StoreError as err:
        return err


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> tuple[pathlib.Path, tuple]:
    path = tmp_path_factory.mktemp("good") / "memory.db"
    build_good_store(path)
    assert not pathlib.Path(str(path) + "-wal").exists() or os.path.getsize(str(path) + "-wal") == 0
    with Memory.open(path) as memory:
        state = state_of(memory)
    return path, state


def copy_of(good: tuple[pathlib.Path, tuple], tmp_path: pathlib.Path, name: str = "copy.db") -> pathlib.Path:
    target = tmp_path / name
    shutil.copyfile(good[0], target)
    return target


def files_of(path: pathlib.Path) -> dict[str, bytes]:
    """The store's bytes: the file and a non-empty WAL (SQLite may leave an empty one)."""
    found = {}
    for suffix in ("", "-wal"):
        side = pathlib.Path(str(path) + suffix)
        if side.exists() and (suffix == "" or side.stat().st_size):
            found[suffix] = side.read_bytes()
    return found


def content_of(path: pathlib.Path) -> list[str]:
    """The store's rows as SQL (what a user can read, whether in the file or its WAL)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return list(db.iterdump())


def run_main(capsys, *args: object) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_document(out: str) -> dict:
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return json.loads(lines[0])


def assert_refused_by_the_cli(capsys, tmp_path: pathlib.Path, path: pathlib.Path, *needles: str) -> None:
    """``hgm query`` and ``hgm apply``, with and without --json, refuse the store with a store
    error that contains ``needles`` and leave its bytes as they were."""
    before = files_of(path)
    tx = tmp_path / "tx.json"
    tx.write_text(json.dumps(ADD), encoding="utf-8")
    for command in (["query", "root"], ["apply", tx]):
        code, out, err = run_main(capsys, *command, "--db", path)
        assert code == EXIT_FAILURE, (command, out, err)
        assert err.startswith("error: store at "), err
        for needle in needles:
            assert needle in err, (needle, err)
        code, out, err = run_main(capsys, *command, "--db", path, "--json")
        assert code == EXIT_FAILURE, (command, out, err)
        doc = one_document(out)
        assert doc["error"]["category"] == "store" and doc["error"]["where"] == str(path), doc
        if command[0] == "apply":
            assert doc["committed"] is False and doc["t"] is None
        assert files_of(path) == before, f"hgm {command[0]} changed a store it refused"


# -- files that are not a memory ------------------------------------------------------------------


def test_a_zero_byte_file_is_refused_not_opened_as_an_empty_memory(capsys, tmp_path):
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    with pytest.raises(StoreError) as caught:
        open_store(path)
    assert "empty file (0 bytes)" in caught.value.message and str(path) in caught.value.message
    assert path.read_bytes() == b"" and not pathlib.Path(f"{path}-wal").exists()
    assert_refused_by_the_cli(capsys, tmp_path, path, "empty file (0 bytes)", "delete it")
    assert path.read_bytes() == b""


def test_a_file_that_is_not_a_database_is_refused(capsys, tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("shopping: milk, eggs\n" * 300, encoding="utf-8")
    with pytest.raises(StoreError) as caught:
        open_store(path)
    assert "not a SQLite database" in caught.value.message
    assert_refused_by_the_cli(capsys, tmp_path, path, "not a SQLite database")


def test_another_programs_database_is_refused_and_gets_no_hgm_tables(capsys, tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
    with pytest.raises(StoreError) as caught:
        open_store(path)
    assert "not an hgm memory" in caught.value.message and "photos" in caught.value.message
    assert_refused_by_the_cli(capsys, tmp_path, path, "not an hgm memory")
    with sqlite3.connect(path) as db:
        assert [name for (name,) in db.execute("SELECT name FROM sqlite_master")] == ["photos"]


def test_an_empty_sqlite_database_is_refused(tmp_path):
    path = tmp_path / "blank.db"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 1")  # a valid database file with no tables
    with pytest.raises(StoreError) as caught:
        open_store(path)
    assert "no tables" in caught.value.message


# -- damaged structure ---------------------------------------------------------------------------


@pytest.mark.parametrize("table", ["meta", "journal", "nodes", "edges", "snapshots", "constraints"])
def test_a_dropped_table_is_damage_not_a_new_empty_table(capsys, good, tmp_path, table):
    path = copy_of(good, tmp_path)
    with sqlite3.connect(path) as db:
        db.execute(f"DROP TABLE {table}")
    db.close()
    with pytest.raises(StoreError) as caught:
        open_store(path)
    message = caught.value.message
    assert f"table '{table}' is missing" in message and "damaged" in message
    assert_refused_by_the_cli(capsys, tmp_path, path, f"table '{table}' is missing")
    with sqlite3.connect(path) as db:
        assert table not in {name for (name,) in db.execute("SELECT name FROM sqlite_master")}


def test_a_table_without_a_column_is_refused(good, tmp_path):
    path = copy_of(good, tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE edges DROP COLUMN attrs")
    db.close()
    with pytest.raises(StoreError) as caught:
        open_store(path)
    assert "table 'edges' has no column 'attrs'" in caught.value.message


def test_a_store_without_its_format_row_is_refused(good, tmp_path):
    path = copy_of(good, tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM meta WHERE key = 'schema_version'")
    db.close()
    with pytest.raises(StoreError) as caught:
        open_store(path)
    assert "no store format row" in caught.value.message


def _truncation_offsets(size: int) -> list[int]:
    page = 4096
    return sorted({50, 100, page, page + 1, 2 * page, size // 2, size // 2 + 17, size - page, size - 1})


def test_a_truncated_file_is_refused_or_opens_as_its_last_good_state(capsys, good, tmp_path):
    size = good[0].stat().st_size
    refused = 0
    for offset in _truncation_offsets(size):
        path = copy_of(good, tmp_path, f"cut-{offset}.db")
        with open(path, "r+b") as handle:
            handle.truncate(offset)
        before = files_of(path)
        result = outcome(path)
        assert files_of(path) == before, f"opening a store cut at {offset} changed it"
        if isinstance(result, StoreError):
            refused += 1
            assert result.category == "store" and result.problems[0].where == str(path)
            assert "damaged" in result.message or "not a SQLite database" in result.message, result.message
        else:
            assert result == good[1], f"a store cut at {offset} opened as another state"
    assert refused >= len(_truncation_offsets(size)) - 1
    path = copy_of(good, tmp_path, "cut-cli.db")
    with open(path, "r+b") as handle:
        handle.truncate(size // 2)
    assert_refused_by_the_cli(capsys, tmp_path, path, "damaged")


def _flip_offsets(size: int, count: int, seed: int) -> list[int]:
    """Offsets in the data pages (every page after the first), spread over the whole file."""
    rng = random.Random(seed)
    return sorted(rng.randrange(4096, size) for _ in range(count))


def test_flipped_bytes_in_data_pages_are_refused_or_invisible(good, tmp_path):
    size = good[0].stat().st_size
    refused = invisible = 0
    for offset in _flip_offsets(size, 120, seed=12):
        path = copy_of(good, tmp_path, f"flip-{offset}.db")
        with open(path, "r+b") as handle:
            handle.seek(offset)
            byte = handle.read(1)[0]
            handle.seek(offset)
            handle.write(bytes([byte ^ (1 << (offset % 8))]))
        before = files_of(path)
        result = outcome(path)
        assert files_of(path) == before, f"opening a store flipped at {offset} changed it"
        if isinstance(result, StoreError):
            refused += 1
            assert result.category == "store" and result.problems[0].where == str(path), result
            assert "damaged" in result.message or "checksum" in result.message, result.message
        else:
            invisible += 1
            assert result == good[1], f"a flip at {offset} opened as another state"
        path.unlink()
    assert refused > 0 and refused + invisible == 120


def test_a_flipped_byte_in_a_node_is_named(capsys, good, tmp_path):
    path = copy_of(good, tmp_path)
    data = bytearray(path.read_bytes())
    at = data.find(b"Plan a three-day trip")
    assert at > 0
    data[at] ^= 0x02  # 'P' -> 'R': still valid text and valid JSON
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as caught:
        Memory(store=open_store(path, create=False))
    assert "node 'trip'" in caught.value.message and "checksum" in caught.value.message
    assert_refused_by_the_cli(capsys, tmp_path, path, "node 'trip'", "restore")


# -- bad rows -------------------------------------------------------------------------------------


def _drop_checksums(path: pathlib.Path) -> None:
    """Make the store look as one written before rows carried checksums."""
    with sqlite3.connect(path) as db:
        for table in ("meta", "journal", "nodes", "edges", "snapshots", "constraints"):
            db.execute(f"UPDATE {table} SET crc = NULL")
    db.close()


def test_a_row_changed_outside_hgm_is_refused_by_its_checksum(capsys, good, tmp_path):
    path = copy_of(good, tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("""UPDATE nodes SET attrs = '{"content":"edited by hand"}' WHERE id = 'n1'""")
    db.close()
    assert_refused_by_the_cli(capsys, tmp_path, path, "node 'n1'", "checksum")


def test_bad_json_in_a_node_row_is_refused(capsys, good, tmp_path):
    path = copy_of(good, tmp_path)
    _drop_checksums(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE nodes SET attrs = '{\"content\": ' WHERE id = 'n1'")
    db.close()
    assert_refused_by_the_cli(capsys, tmp_path, path, "node 'n1'", "not a JSON object")


def test_a_node_row_whose_attributes_are_not_an_object_is_refused(good, tmp_path):
    path = copy_of(good, tmp_path)
    _drop_checksums(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE nodes SET attrs = '[1, 2]' WHERE id = 'n1'")
    db.close()
    with pytest.raises(StoreError) as caught:
        Memory(store=open_store(path))
    assert "node 'n1'" in caught.value.message


def test_an_edge_to_a_missing_node_is_refused(good, tmp_path):
    path = copy_of(good, tmp_path)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM nodes WHERE id = 'n1'")  # its edge to 'trip' stays
    db.close()
    with pytest.raises(StoreError) as caught:
        Memory(store=open_store(path))
    assert "edge n1 -related_to-> trip" in caught.value.message and "missing node" in caught.value.message


def test_a_row_of_the_wrong_type_is_refused(good, tmp_path):
    path = copy_of(good, tmp_path)
    _drop_checksums(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE nodes SET seq = 'seven' WHERE id = 'n1'")
    db.close()
    with pytest.raises(StoreError) as caught:
        Memory(store=open_store(path))
    assert "node 'n1'" in caught.value.message


def _last_t(path: pathlib.Path) -> int:
    with sqlite3.connect(path) as db:
        (t,) = db.execute("SELECT MAX(t) FROM journal").fetchone()
    db.close()
    return t


@pytest.mark.parametrize(
    "record, needle",
    [
        ('{"author": "x", "changes": []}', "its 't' is missing"),
        ('{"t": 3, "changes": [', "not a JSON object"),
        ('[1, 2, 3]', "not a JSON object"),
        ('{"t": 3, "changes": [{"kind": "node_added", "after": {"id": 5}}]}', "journal row t=3"),
    ],
)
def test_a_bad_journal_row_is_refused_when_history_is_read(capsys, good, tmp_path, record, needle):
    path = copy_of(good, tmp_path)
    _drop_checksums(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE journal SET record = ? WHERE t = 3", (record,))
    db.close()
    with Memory(store=open_store(path)) as memory:  # the state is intact: the memory opens
        with pytest.raises(StoreError) as caught:
            memory.commits(0)
        assert "journal row t=3" in caught.value.message and needle in caught.value.message
        assert "damaged" in caught.value.message
    before = files_of(path)
    for args in (["history"], ["history", "--json"], ["diff", "1", "5"], ["export", "--as-of", "2"]):
        code, out, err = run_main(capsys, *args, "--db", path)
        assert code == EXIT_FAILURE, (args, out, err)
        assert "journal row t=3" in (out + err) and "Traceback" not in err
    assert files_of(path) == before


def test_a_bad_journal_row_stops_a_catching_up_commit_without_writing(good, tmp_path):
    path = copy_of(good, tmp_path)
    behind = Memory.open(path)
    t = behind.t
    with Memory.open(path) as ahead:
        ahead.apply({"ops": [{"op": "add_node", "id": "late", "type": "fact", "content": "x"}]})
    _drop_checksums(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE journal SET record = '{\"no\": \"t\"}' WHERE t = ?", (t + 1,))
    db.close()
    before = content_of(path)
    with pytest.raises(StoreError) as caught:
        behind.apply(ADD)
    assert f"journal row t={t + 1}" in caught.value.message
    assert behind.t == t and "zz" not in behind.graph
    behind.close()
    assert content_of(path) == before


# -- read-only files ------------------------------------------------------------------------------


@pytest.fixture
def read_only_store(good, tmp_path):
    """A copy of the good store that this user cannot write (chmod; as root, chattr +i)."""
    path = copy_of(good, tmp_path)
    path.chmod(0o444)
    immutable = False
    if os.access(path, os.W_OK):  # root ignores the mode bits
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True) if shutil.which("chattr") else None
        if done is None or done.returncode != 0:
            pytest.skip("cannot make a file read-only for this user here (root without chattr)")
        immutable = True
    yield path
    if immutable:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    path.chmod(0o644)


def test_a_read_only_store_can_be_read(capsys, read_only_store, good):
    code, out, err = run_main(capsys, "query", "#trip.exists()", "--db", read_only_store, "--json")
    assert code == EXIT_OK, err
    with Memory(store=open_store(read_only_store, create=False)) as memory:
        assert state_of(memory) == good[1]


def test_writing_a_read_only_store_says_so_and_changes_nothing(capsys, read_only_store, tmp_path):
    before = files_of(read_only_store)
    tx = tmp_path / "tx.json"
    tx.write_text(json.dumps(ADD), encoding="utf-8")
    code, out, err = run_main(capsys, "apply", tx, "--db", read_only_store)
    assert code == EXIT_FAILURE and "the file is read-only" in err and "nothing was committed" in err, err
    code, out, err = run_main(capsys, "apply", tx, "--db", read_only_store, "--json")
    report = one_document(out)
    assert code == EXIT_FAILURE and report["committed"] is False
    assert report["error"]["category"] == "store" and "the file is read-only" in report["error"]["message"]
    for args in (["snapshot", "later"], ["constraint", "remove", "facts_have_content"]):
        code, out, err = run_main(capsys, *args, "--db", read_only_store)
        assert code == EXIT_FAILURE and "the file is read-only" in err, (args, err)
    with Memory(store=open_store(read_only_store, create=False)) as memory:
        with pytest.raises(StoreError) as caught:
            memory.apply(ADD)
        assert "read-only" in caught.value.message and "zz" not in memory.graph
    assert files_of(read_only_store) == before


# -- a full disk ----------------------------------------------------------------------------------

_CHILD = """
import resource, signal, sys
limit = int(sys.argv[1])
if limit:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from hgm_engine.cli import main
sys.exit(main(sys.argv[2:]))
"""


def hgm_with_file_limit(limit: int, *args: object) -> subprocess.CompletedProcess:
    """``hgm ARGS`` in a child process that may write no file past ``limit`` bytes (0: no limit)."""
    return subprocess.run(
        [sys.executable, "-c", _CHILD, str(limit), *map(str, args)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )


def big_graph(path: pathlib.Path, nodes: int = 400) -> pathlib.Path:
    doc = {
        "format": "hgm-graph/1",
        "nodes": [{"id": f"f{i}", "type": "fact", "content": f"fact {i} " + "x" * 400} for i in range(nodes)],
        "edges": [],
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_first_load_on_a_full_disk_leaves_no_memory_behind(tmp_path):
    graph = big_graph(tmp_path / "big.json")
    db = tmp_path / "new.db"
    for extra in ([], ["--json"]):
        done = hgm_with_file_limit(64 * 1024, "load", graph, "--db", db, *extra)
        assert done.returncode == EXIT_FAILURE, done
        assert "Traceback" not in done.stderr, done.stderr
        text = one_document(done.stdout)["error"]["message"] if extra else done.stderr
        assert "no space left" in text, text
        assert sorted(p.name for p in tmp_path.iterdir()) == ["big.json"], "a failed load left files"
    done = hgm_with_file_limit(0, "query", "root", "--db", db)
    assert done.returncode == EXIT_FAILURE and "no memory at" in done.stderr, done.stderr


def test_a_commit_on_a_full_disk_is_refused_and_the_store_keeps_its_last_state(good, tmp_path):
    path = copy_of(good, tmp_path)
    tx = tmp_path / "big-tx.json"
    tx.write_text(json.dumps({"ops": [
        {"op": "add_node", "id": f"big{i}", "type": "fact", "content": "y" * 2000} for i in range(200)
    ]}), encoding="utf-8")
    before = files_of(path)
    for extra in ([], ["--json"]):
        done = hgm_with_file_limit(64 * 1024, "apply", tx, "--db", path, *extra)
        assert done.returncode == EXIT_FAILURE, done
        assert "Traceback" not in done.stderr, done.stderr
        if extra:
            report = one_document(done.stdout)
            assert report["committed"] is False and "no space left" in report["error"]["message"], report
        else:
            assert "no space left" in done.stderr and "nothing was committed" in done.stderr, done.stderr
    assert outcome(path) == good[1]
    assert files_of(path)[""] == before[""]


def _can_mount_tmpfs() -> bool:
    if not shutil.which("unshare"):
        return False
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && umount $d"],
        capture_output=True,
    )
    return done.returncode == 0


def test_a_first_load_on_a_real_full_tmpfs_leaves_no_memory_behind(tmp_path):
    if not _can_mount_tmpfs():
        pytest.skip("this user cannot mount a tmpfs (unshare -rm); the RLIMIT_FSIZE tests cover a full disk")
    graph = big_graph(tmp_path / "big.json")
    mount = tmp_path / "small"
    mount.mkdir()
    script = (
        f"mount -t tmpfs -o size=96k tmpfs {mount} && "
        f"{sys.executable} -m hgm_engine load {graph} --db {mount}/new.db; echo \"exit=$?\"; "
        f"ls -A {mount}; {sys.executable} -m hgm_engine query root --db {mount}/new.db"
    )
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "exit=1" in done.stdout, done
    assert "Traceback" not in done.stderr, done.stderr
    assert "no space left" in done.stderr, done.stderr
    assert "new.db" not in done.stdout.split("exit=1", 1)[1], "a failed load left a file on the tmpfs"
    assert "no memory at" in done.stderr


# -- creating a memory ----------------------------------------------------------------------------


def test_a_new_memory_appears_only_with_its_first_commit(tmp_path):
    path = tmp_path / "fresh.db"
    memory = Memory.open(path)
    assert not path.exists(), "an empty memory is not written until something is committed"
    memory.apply(ADD)
    assert path.exists()
    memory.apply({"ops": [{"op": "add_node", "id": "yy", "type": "fact", "content": "second"}]})
    memory.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.db"]
    with Memory(store=open_store(path, create=False)) as again:
        assert again.t == 2 and "yy" in again.graph


def test_a_new_memory_closed_without_a_commit_leaves_nothing(tmp_path):
    Memory.open(tmp_path / "fresh.db").close()
    assert list(tmp_path.iterdir()) == []


def test_two_new_memories_on_one_path_do_not_lose_a_commit(tmp_path):
    path = tmp_path / "fresh.db"
    first, second = Memory.open(path), Memory.open(path)
    first.apply(ADD)
    report = second.apply({"ops": [{"op": "add_node", "id": "yy", "type": "fact", "content": "second"}]})
    assert report.t == 2 and "zz" in second.graph  # it found the file the first one made
    first.close()
    second.close()
    with Memory(store=open_store(path, create=False)) as again:
        assert again.t == 2 and "zz" in again.graph and "yy" in again.graph


# -- PostgreSQL: the same checks where they apply -------------------------------------------------


@pytest.fixture
def good_postgres(postgres_url) -> str:
    import psycopg  # noqa: F401 - the fixture skipped already if there is no server

    with Memory(store=open_store(postgres_url)) as memory:
        memory.load(sample_document(), reason="load the sample")
        memory.apply({"ops": [{"op": "add_node", "id": "n1", "type": "fact", "content": "one"},
                              {"op": "add_edge", "from": "n1", "to": "trip", "type": "related_to"}]})
        memory.apply({"ops": [{"op": "update_node", "id": "n1", "set": {"content": "uno"}}]})
    return postgres_url


def _pg(url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement)


def _pg_tables(url: str) -> set[str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'hgm_%'").fetchall()
    return {name for (name,) in rows}


@pytest.mark.parametrize("table", ["hgm_journal", "hgm_nodes", "hgm_meta"])
def test_postgres_a_dropped_table_is_damage_not_a_new_empty_table(capsys, good_postgres, table):
    _pg(good_postgres, f"DROP TABLE {table}")
    with pytest.raises(StoreError) as caught:
        open_store(good_postgres)
    assert f"table '{table}' is missing" in caught.value.message and "damaged" in caught.value.message
    code, out, err = run_main(capsys, "query", "root", "--db", good_postgres, "--json")
    assert code == EXIT_FAILURE and f"table '{table}' is missing" in one_document(out)["error"]["message"]
    assert table not in _pg_tables(good_postgres), "the dropped table was made again, empty"


def test_postgres_a_table_without_a_column_is_refused(good_postgres):
    _pg(good_postgres, "ALTER TABLE hgm_edges DROP COLUMN seq")
    with pytest.raises(StoreError) as caught:
        open_store(good_postgres)
    assert "table 'hgm_edges' has no column 'seq'" in caught.value.message


def test_postgres_a_store_without_its_format_row_is_refused(good_postgres):
    _pg(good_postgres, "DELETE FROM hgm_meta WHERE key = 'schema_version'")
    with pytest.raises(StoreError) as caught:
        open_store(good_postgres)
    assert "no store format row" in caught.value.message


def test_postgres_a_node_row_whose_attributes_are_not_an_object_is_refused(capsys, good_postgres):
    _pg(good_postgres, "UPDATE hgm_nodes SET attrs = '[1, 2]' WHERE id = 'n1'")
    with pytest.raises(StoreError) as caught:
        Memory(store=open_store(good_postgres))
    assert "node 'n1'" in caught.value.message and "damaged" in caught.value.message
    code, out, err = run_main(capsys, "query", "root", "--db", good_postgres)
    assert code == EXIT_FAILURE and "node 'n1'" in err and "Traceback" not in err


def test_postgres_an_edge_to_a_missing_node_is_refused(good_postgres):
    _pg(good_postgres, "DELETE FROM hgm_nodes WHERE id = 'n1'")
    with pytest.raises(StoreError) as caught:
        Memory(store=open_store(good_postgres))
    assert "edge n1 -related_to-> trip points to the missing node 'n1'" in caught.value.message


def test_postgres_a_bad_journal_row_is_refused_when_history_is_read(capsys, good_postgres):
    _pg(good_postgres, """UPDATE hgm_journal SET record = '{"author": "x"}' WHERE t = 2""")
    with Memory(store=open_store(good_postgres)) as memory:
        with pytest.raises(StoreError) as caught:
            memory.commits(0)
        assert "journal row t=2: its 't' is missing" in caught.value.message
    code, out, err = run_main(capsys, "history", "--db", good_postgres, "--json")
    assert code == EXIT_FAILURE and "journal row t=2" in one_document(out)["error"]["message"]


# -- stores from before checksums, WAL damage, races, settings ------------------------------------

_OLD_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE journal (t INTEGER PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE nodes (id TEXT PRIMARY KEY, type TEXT NOT NULL, attrs TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE edges (source TEXT NOT NULL, target TEXT NOT NULL, type TEXT NOT NULL, attrs TEXT NOT NULL,
                    seq INTEGER NOT NULL, PRIMARY KEY (source, target, type));
CREATE TABLE snapshots (name TEXT PRIMARY KEY, t INTEGER NOT NULL);
CREATE TABLE constraints (name TEXT PRIMARY KEY, text TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO journal VALUES (1, '{"t":1,"author":null,"reason":"old","base_t":null,"timestamp":0.0,"changes":[{"kind":"node_added","before":null,"after":{"id":"old","type":"fact","attrs":{"content":"from before"},"seq":1}}],"fired_rules":[],"dirtied":[],"genesis":false,"kind":"transaction"}');
INSERT INTO nodes VALUES ('old', 'fact', '{"content":"from before"}', 1);
"""


def test_a_store_from_before_checksums_opens_and_its_new_rows_get_them(tmp_path):
    path = tmp_path / "old.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(_OLD_TABLES)
    with Memory(store=open_store(path, create=False)) as memory:
        assert memory.t == 1 and memory.node("old")["content"] == "from before"
        memory.apply(ADD)
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = dict(db.execute("SELECT id, crc FROM nodes"))
        assert rows["old"] is None and rows["zz"] is not None  # old rows are read unchecked
        db.execute("""UPDATE nodes SET attrs = '{"content":"edited"}' WHERE id = 'zz'""")
        db.commit()
    with pytest.raises(StoreError) as caught:
        Memory(store=open_store(path, create=False))
    assert "node 'zz' does not match its checksum" in caught.value.message


def test_a_truncated_write_ahead_log_opens_as_a_committed_state(good, tmp_path):
    path = copy_of(good, tmp_path, "live.db")
    states = {}
    memory = Memory.open(path)
    states[memory.t] = state_of(memory)
    for step in range(4):
        memory.apply({"ops": [{"op": "add_node", "id": f"w{step}", "type": "fact", "content": "in the log " * 30}]})
        states[memory.t] = state_of(memory)
    frozen = tmp_path / "frozen.db"  # the file and its log as a crash would leave them
    shutil.copyfile(path, frozen)
    shutil.copyfile(f"{path}-wal", f"{frozen}-wal")
    memory.close()
    wal_size = os.path.getsize(f"{frozen}-wal")
    assert wal_size > 4096
    for offset in (0, 31, 32, 100, 4096 + 24, wal_size // 2, wal_size - 1):
        cut = tmp_path / f"wal-{offset}.db"
        shutil.copyfile(frozen, cut)
        shutil.copyfile(f"{frozen}-wal", f"{cut}-wal")
        with open(f"{cut}-wal", "r+b") as handle:
            handle.truncate(offset)
        result = outcome(cut)
        assert not isinstance(result, StoreError), result
        assert result == states[result[0]], f"a log cut at {offset} opened as a state never committed"


def test_a_first_commit_racing_another_process_for_a_new_file_is_refused_not_lost(tmp_path):
    path = tmp_path / "fresh.db"
    mine, theirs = open_store(path), Memory.open(path)
    with pytest.raises(StoreError) as caught:
        with mine.write():  # both are building the memory, each in a file of its own
            mine.set_meta("note", "mine")
            theirs.apply(ADD)  # the other one commits first and puts its file in place
    assert "another process created it at the same moment" in caught.value.message
    assert "was not written" in caught.value.message
    assert mine.get_meta("note") is None and mine.latest_t() == 1  # it now reads theirs
    mine.set_meta("note", "again")  # and writes there
    mine.close()
    theirs.close()
    with Memory(store=open_store(path, create=False)) as memory:
        assert memory.t == 1 and "zz" in memory.graph and memory.store.get_meta("note") == "again"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.db"]


def test_the_open_check_can_be_set_and_a_bad_value_is_refused(good, tmp_path, monkeypatch):
    path = copy_of(good, tmp_path)
    for check in ("quick", "full", "none"):
        open_store(path, check=check).close()
    monkeypatch.setenv("HGM_STORE_CHECK", "never")
    with pytest.raises(StoreError) as caught:
        open_store(path)
    assert "HGM_STORE_CHECK" in caught.value.message and "quick, full, none" in caught.value.message


def test_a_commit_refused_by_a_full_disk_does_not_reach_the_memory(good, tmp_path):
    path = copy_of(good, tmp_path)
    memory = Memory.open(path)
    t = memory.t
    class Full(sqlite3.OperationalError):
        sqlite_errorname = "SQLITE_FULL"

    real = memory.store._db
    failing = _FailingCommit(real, Full("database or disk is full"))
    memory.store._db = failing
    try:
        with pytest.raises(StoreError) as caught:
            memory.apply(ADD)
    finally:
        memory.store._db = real
    assert "no space left" in caught.value.message and "nothing was written" in caught.value.message
    assert memory.t == t and "zz" not in memory.graph and memory.commits(t) == []
    assert memory.apply(ADD).t == t + 1  # the memory is still usable once there is room
    memory.close()


class _FailingCommit:
    """A connection whose COMMIT fails with ``error`` (as SQLite's does when the disk fills)."""

    def __init__(self, db: sqlite3.Connection, error: Exception):
        self._db, self._error = db, error

    def execute(self, sql: str, *args):
        if sql == "COMMIT":
            raise self._error
        return self._db.execute(sql, *args)

    def __getattr__(self, name: str):
        return getattr(self._db, name)


def test_page_damage_found_after_opening_is_a_store_error(capsys, tmp_path):
    path = tmp_path / "long.db"
    with Memory.open(path) as memory:
        for step in range(60):  # a journal of many pages
            memory.apply({"reason": f"commit number {step:03d}", "ops": [
                {"op": "add_node", "id": f"h{step}", "type": "fact", "content": "history " * 40}]})
    data = bytearray(path.read_bytes())
    page = data.find(b"commit number 005") // 4096
    assert page > 1
    data[page * 4096 : page * 4096 + 8] = b"\xff" * 8  # not a b-tree page any more
    path.write_bytes(bytes(data))
    with Memory(store=open_store(path, create=False, check="none")) as memory:  # nothing checks the pages
        with pytest.raises(StoreError) as caught:
            memory.commits(0)
        assert "is damaged" in caught.value.message and ".recover" in caught.value.message
    code, out, err = run_main(capsys, "history", "--db", path, "--json")
    assert code == EXIT_FAILURE and "damaged" in one_document(out)["error"]["message"]
