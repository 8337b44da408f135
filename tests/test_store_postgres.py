"""The PostgreSQL store on its own: writer serialization, lock waits, rollback, bulk load,
exact round trips, schemas, lost connections, errors without passwords, psycopg optional."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from hgm_engine import Memory
from hgm_engine import Commit
from hgm_engine.store import open_store
from hgm_engine.errors import StoreError
from hgm_engine.store.postgres import PostgresStore, redact_url

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def open_memory(location: str) -> Memory:
    return Memory(store=open_store(location))


def test_open_store_picks_the_store_from_the_location(tmp_path, postgres_url):
    sqlite = open_store(tmp_path / "m.db")
    postgres = open_store(postgres_url)
    assert type(sqlite).__name__ == "SQLiteStore" and isinstance(postgres, PostgresStore)
    also = open_store(postgres_url.replace("postgresql://", "postgres://", 1))
    assert isinstance(also, PostgresStore)
    for store in (sqlite, postgres, also):
        store.close()


def test_a_writer_that_waited_for_the_lock_sees_the_commit_it_waited_for(postgres_url):
    first, second = open_memory(postgres_url), open_memory(postgres_url)
    first.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    second.refresh()
    outcome = {}

    def write_second() -> None:
        outcome["report"] = second.apply({"ops": [{"op": "add_node", "id": "b", "type": "action", "parent": "g"}]})

    with first.store.write():  # a slow writer: holds the lock across its commit
        first.apply({"ops": [{"op": "add_node", "id": "a", "type": "action", "parent": "g"}]})
        waiter = threading.Thread(target=write_second)
        waiter.start()
        time.sleep(0.3)
        assert waiter.is_alive(), "the second writer must wait for the lock"
    waiter.join(30)
    # It caught up with t=2 inside its own transaction and committed t=3: no duplicate t, no loss.
    assert outcome["report"].committed and outcome["report"].t == 3
    assert second.query("#g.actions").ids == ["a", "b"]
    assert first.refresh() == 3 and first.query("#g.actions").ids == ["a", "b"]
    first.close()
    second.close()


def test_a_writer_gives_up_after_its_timeout(postgres_url):
    holder, waiter = PostgresStore(postgres_url), PostgresStore(postgres_url, timeout=0.3)
    with holder.write():
        started = time.monotonic()
        with pytest.raises(StoreError) as caught:
            with waiter.write():
                pass
        assert time.monotonic() - started < 5
    assert "cannot lock" in caught.value.message
    with waiter.write():  # free again
        waiter.set_meta("after", "yes")
    assert holder.get_meta("after") == "yes"
    holder.close()
    waiter.close()


def test_an_exception_inside_write_rolls_everything_back(postgres_url):
    store = PostgresStore(postgres_url)
    with pytest.raises(RuntimeError):
        with store.write():
            store.append(Commit(1, "me", "doomed", None, 0.0, ()))
            store.set_meta("doomed", "1")
            assert store.latest_t() == 1  # the transaction sees its own writes
            raise RuntimeError("boom")
    assert store.latest_t() == 0 and store.commits_after(0) == [] and store.get_meta("doomed") is None
    store.close()


def test_a_genesis_load_is_copied_in_bulk_and_reads_back_exactly(postgres_url):
    odd = 'ü — "quoted"\ttab\nline \\ back\x00nul'
    doc = {
        "format": "hgm-graph/1",
        "nodes": [{"id": "g", "type": "goal", "z": 1, "a": 2, "content": odd, "nested": {"y": [1, 2.5, None, True]}}]
        + [{"id": f"a{i}", "type": "action", "status": "pending"} for i in range(300)],
        "edges": [{"from": "g", "to": f"a{i}", "type": "parent_of", "order": i} for i in range(300)]
        + [{"from": "a1", "to": "a2", "type": "before"}],
    }
    with open_memory(postgres_url) as memory:
        assert memory.load(doc).t == 1
        exported = memory.export()
    with open_memory(postgres_url) as memory:
        assert memory.t == 1 and memory.commits(0)[0].genesis
        assert memory.export() == exported
        goal = memory.export()["nodes"][0]
        assert goal["content"] == odd and list(goal) == list(exported["nodes"][0])  # attribute order kept
        assert memory.query("#g.actions.count()").value == 300


def test_memories_in_separate_schemas_of_one_database_are_independent(postgres_url):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA left_memory")
        conn.execute("CREATE SCHEMA right_memory")
    left = open_memory(f"{postgres_url}?options=-csearch_path%3Dleft_memory")
    right = open_memory(f"{postgres_url}?options=-csearch_path%3Dright_memory")
    left.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    assert right.refresh() == 0 and right.graph.node("g") is None
    left.close()
    right.close()


def test_a_lost_connection_is_opened_again(postgres_url):
    import psycopg

    memory = open_memory(postgres_url)
    memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
    time.sleep(0.1)
    assert memory.refresh() == 1  # a read reconnects
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
    time.sleep(0.1)
    assert memory.apply({"ops": [{"op": "add_node", "id": "f", "type": "fact", "content": "x"}]}).t == 2  # so does a write
    memory.close()
    with open_memory(postgres_url) as again:
        assert again.t == 2


def test_a_newer_store_format_is_refused(postgres_url):
    import psycopg

    PostgresStore(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE hgm_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError) as caught:
        PostgresStore(postgres_url)
    assert "store format 99" in caught.value.message


def test_cannot_connect_names_the_server_but_never_the_password():
    pytest.importorskip("psycopg")
    with socket.socket() as sock:  # a port where nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://agent:s3cret-pw@127.0.0.1:{port}/memories"
    with pytest.raises(StoreError) as caught:
        PostgresStore(url, timeout=2)
    error = caught.value
    assert error.category == "store"
    assert "cannot connect" in error.message and f"127.0.0.1:{port}/memories" in error.message
    assert "s3cret" not in error.message and "s3cret" not in repr(error.to_json())
    assert redact_url(url) == f"postgresql://agent:***@127.0.0.1:{port}/memories"


def test_the_engine_works_without_psycopg(tmp_path):
    script = f"""
import sys
sys.modules["psycopg"] = None  # as if it were not installed
from hgm_engine import Memory
from hgm_engine.store import StoreError, open_store
with Memory(store=open_store({str(tmp_path / "m.db")!r})) as m:
    assert m.apply({{"ops": [{{"op": "add_node", "id": "g", "type": "goal"}}]}}).t == 1
try:
    open_store("postgresql://hgm@127.0.0.1:1/x")
except StoreError as err:
    print(err.message)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "pip install 'hgm-engine[postgres]'" in done.stdout


def test_many_processes_may_create_the_tables_at_once(postgres_url):
    script = f"from hgm_engine.store import open_store; open_store({postgres_url!r}).close()"
    children = [subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stderr=subprocess.PIPE, text=True)
                for _ in range(4)]
    for child in children:
        _, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
    with open_memory(postgres_url) as memory:
        assert memory.t == 0


def test_a_read_only_role_can_open_and_read_but_not_write(postgres_url):
    import psycopg

    if os.environ.get("HGM_TEST_POSTGRES_URL"):
        pytest.skip("logs in as a new role: needs the throwaway cluster's trust authentication")
    with open_memory(postgres_url) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    reader = "reader_" + postgres_url.rsplit("/", 1)[1]  # roles are per server: one per test database
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {reader} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}")
    user = postgres_url.split("://", 1)[1].split("@", 1)[0]
    reader_url = postgres_url.replace(f"://{user}@", f"://{reader}@", 1)
    with open_memory(reader_url) as memory:
        assert memory.t == 1 and memory.query("root").ids == ["g"]
        with pytest.raises(StoreError) as caught:
            memory.apply({"ops": [{"op": "add_node", "id": "h", "type": "goal"}]})
        assert "cannot lock" in caught.value.message and memory.t == 1


def test_open_store_without_create_refuses_a_missing_memory(postgres_url):
    with pytest.raises(StoreError) as caught:
        open_store(postgres_url, create=False)
    assert "no memory at" in caught.value.message
    open_store(postgres_url).close()  # creates the tables, but no memory: nothing was committed
    with pytest.raises(StoreError) as caught:
        open_store(postgres_url, create=False)
    assert "nothing was ever committed" in caught.value.message
    with open_memory(postgres_url) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    open_store(postgres_url, create=False).close()
