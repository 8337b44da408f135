"""History: t per commit, as_of, diff, node history, revert, snapshots; the durable stores
(each store test runs on SQLite and on PostgreSQL)."""

from __future__ import annotations

import pytest

from hgm_engine import HGMError, Memory
from hgm_engine.store import open_store
from hgm_engine.errors import ConflictError


def open_memory(location: str) -> Memory:
    return Memory(store=open_store(location))


@pytest.fixture
def memory(travel_graph_path) -> Memory:
    m = Memory.from_file(travel_graph_path)
    m.apply({"reason": "closed Mondays", "ops": [{"op": "update_node", "id": "a_forbidden", "set": {"day": "Tue"}}]})
    m.apply({"reason": "new stop", "ops": [{"op": "add_node", "id": "a9", "type": "action", "parent": "day2", "status": "pending"}]})
    return m


def test_every_commit_gets_the_next_t(memory):
    assert [c.t for c in memory.commits()] == [1, 2, 3]
    assert memory.commits()[0].genesis  # loading the file was the first commit


def test_as_of_answers_with_the_state_at_that_t(memory):
    assert memory.query("#day2.actions", as_of=2).ids == ["a_temple"]
    assert memory.query("#day2.actions").ids == ["a_temple", "a9"]
    assert memory.node("a_forbidden", as_of=1)["day"] == "Mon"
    assert memory.query("nodes.count()", as_of=0).value == 0


def test_as_of_outside_the_history_is_an_error(memory):
    with pytest.raises(HGMError) as caught:
        memory.query("root", as_of=99)
    assert caught.value.category == "invalid-argument"


def test_diff_lists_net_changes_between_two_states(memory):
    assert memory.diff(1, 3) == [
        {"kind": "node_updated", "id": "a_forbidden", "before": {"day": "Mon"}, "after": {"day": "Tue"}},
        {"kind": "node_added", "id": "a9", "node": {"id": "a9", "type": "action", "status": "pending"}},
        {"kind": "edge_added", "from": "day2", "to": "a9", "type": "parent_of"},
    ]
    assert memory.diff(2, 2) == []


def test_history_of_a_node_lists_the_commits_that_touched_it(memory):
    entries = memory.history("a_forbidden")
    assert [e["t"] for e in entries] == [1, 2]
    assert entries[1]["reason"] == "closed Mondays"


def test_revert_appends_a_compensating_transaction(memory):
    report = memory.revert(3, author="me")
    assert report.committed and report.t == 4
    assert memory.node("a9") is None
    assert memory.query("#day2.actions", as_of=3).ids == ["a_temple", "a9"]  # history kept


def test_revert_of_a_later_changed_node_is_a_conflict(memory):
    memory.apply({"ops": [{"op": "update_node", "id": "a_forbidden", "set": {"day": "Wed"}}]})
    with pytest.raises(ConflictError):
        memory.revert(2)


def test_snapshot_is_a_name_for_a_t(memory):
    assert memory.snapshot("before-rewrite") == 3
    memory.apply({"ops": [{"op": "update_node", "id": "a9", "set": {"status": "done"}}]})
    assert memory.query("#a9.where(status = 'pending')", as_of="before-rewrite").ids == ["a9"]
    assert memory.snapshots() == {"before-rewrite": 3}
    with pytest.raises(HGMError) as caught:
        memory.query("root", as_of="nope")
    assert caught.value.category == "unknown-snapshot"


def test_store_reopens_with_state_history_snapshots_and_constraints(store_location, travel_graph_path):
    path = store_location
    with open_memory(path) as m:
        m.load(Memory.from_file(travel_graph_path).export())
        m.apply({"ops": [{"op": "update_node", "id": "a_temple", "set": {"status": "active"}}]})
        m.snapshot("start", 1)
        m.add_constraint("facts_have_content", "each fact must has(content)")
        exported = m.export()
    with open_memory(path) as m:
        assert m.t == 2 and m.export() == exported
        assert m.query("#a_temple.where(status = 'pending')", as_of="start").ids == ["a_temple"]
        assert m.constraints() == {"facts_have_content": "each fact must has(content)"}
        report = m.apply({"ops": [{"op": "add_node", "id": "f_x", "type": "fact"}]})
        assert not report.committed


def test_a_second_memory_on_the_same_store_catches_up_before_writing(store_location):
    path = store_location
    first, second = open_memory(path), open_memory(path)
    first.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    report = second.apply({"ops": [{"op": "add_node", "id": "a", "type": "action", "parent": "g"}]})
    assert report.t == 2
    assert first.refresh() == 2 and first.query("#g.actions").ids == ["a"]
    first.close()
    second.close()


def test_a_refused_commit_leaves_the_store_unchanged(store_location):
    path = store_location
    with open_memory(path) as m:
        m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        m.apply({"ops": [{"op": "add_node", "id": "a", "type": "action"}]})  # refused
    with open_memory(path) as m:
        assert m.t == 1 and m.node("a") is None


def test_result_nodes_show_the_state_when_the_query_ran(memory):
    result = memory.query("#a9")
    memory.apply({"ops": [{"op": "update_node", "id": "a9", "set": {"status": "done"}}]})
    assert result.nodes[0]["status"] == "pending"
    assert memory.query("#a9").nodes[0]["status"] == "done"


def test_revert_of_a_node_creation_conflicts_with_later_edges_to_it():
    m = Memory()
    m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    m.apply({"ops": [{"op": "add_node", "id": "f", "type": "fact"}]})
    m.apply({"ops": [{"op": "add_edge", "from": "g", "to": "f", "type": "related_to"}]})
    with pytest.raises(ConflictError):
        m.revert(2)
    assert m.query("#g.related").ids == ["f"]


def test_revert_of_a_cascading_deletion_brings_the_node_and_its_edges_back():
    m = Memory()
    m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}, {"op": "add_node", "id": "f", "type": "fact"},
                     {"op": "add_edge", "from": "g", "to": "f", "type": "related_to"}]})
    m.apply({"ops": [{"op": "delete_node", "id": "f", "cascade": True}]})
    assert m.revert(2).committed
    assert m.query("#g.related").ids == ["f"]


def test_reverting_an_update_keeps_the_creation_order_on_reopen(store_location):
    path = store_location
    with open_memory(path) as m:
        for node_id in ("g", "x", "y"):
            m.apply({"ops": [{"op": "add_node", "id": node_id, "type": "goal"}]})
        m.apply({"ops": [{"op": "update_node", "id": "x", "set": {"content": "changed"}}]})  # t4
        m.apply({"ops": [{"op": "delete_node", "id": "x"}]})  # t5
        m.revert(5)  # x is created again, now last
        m.revert(4)
        live = [n["id"] for n in m.export()["nodes"]]
    with open_memory(path) as m:
        assert [n["id"] for n in m.export()["nodes"]] == live == ["g", "y", "x"]


def test_refresh_picks_up_constraints_added_by_another_process(store_location):
    path = store_location
    first, second = open_memory(path), open_memory(path)
    first.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    second.refresh()
    first.add_constraint("facts_have_content", "each fact must has(content)")
    second.refresh()
    assert second.constraints() == {"facts_have_content": "each fact must has(content)"}
    assert not second.apply({"ops": [{"op": "add_node", "id": "f", "type": "fact"}]}).committed
    first.close()
    second.close()


def test_cached_historical_views_stay_right_across_later_commits():
    m = Memory()
    m.apply({"ops": [
        {"op": "add_node", "id": "g", "type": "goal"},
        {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "pending"},
        {"op": "add_node", "id": "b", "type": "action", "parent": "g", "status": "pending"},
        {"op": "add_edge", "from": "a", "to": "b", "type": "before", "note": "v1"},
    ]})
    first = m.t
    past = m.export(as_of=first)  # builds and caches nothing yet (t is current)
    m.apply({"ops": [{"op": "update_edge", "from": "a", "to": "b", "type": "before", "set": {"note": "v2"}}]})
    assert m.export(as_of=first) == past  # view built now, then carried across the next commits
    m.apply({"ops": [{"op": "delete_edge", "from": "a", "to": "b", "type": "before"}]})
    m.apply({"ops": [{"op": "add_edge", "from": "a", "to": "b", "type": "before", "note": "v3"}]})
    m.apply({"ops": [{"op": "delete_node", "id": "b"}, {"op": "add_node", "id": "b", "type": "action", "parent": "g"}]})
    m.apply({"ops": [{"op": "update_node", "id": "a", "set": {"status": "done"}}]})
    assert m.export(as_of=first) == past
    assert m.query("#a.next", as_of=first).ids == ["b"]
    assert m.query("#a.next").ids == []
    second = first + 1
    assert m.export(as_of=second)["edges"][-1]["note"] == "v2"


def test_a_reader_sees_other_processes_commits_without_waiting_for_its_own_writer(store_location):
    """What a server asks before each read: ``behind_store`` (never waits for this process's
    commit in progress) and ``refresh(wait=False)`` (None instead of waiting)."""
    import threading

    writer, reader = open_memory(store_location), open_memory(store_location)
    try:
        assert not reader.behind_store() and reader.refresh(wait=False) == 0
        writer.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        assert reader.behind_store()
        assert reader.refresh(wait=False) == 1 and reader.query("root").ids == ["g"]
        assert not reader.behind_store()

        # A query running in another thread: catching up without waiting is refused, the
        # state stays as it was, and a waiting refresh catches up once the query is done.
        writer.apply({"ops": [{"op": "add_node", "id": "a", "type": "action", "parent": "g"}]})
        with reader.reading():
            assert reader.refresh(wait=False) is None
            assert reader.t == 1 and reader.query("#g.actions").ids == []
        assert reader.refresh() == 2 and reader.query("#g.actions").ids == ["a"]

        # A commit of the reader's own process is under way. While it queues for the store's
        # write lock (it holds only the memory's), readers in other threads catch up by
        # themselves; once it holds the store's lock it applies the others' commits itself,
        # and then refresh(wait=False) gives None and refresh() waits only until it has.
        results: dict[str, object] = {}

        def ask(name, call):
            results[name] = call()

        writer.apply({"ops": [{"op": "add_node", "id": "b", "type": "action", "parent": "g"}]})
        with reader.exclusive():
            quick = threading.Thread(target=ask, args=("behind", reader.behind_store))
            quick.start()
            quick.join(10)
            assert results["behind"] is True
            queued = threading.Thread(target=ask, args=("queued", lambda: reader.refresh(wait=False)))
            queued.start()
            queued.join(10)
            assert results["queued"] == 3
        writer.apply({"ops": [{"op": "add_node", "id": "c", "type": "action", "parent": "g"}]})
        with reader.exclusive(), reader.state.catch_up_lock:
            ask_now = threading.Thread(target=ask, args=("no-wait", lambda: reader.refresh(wait=False)))
            ask_now.start()
            ask_now.join(10)
            assert results["no-wait"] is None
            waiting = threading.Thread(target=ask, args=("wait", reader.refresh))
            waiting.start()
            waiting.join(0.3)
            assert waiting.is_alive(), "refresh must wait until the state reaches the store's t"
            reader.state.catch_up()  # what the commit in progress does first
            waiting.join(10)
            assert results["wait"] == 4  # answered while the "commit" still holds the locks
        assert reader.query("#g.actions").ids == ["a", "b", "c"]
    finally:
        writer.close()
        reader.close()


def test_readers_catching_up_while_local_and_remote_writers_commit_leave_the_state_exact(tmp_path):
    """Threads of one memory commit and read while another memory on the same file commits:
    readers that catch up on their own (between the local commits) never apply a commit twice
    or miss one; the final state is the store's."""
    import threading

    path = str(tmp_path / "m.db")
    local, remote = open_memory(path), open_memory(path)
    local.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    errors: list[BaseException] = []
    seen: list[int] = []

    def write(memory, prefix, count):
        try:
            for i in range(count):
                memory.apply({"ops": [{"op": "add_node", "id": f"{prefix}{i}", "type": "action", "parent": "g"}]})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def read(stop):
        try:
            while not stop.is_set():
                t = local.refresh(wait=False)
                if t is None:
                    t = local.refresh()
                ids = local.query("#g.actions").ids
                assert len(ids) == len(set(ids))
                seen.append(t)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    stop = threading.Event()
    threads = [threading.Thread(target=write, args=(local, "l", 40)), threading.Thread(target=write, args=(local, "k", 40)),
               threading.Thread(target=write, args=(remote, "r", 40))]
    readers = [threading.Thread(target=read, args=(stop,)) for _ in range(2)]
    for thread in threads + readers:
        thread.start()
    for thread in threads:
        thread.join(120)
    stop.set()
    for thread in readers:
        thread.join(30)
    assert not errors, errors
    assert local.refresh() == 121 and seen
    with open_memory(path) as fresh:
        assert local.export() == fresh.export()
        assert sorted(local.query("#g.actions").ids) == sorted([f"{p}{i}" for p in "lkr" for i in range(40)])
    local.close()
    remote.close()


def test_history_reads_never_wait_for_this_process_s_commit(store_location):
    """Readers under the memory's read lock (as_of views, snapshot names, diffs, history)
    read the store on its second connection: a commit of the same process holds the first
    one and may be waiting for those readers, which would otherwise wait for it."""
    import threading

    memory, other = open_memory(store_location), open_memory(store_location)
    try:
        memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal", "status": "active"}]})
        memory.apply({"ops": [{"op": "update_node", "id": "g", "set": {"status": "done"}}]})
        memory.snapshot("before-done", 1)
        results: dict[str, object] = {}

        def read() -> None:
            results["as_of"] = memory.query("#g", as_of=1).nodes[0]["status"]
            results["snapshot"] = memory.node("g", as_of="before-done")["status"]
            results["diff"] = len(memory.diff(1, 2))
            results["history"] = [entry["t"] for entry in memory.history("g")]

        with memory.store.write():  # what a commit of this process holds while it works
            reader = threading.Thread(target=read)
            reader.start()
            reader.join(10)
            finished = not reader.is_alive()
        reader.join(30)
        assert finished, "a history read waited for the store's write lock"
        assert results == {"as_of": "active", "snapshot": "active", "diff": 1, "history": [1, 2]}
    finally:
        memory.close()
        other.close()


def test_a_read_after_an_acknowledged_commit_sees_it_whoever_committed(tmp_path):
    """Linearizable reads: whatever refresh() answers (caught up, caught up by itself, or the
    state while this process's own commit is still under way), its t covers every commit
    that was acknowledged — by this memory or another one on the same file — before it was
    asked."""
    import threading
    import time as clock

    path = str(tmp_path / "m.db")
    local, remote = open_memory(path), open_memory(path)
    local.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    acknowledged: list[tuple[float, int]] = []  # (when apply returned, its t)
    reads: list[tuple[float, int]] = []  # (when refresh was called, the t it answered)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def write(memory, prefix):
        try:
            for i in range(40):
                t = memory.apply({"ops": [{"op": "add_node", "id": f"{prefix}{i}", "type": "action", "parent": "g"}]}).t
                with lock:
                    acknowledged.append((clock.perf_counter(), t))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def read(stop):
        try:
            while not stop.is_set():
                asked = clock.perf_counter()
                t = local.refresh(wait=False)
                if t is None:
                    t = local.refresh()
                reads.append((asked, t))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    stop = threading.Event()
    writers = [threading.Thread(target=write, args=(local, "l")), threading.Thread(target=write, args=(remote, "r"))]
    readers = [threading.Thread(target=read, args=(stop,)) for _ in range(2)]
    for thread in writers + readers:
        thread.start()
    for thread in writers:
        thread.join(120)
    stop.set()
    for thread in readers:
        thread.join(30)
    local.close()
    remote.close()
    assert not errors, errors
    acknowledged.sort()
    stale = []
    for asked, t in reads:
        known = [ack_t for when, ack_t in acknowledged if when < asked]
        if known and t < max(known):
            stale.append((asked, t, max(known)))
    assert len(reads) > 100 and not stale, stale[:5]


def test_every_store_implements_the_store_interface(store_location):
    from hgm_engine.store import InMemoryStore, Store

    with pytest.raises(TypeError):
        Store()  # an abstract base class: a store must implement every abstract method
    store = open_store(store_location)
    try:
        assert isinstance(store, Store) and isinstance(InMemoryStore(), Store)
    finally:
        store.close()


def test_a_load_into_an_empty_store_of_any_kind_is_a_genesis_commit(store_location):
    doc = {"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []}
    for memory in (Memory(), open_memory(store_location)):
        try:
            assert memory.load(doc).t == 1
            (commit,) = memory.commits()
            assert commit.genesis and memory.query("root").ids == ["g"]
        finally:
            memory.close()
