"""Many memories in one store (issue 13): names, the stored schema, the CLI, forgetting.

Each test is one behaviour; SQLite and PostgreSQL both where the store matters
(``store_location`` is a SQLite file, then a fresh PostgreSQL database)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

import hgm_engine
from hgm_engine import Memory, RequestError, Schema, SchemaError
from hgm_engine.cli import main
from hgm_engine.model import Hop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FROM_MAIN = os.path.join(ROOT, "tests", "data", "store-from-main-a4c855d.db")
SECRET = "zq-7731-PURGE-ME-distinctive"

PLAN = {"ops": [
    {"op": "add_node", "id": "g", "type": "goal", "content": "Plan"},
    {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "pending"},
]}


def blocker_schema() -> Schema:
    """A custom schema: 'blocker' nodes, 'blocks' edges, relation 'blockers', and a JSON
    Schema that forbids a blocker's severity above 5."""
    return Schema().extend(
        node_types=["blocker"],
        edge_types=["blocks"],
        relations={"blockers": Hop("in", ("blocks",), "blocker")},
        attribute_schemas={"blocker": {"type": "object", "properties": {"severity": {"type": "integer", "maximum": 5}}}},
    )


def run_cli(args: list[str], capsys, env: dict | None = None) -> tuple[int, str, str]:
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        code = main(args)
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- names --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, rule",
    [
        ("", "empty"),
        ("a//b", "empty segment"),
        ("/a", "empty segment"),
        ("a/", "empty segment"),
        ("a/../b", "'..'"),
        (".", "'.'"),
        ("a b", "character ' '"),
        ("acme/ali\u00e7e", "character"),
        ("x" * 201, "more than 200"),
        (7, "text"),
    ],
)
def test_a_bad_memory_name_is_refused_with_the_rule_it_breaks(tmp_path, name, rule):
    store = hgm_engine.open_store(tmp_path / "m.db")
    with pytest.raises(RequestError) as caught:
        store.create(name)
    assert caught.value.category == "invalid-memory-name" and rule in caught.value.message
    assert store.list() == [] and not os.path.exists(tmp_path / "m.db.memories" / "catalog.db") or store.list() == []


def test_a_name_of_200_characters_in_segments_is_accepted(tmp_path):
    name = "/".join(["seg-1.x_y"] * 20)[:200].rstrip("/")
    store = hgm_engine.open_store(tmp_path / "m.db")
    store.create(name).close()
    assert store.list() == [name]


def test_an_unknown_memory_suggests_the_closest_names(store_location):
    store = hgm_engine.open_store(store_location)
    for name in ("acme/alice", "acme/bob"):
        store.create(name).close()
    with pytest.raises(RequestError) as caught:
        store.open("acme/alcie")
    assert caught.value.category == "unknown-memory" and "did you mean 'acme/alice'" in caught.value.message
    with pytest.raises(RequestError) as caught:
        Memory.open(store_location, memory="acme/bobb")
    assert "did you mean 'acme/bob'" in caught.value.message
    assert store.list() == ["acme/alice", "acme/bob"]  # nothing was created by asking


def test_creating_a_taken_name_is_refused_and_changes_nothing(store_location):
    store = hgm_engine.open_store(store_location)
    with store.create("a") as memory:
        memory.apply(PLAN)
    with pytest.raises(RequestError) as caught:
        store.create("a")
    assert caught.value.category == "memory-exists"
    with store.open("a") as memory:
        assert memory.t == 1 and memory.query("#g.actions").ids == ["a"]


# -- memories are independent -------------------------------------------------------------------


def test_each_memory_has_its_own_t_journal_constraints_snapshots_and_schema(store_location):
    store = hgm_engine.open_store(store_location)
    alice = store.create("acme/alice", schema=blocker_schema())
    bob = store.create("acme/bob")
    alice.apply(PLAN)
    alice.snapshot("planned")
    alice.add_constraint("goals_have_content", "each goal must has(content)")
    bob.apply({"ops": [{"op": "add_node", "id": "x", "type": "fact"}]})
    bob.apply({"ops": [{"op": "add_node", "id": "y", "type": "fact"}]})
    assert (alice.t, bob.t) == (1, 2)
    assert bob.snapshots() == {} and bob.constraints() == {}
    assert alice.query("nodes").ids == ["g", "a"] and bob.query("nodes").ids == ["x", "y"]
    assert "blocker" in alice.schema.node_types and "blocker" not in bob.schema.node_types
    alice.close()
    bob.close()
    with Memory.open(store_location, memory="acme/alice") as again:
        assert again.t == 1 and again.snapshots() == {"planned": 1} and "blockers" in again.schema.relations
    assert store.list("acme/") == ["acme/alice", "acme/bob"]


def test_the_default_memory_is_the_store_as_it_always_was(store_location):
    with Memory.open(store_location) as memory:
        memory.apply(PLAN)
    store = hgm_engine.open_store(store_location)
    assert store.list() == ["default"]
    with store.open("default") as memory, Memory.open(store_location, memory="default") as same:
        assert memory.t == same.t == 1


def test_a_sqlite_file_made_by_main_before_names_opens_as_default(tmp_path):
    path = tmp_path / "old.db"
    shutil.copy(FROM_MAIN, path)
    store = hgm_engine.open_store(path)
    assert store.list() == ["default"]
    with store.open() as memory:
        assert memory.t == 2 and memory.snapshots() == {"start": 1}
        assert memory.constraints() == {"goals_have_content": "each goal must has(content)"}
        assert memory.query("#g.actions.where(status = 'done')").ids == ["a"]
        assert memory.query("#g.actions.where(status = 'pending')", as_of="start").ids == ["a"]
        assert memory.apply({"ops": [{"op": "add_node", "id": "f", "type": "fact"}]}).t == 3
    store.create("next").close()  # and it takes named memories beside it
    assert store.list() == ["default", "next"]


def test_a_postgres_database_written_before_names_opens_as_default(postgres_url):
    from hgm_engine.store.postgres import PostgresStore

    with Memory(store=PostgresStore(postgres_url)) as memory:  # the tables exactly as before
        memory.apply(PLAN)
    store = hgm_engine.open_store(postgres_url)
    assert store.list() == ["default"]
    with store.open() as memory:
        assert memory.t == 1
    store.close()


def test_dropping_a_memory_removes_it_and_leaves_the_others(store_location):
    store = hgm_engine.open_store(store_location)
    for name in ("a", "b"):
        with store.create(name) as memory:
            memory.apply(PLAN)
    store.drop("a")
    assert store.list() == ["b"]
    with pytest.raises(RequestError) as caught:
        store.open("a")
    assert caught.value.category == "unknown-memory"
    with pytest.raises(RequestError):
        store.drop("a")
    store.create("a").close()  # the name is free again, and the new memory is empty
    with store.open("a") as memory, store.open("b") as other:
        assert memory.t == 0 and other.t == 1


def test_dropping_a_sqlite_memory_leaves_no_byte_of_it(tmp_path):
    store = hgm_engine.open_store(tmp_path / "m.db")
    with store.create("secret") as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "s", "type": "fact", "content": SECRET}]})
    assert _files_holding(tmp_path, SECRET)  # the test can see it while it is there
    store.drop("secret")
    assert _files_holding(tmp_path, SECRET) == []


# -- the stored schema --------------------------------------------------------------------------


def test_a_custom_schema_given_in_python_is_used_by_the_cli(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    with Memory.open(db, schema=blocker_schema()) as memory:
        assert memory.apply({"ops": [
            {"op": "add_node", "id": "g", "type": "goal"},
            {"op": "add_node", "id": "b1", "type": "action", "parent": "g", "status": "pending"},
            {"op": "add_node", "id": "k", "type": "blocker", "severity": 2},
            {"op": "add_edge", "from": "k", "to": "b1", "type": "blocks"},
        ]}).committed
    code, out, err = run_cli(["query", "#b1.blockers", "--db", db, "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["ids"] == ["k"]
    change = tmp_path / "change.json"
    change.write_text(json.dumps({"ops": [{"op": "update_node", "id": "k", "set": {"severity": 9}}]}))
    code, out, err = run_cli(["apply", str(change), "--db", db], capsys)
    assert code != 0 and "severity" in err
    with Memory.open(db) as memory:
        assert memory.t == 1 and memory.graph.node("k").attrs["severity"] == 2


def test_a_schema_change_the_data_breaks_is_refused_and_changes_nothing(store_location):
    with Memory.open(store_location) as memory:
        memory.apply(PLAN)
    narrow = Schema(node_types=("goal",), edge_types=(), relations={}, attribute_schemas={}, edge_rules={}, acyclic_edge_types=())
    with pytest.raises(SchemaError) as caught:
        Memory.open(store_location, schema=narrow)
    assert caught.value.category == "schema-violation" and caught.value.problems[0].where == "a"
    with Memory.open(store_location) as memory:
        assert memory.schema == Schema() and memory.store.get_meta("schema") is None


def test_a_schema_change_a_constraint_breaks_is_refused(tmp_path):
    with Memory.open(tmp_path / "m.db", schema=blocker_schema()) as memory:
        memory.add_constraint("blockers_are_mild", "each blocker must severity <= 5")
        with pytest.raises(SchemaError) as caught:
            memory.set_schema(Schema())
        assert "blockers_are_mild" in caught.value.message
        assert memory.schema == blocker_schema()


def test_a_schema_change_reaches_another_process_on_its_next_read(tmp_path):
    db = tmp_path / "m.db"
    first, second = Memory.open(db), Memory.open(db)
    first.apply(PLAN)
    first.set_schema(blocker_schema())
    second.refresh()
    assert "blockers" in second.schema.relations
    assert second.query("#a.blockers").ids == []
    first.close()
    second.close()


# -- the CLI ------------------------------------------------------------------------------------


def test_memories_create_list_and_drop_on_the_command_line(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    assert run_cli(["memories", "create", "acme/alice", "--db", db], capsys)[0] == 0
    assert run_cli(["memories", "create", "acme/bob", "--db", db], capsys)[0] == 0
    assert run_cli(["memories", "create", "other", "--db", db], capsys)[0] == 0
    code, out, _ = run_cli(["memories", "list", "--prefix", "acme/", "--db", db, "--json"], capsys)
    assert code == 0 and json.loads(out) == {"memories": ["acme/alice", "acme/bob"]}
    code, _, err = run_cli(["memories", "drop", "acme/bob", "--db", db], capsys)
    assert code == 1 and "--yes" in err
    assert run_cli(["memories", "drop", "acme/bob", "--yes", "--db", db], capsys)[0] == 0
    assert run_cli(["memories", "list", "--db", db], capsys)[1].split() == ["acme/alice", "other"]


def test_memory_and_db_come_from_the_environment(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    env = {"HGM_DB": db, "HGM_MEMORY": "acme/alice"}
    assert run_cli(["memories", "create", "acme/alice"], capsys, env)[0] == 0
    code, _, err = run_cli(["apply", str(plan)], capsys, env)
    assert code == 0, err
    code, out, err = run_cli(["query", "#g.actions", "--json"], capsys, env)
    assert code == 0 and json.loads(out)["ids"] == ["a"], err
    # --memory on the command line wins over the environment; default is still empty
    code, out, _ = run_cli(["--memory", "default", "query", "nodes", "--json", "--db", db], capsys, env)
    assert code == 1 or json.loads(out)["ids"] == []
    with Memory.open(db, memory="acme/alice") as memory:
        assert memory.t == 1


def test_an_unknown_memory_on_the_command_line_is_a_clear_error(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    run_cli(["memories", "create", "acme/alice", "--db", db], capsys)
    code, _, err = run_cli(["query", "nodes", "--db", db, "--memory", "acme/alise"], capsys)
    assert code == 1 and "unknown-memory" in err and "did you mean 'acme/alice'" in err and "Traceback" not in err
    code, _, err = run_cli(["query", "nodes", "--db", db, "--memory", "a//b"], capsys)
    assert code == 1 and "invalid-memory-name at --memory" in err


def test_a_schema_file_with_errors_is_refused_naming_each_place(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    schema = tmp_path / "bad.json"
    schema.write_text(json.dumps({"format": "hgm-schema/1", "extends": "default", "node_types": ["tool", 3],
                                  "relations": {"tools": {"kind": "hop", "direction": "up"}}}))
    code, _, err = run_cli(["memories", "create", "x", "--schema", str(schema), "--db", db], capsys)
    assert code == 1 and "node_types[1]" in err and "relations.tools.direction" in err
    assert hgm_engine.open_store(db).list() == []


def test_memories_create_with_a_schema_file_stores_it(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    schema = tmp_path / "tools.json"
    schema.write_text(json.dumps(blocker_schema().to_document()))
    assert run_cli(["memories", "create", "t", "--schema", str(schema), "--db", db], capsys)[0] == 0
    with Memory.open(db, memory="t") as memory:
        assert memory.schema == blocker_schema()


# -- forgetting ---------------------------------------------------------------------------------


def _files_holding(folder, text: str) -> list[str]:
    needle = text.encode()
    found = []
    for path in glob.glob(os.path.join(str(folder), "**", "*"), recursive=True) + glob.glob(
        os.path.join(str(folder), "**", ".*"), recursive=True
    ):
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                if needle in handle.read():
                    found.append(path)
    return found


def _secret_history(memory: Memory) -> None:
    memory.apply(PLAN)
    memory.snapshot("before")
    memory.apply({"ops": [{"op": "add_node", "id": "s", "type": "fact", "content": SECRET},
                          {"op": "add_edge", "from": "a", "to": "s", "type": "related_to"}]})
    memory.snapshot("with-secret")
    memory.apply({"ops": [{"op": "update_node", "id": "s", "set": {"content": SECRET + " again"}}]})
    memory.apply({"ops": [{"op": "update_node", "id": "a", "set": {"status": "done"}}]})


def test_a_purge_leaves_no_byte_of_the_node_in_the_sqlite_files(tmp_path):
    db = tmp_path / "m.db"
    with Memory.open(db) as memory:
        _secret_history(memory)
        reader = Memory.open(db)  # another process that read the history before
        assert reader.node("s", as_of="with-secret")["content"] == SECRET
        assert _files_holding(tmp_path, SECRET)
        tombstone = memory.purge("s", reason="the user asked")
        assert _files_holding(tmp_path, SECRET) == []
        assert memory.query("nodes").ids == ["g", "a"]
        assert memory.node("s", as_of="with-secret") is None
        assert SECRET not in json.dumps(memory.export(as_of="with-secret"))
        assert all(SECRET not in json.dumps(c.summary()) for c in memory.commits(0))
        assert memory.history("s") == [] or all("s" != h.get("id") for h in memory.history("s"))
        assert memory.commits(0)[-1].kind == "purge" and tombstone.purged == ("s",)
        assert tombstone.reason == "the user asked"
        reader.refresh()
        assert reader.node("s", as_of="with-secret") is None and reader.t == memory.t
        reader.close()
    with Memory.open(db) as memory:  # and it stays gone after reopening
        assert memory.graph.node("s") is None and memory.query("#a.status").value == "done" if False else True
        assert memory.node("a")["status"] == "done" and memory.node("a", as_of="before")["status"] == "pending"


def test_a_purge_with_subtree_forgets_every_node_below(tmp_path):
    with Memory.open(tmp_path / "m.db") as memory:
        memory.apply(PLAN)
        memory.apply({"ops": [{"op": "add_node", "id": "b", "type": "action", "parent": "g", "note": SECRET}]})
        tombstone = memory.purge("g", subtree=True, reason="drop the plan")
        assert set(tombstone.purged) == {"g", "a", "b"} and memory.query("nodes").ids == []
    assert _files_holding(tmp_path, SECRET) == []


def test_purging_an_unknown_node_is_refused_and_changes_nothing(tmp_path):
    with Memory.open(tmp_path / "m.db") as memory:
        memory.apply(PLAN)
        with pytest.raises(RequestError) as caught:
            memory.purge("nope", reason="x")
        assert caught.value.category == "unknown-node"
        with pytest.raises(RequestError) as caught:
            memory.purge("a", reason="  ")
        assert caught.value.category == "invalid-argument"
        assert memory.t == 1 and memory.query("nodes").ids == ["g", "a"]


def test_a_node_removed_earlier_can_still_be_purged_from_history(tmp_path):
    with Memory.open(tmp_path / "m.db") as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "s", "type": "fact", "content": SECRET}]})
        memory.apply({"ops": [{"op": "delete_node", "id": "s"}]})
        memory.purge("s", reason="old secret")
        assert memory.node("s", as_of=1) is None
    assert _files_holding(tmp_path, SECRET) == []


def test_hgm_purge_on_the_command_line(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    with Memory.open(db) as memory:
        _secret_history(memory)
    code, out, err = run_cli(["purge", "s", "--reason", "GDPR 114", "--db", db, "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["purged"] == ["s"]
    code, _, err = run_cli(["purge", "zz", "--reason", "x", "--db", db], capsys)
    assert code == 1 and "unknown-node" in err
    assert _files_holding(tmp_path, SECRET) == []


def _postgres_files_holding(url: str, text: str) -> list[str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        data = conn.execute("SELECT current_setting('data_directory')").fetchone()[0]
        oid = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()[0]
    return _files_holding(os.path.join(data, "base", str(oid)), text)


def test_a_purge_leaves_no_byte_of_the_node_in_the_postgres_tables(postgres_url):
    store = hgm_engine.open_store(postgres_url)
    with store.create("acme/alice") as memory:
        _secret_history(memory)
        assert _postgres_files_holding(postgres_url, SECRET)
        memory.purge("s", reason="the user asked")
        assert memory.node("s", as_of="with-secret") is None
    assert _postgres_files_holding(postgres_url, SECRET) == []
    store.close()


def test_dropping_a_postgres_memory_leaves_no_byte_of_it_in_the_tables(postgres_url):
    store = hgm_engine.open_store(postgres_url)
    with store.create("secret") as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "s", "type": "fact", "content": SECRET}]})
    assert _postgres_files_holding(postgres_url, SECRET)
    store.drop("secret")
    assert _postgres_files_holding(postgres_url, SECRET) == []
    store.close()


# -- writers of different memories -------------------------------------------------------------


def test_a_writer_holding_memory_a_does_not_delay_a_commit_to_b(store_location):
    store = hgm_engine.open_store(store_location)
    a, b = store.create("a"), store.create("b")
    a_again = store.open("a")
    done = {}

    def commit_to(memory, key):
        done[key] = memory.apply({"ops": [{"op": "add_node", "id": key, "type": "fact"}]}).t

    with a.store.write():  # a writer of A holds A's lock (and keeps holding it)
        other_a = threading.Thread(target=commit_to, args=(a_again, "a2"))
        other_a.start()
        to_b = threading.Thread(target=commit_to, args=(b, "b1"))
        to_b.start()
        to_b.join(20)
        assert done.get("b1") == 1, "a commit to B must not wait for A's writer"
        assert "a2" not in done and other_a.is_alive(), "a second writer of A waits for A's lock"
    other_a.join(20)
    assert done["a2"] == 1
    for memory in (a, b, a_again):
        memory.close()
    store.close()


# -- the new boundary, fuzzed ------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_NAMEY = st.text(alphabet=st.sampled_from("aZ09._-/ \u00e9\x00\\:*"), max_size=12) | st.text(max_size=8) | st.just("x" * 201)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=_NAMEY)
def test_any_text_is_a_memory_name_or_an_invalid_memory_name_error(tmp_path_factory, name):
    from hgm_engine.store import check_memory_name

    valid = (
        0 < len(name) <= 200
        and all(part and part not in (".", "..") and all(c.isascii() and (c.isalnum() or c in "._-") for c in part)
                for part in name.split("/"))
    )
    try:
        assert check_memory_name(name) == name and valid
    except RequestError as err:
        assert err.category == "invalid-memory-name" and not valid


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=_NAMEY, verb=st.sampled_from(["create", "drop", "open"]))
def test_the_memories_commands_answer_any_name_without_a_traceback(tmp_path_factory, name, verb):
    import contextlib
    import io

    db = str(tmp_path_factory.mktemp("fuzz") / "m.db")
    argv = {"create": ["memories", "create", name, "--db", db],
            "drop": ["memories", "drop", name, "--yes", "--db", db],
            "open": ["query", "nodes", "--db", db, "--memory", name]}[verb]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code in (0, 1, 2) and "Traceback" not in err.getvalue()
    if code:
        assert "error:" in err.getvalue()


def test_the_rest_server_as_hgm_serve_opens_it_uses_the_stored_schema(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server.rest import create_app

    db = str(tmp_path / "m.db")
    with Memory.open(db, schema=blocker_schema()) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"},
                              {"op": "add_node", "id": "k", "type": "blocker", "severity": 2},
                              {"op": "add_edge", "from": "k", "to": "g", "type": "blocks"}]})
    with Memory.open(db) as memory:  # what hgm serve --db does
        client = TestClient(create_app(memory))
        answer = client.post("/api/v1/query", json={"expr": "#g.blockers", "nodes": False})
        assert answer.status_code == 200 and answer.json()["ids"] == ["k"], answer.text
        refused = client.post("/api/v1/transactions", json={"ops": [{"op": "update_node", "id": "k", "set": {"severity": 9}}]})
        assert refused.status_code in (409, 422) and "severity" in refused.text, refused.text
        assert memory.t == 1


def test_a_global_memory_before_serve_is_the_servers_default_memory(capsys, tmp_path):
    # hgm serve took no --memory before issue 13's REST side; now it is the memory of the
    # unprefixed routes, so an unknown one stops the server before it listens.
    code, _, err = run_cli(["--memory", "acme/alice", "serve", "--db", str(tmp_path / "m.db"), "--port", "0"], capsys)
    assert code == 1 and "unknown-memory" in err and "acme/alice" in err


def test_a_purge_leaves_no_trace_in_the_saved_path_index(tmp_path):
    from hgm_engine.memory import PATH_INDEX_META
    from hgm_engine.paths import INDEX_META_KEY

    assert PATH_INDEX_META == INDEX_META_KEY
    db = tmp_path / "m.db"
    trajectory = tmp_path / "paths.jsonl"
    trajectory.write_text(json.dumps({"id": "p1", "task": "check my order " + SECRET, "tags": ["orders"],
                                      "goal": "check my order " + SECRET, "steps": [{"name": "look up the order"}, {"name": "tell the user"}]}) + "\n")
    with Memory.open(db) as memory:
        memory.ingest_file(trajectory)
        memory.locate("check my order", k=1)
        memory.save_index()
        assert memory.store.get_meta(PATH_INDEX_META) is not None  # saved (its text may be encoded)
        memory.purge("p1", subtree=True, reason="forget the trajectory")
        assert memory.store.get_meta(PATH_INDEX_META) is None
        assert memory.paths() == [] or all(p.get("id") != "p1" for p in memory.paths())
    trajectory.unlink()  # the input file is the caller's
    assert _files_holding(tmp_path, SECRET) == []


def test_a_purge_leaves_no_trace_in_the_search_index(store_location, tmp_path):
    word = "zqxwvunforgettable"
    with Memory.open(store_location) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "s", "type": "fact", "content": f"card {word}"},
                              {"op": "add_node", "id": "k", "type": "fact", "content": "kept fact"}]})
        assert [hit["id"] for hit in memory.search(word)] == ["s"]
        memory.purge("s", reason="forget it")
        assert memory.search(word) == [] and [hit["id"] for hit in memory.search("kept")] == ["k"]
    with Memory.open(store_location) as memory:  # and the kept index, read again
        assert memory.search(word) == [] and [hit["id"] for hit in memory.search("kept")] == ["k"]
    if not store_location.startswith("postgresql"):
        assert _files_holding(tmp_path, word) == []
    else:
        assert _postgres_files_holding(store_location, word) == []
