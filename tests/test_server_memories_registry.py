"""The registry of open memories (hgm_engine/server/registry.py): at most max_open resident,
least recently used evicted first, a leased memory never closed, an evicted one reopened with
everything committed, thread-safe."""

from __future__ import annotations

import random
import threading

import pytest

from hgm_engine import Memory, open_store
from hgm_engine.errors import RequestError
from hgm_engine.server.registry import MemoryRegistry

GOAL = {"ops": [{"op": "add_node", "id": "g", "type": "goal", "content": "x"}]}


@pytest.fixture
def store_path(tmp_path) -> str:
    path = str(tmp_path / "memories.db")
    with open_store(path) as store:
        for name in ("a", "b", "c", "d"):
            store.create(name).close()
    return path


def _touch(registry: MemoryRegistry, *names: str) -> None:
    for name in names:
        with registry.lease(name):
            pass


def test_the_least_recently_used_memory_is_evicted_first(store_path):
    registry = MemoryRegistry(store_path, max_open=2)
    _touch(registry, "a", "b", "a", "c")  # b is now the least recently used
    assert registry.resident() == ["a", "c"]
    _touch(registry, "d")
    assert registry.resident() == ["c", "d"]
    assert registry.stats()["evicted"] == 2
    registry.close()


def test_a_leased_memory_is_not_evicted(store_path):
    registry = MemoryRegistry(store_path, max_open=1)
    with registry.lease("a") as held:
        _touch(registry, "b", "c")
        assert "a" in registry.resident()
        assert held.query("nodes")["t"] == 0  # still open and usable
    # once released, it goes as soon as another memory needs the room
    _touch(registry, "d")
    assert registry.resident() == ["d"]
    registry.close()


def test_more_leased_than_max_open_stay_open_and_shrink_back_after(store_path):
    registry = MemoryRegistry(store_path, max_open=1)
    leases = [registry.lease(name) for name in ("a", "b", "c")]
    assert sorted(registry.resident()) == ["a", "b", "c"]
    for lease in leases:
        lease.release()
    assert len(registry.resident()) == 1
    registry.close()


def test_an_evicted_memory_reopens_with_what_was_committed(store_path):
    registry = MemoryRegistry(store_path, max_open=1)
    with registry.lease("a") as service:
        service.transact(GOAL)
    _touch(registry, "b")
    assert registry.resident() == ["b"]
    # another process commits to the evicted memory meanwhile
    with open_store(store_path).open("a") as other:
        other.apply({"ops": [{"op": "add_node", "id": "h", "type": "goal"}]})
    with registry.lease("a") as service:
        assert sorted(service.query("root")["ids"]) == ["g", "h"]
        assert service.health()["t"] == 2
    assert registry.stats()["opened"] == 3
    registry.close()


def test_an_unknown_memory_suggests_names_and_keeps_nothing_open(store_path):
    registry = MemoryRegistry(store_path, max_open=2)
    with pytest.raises(RequestError) as err:
        registry.lease("aa")
    assert err.value.category == "unknown-memory" and "'a'" in err.value.message
    with pytest.raises(RequestError) as err:
        registry.lease("a//b")
    assert err.value.category == "invalid-memory-name"
    assert registry.resident() == [] and registry.in_use() == {}
    registry.close()


def test_the_registry_of_one_memory_serves_default_only():
    memory = Memory()
    registry = MemoryRegistry.of(memory)
    with pytest.raises(RequestError) as err:
        registry.lease("acme")
    assert err.value.category == "unknown-memory"
    with pytest.raises(RequestError) as err:
        registry.create("acme")
    assert err.value.category == "not-implemented"
    registry.close()
    assert memory.apply(GOAL).t == 1  # the caller's memory stays open


def test_drop_waits_for_the_requests_using_the_memory(store_path):
    registry = MemoryRegistry(store_path, max_open=4)
    lease = registry.lease("a")
    dropped = threading.Event()
    worker = threading.Thread(target=lambda: (registry.drop("a"), dropped.set()))
    worker.start()
    assert not dropped.wait(0.2)  # still in use
    with pytest.raises(RequestError) as err:
        registry.lease("a")  # a new request: the memory is going
    assert err.value.category == "unknown-memory"
    assert lease.service.query("nodes")["t"] == 0  # the request in flight still works
    lease.release()
    worker.join(10)
    assert dropped.is_set() and registry.list() == ["b", "c", "d"] and "a" not in registry.resident()
    registry.close()


def test_concurrent_requests_never_see_a_closed_memory(store_path):
    registry = MemoryRegistry(store_path, max_open=2)
    names = ["a", "b", "c", "d"]
    errors: list[BaseException] = []
    made = {name: 0 for name in names}
    count_lock = threading.Lock()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(25):
                name = rng.choice(names)
                with registry.lease(name) as service:
                    if rng.random() < 0.3:
                        service.transact({"ops": [{"op": "add_node", "type": "fact", "content": f"{seed}"}]})
                        with count_lock:
                            made[name] += 1
                    service.query("nodes")  # fails if the memory was closed under us
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    stats = registry.stats()
    assert not errors, errors
    assert registry.in_use() == {} and len(registry.resident()) <= 2 and stats["evicted"] > 0
    registry.close()
    # every commit is in the store, whatever was evicted in between
    with open_store(store_path) as store:
        for name in names:
            with store.open(name) as memory:
                assert len(memory) == memory.t == made[name]


def test_an_evicted_memory_is_freed_while_others_keep_opening(store_path):
    # Loading a memory freezes the collector's view of every object (gc.freeze), closing one
    # unfreezes it: without a collection between the two, an evicted memory's reference
    # cycles were frozen again by the next open and its graph stayed in RAM for good (the
    # server's RSS grew by about 0.8 MB per memory opened; bench/memories_bench.py).
    import gc
    import weakref

    registry = MemoryRegistry(store_path, max_open=1)
    with registry.lease("a") as service:
        service.transact(GOAL)
        graph = weakref.ref(service.memory.graph)
    del service
    was_enabled = gc.isenabled()
    gc.disable()  # only the registry's own collection may free it
    try:
        _touch(registry, "b")
        registry.flush()
        _touch(registry, "c")  # opening freezes whatever is left
        assert graph() is None
    finally:
        if was_enabled:
            gc.enable()
    registry.close()


def test_a_collection_in_another_thread_emptying_the_queue_first_is_no_error():
    # The registry collects in its closing thread while request threads trigger collections of
    # their own; each collection's end drops the queued linecache entries of freed generated
    # functions, and one could empty the queue between another's check and its pop
    # ("Exception ignored in _on_collection: IndexError: pop from empty list").
    from hgm_engine.model import generated

    class EmptiedMeanwhile(list):
        def __bool__(self) -> bool:  # non-empty when checked, empty when popped
            return True

    assert generated._drop_queued(queued=EmptiedMeanwhile()) is None


def test_an_evicted_memory_its_store_and_its_service_are_garbage(store_path):
    # Nothing of a memory the registry closed is kept: no cache keyed by its name or id, no
    # listener, no connection (after the registry's closing thread is done and a collection).
    import gc
    import weakref

    registry = MemoryRegistry(store_path, max_open=1)
    with registry.lease("a") as service:
        service.transact(GOAL)
        service.query("root")
        kept = [weakref.ref(service), weakref.ref(service.memory), weakref.ref(service.memory.store), weakref.ref(service.memory.graph)]
    del service
    _touch(registry, "b")
    registry.flush()
    gc.collect()
    assert [ref() is None for ref in kept] == [True] * len(kept)
    registry.close()


def test_open_evict_cycles_keep_at_most_max_open_memories_alive(store_path):
    import gc
    import weakref

    # Count only the memories made here: a worker of the parallel suite holds other tests'.
    earlier = weakref.WeakSet(obj for obj in gc.get_objects() if type(obj) is Memory)

    def alive() -> int:
        return sum(1 for obj in gc.get_objects() if type(obj) is Memory and obj not in earlier)

    registry = MemoryRegistry(store_path, max_open=2)
    for _ in range(5):
        _touch(registry, "a", "b", "c", "d")
    registry.flush()
    gc.collect()
    assert alive() == 2
    assert registry.opened == 20 and registry.evicted == 18
    registry.close()


def _count_collections_only(monkeypatch) -> None:
    """The registry's collections counted, not run: where a test checks when the registry
    collects, not what a collection frees (a full pass takes ~1 s of CPU in a worker of the
    parallel suite, which holds over a million objects)."""
    from hgm_engine.server import registry as module

    monkeypatch.setattr(module, "collect_kept", lambda: 0)


def test_each_collection_of_the_registry_ends_with_malloc_trim(store_path, monkeypatch):
    _count_collections_only(monkeypatch)
    # Closed memories' pages stay in the C allocator's arenas (one per request thread) unless
    # handed back: the server's resident set rose with every open (docs/deployment.md).
    from hgm_engine.server import registry as module

    calls = []
    monkeypatch.setattr(module, "malloc_trim", lambda: calls.append(1) or True)
    registry = MemoryRegistry(store_path, max_open=1, trim=True, collect_growth=0)  # one collection per close
    _touch(registry, "a", "b", "c")
    registry.flush()
    assert registry.collections == 2 and len(calls) == 2 and registry.trimmed == 2
    registry.close()


def test_malloc_trim_is_off_when_asked(store_path, monkeypatch):
    _count_collections_only(monkeypatch)
    from hgm_engine.server import registry as module

    calls = []
    monkeypatch.setattr(module, "malloc_trim", lambda: calls.append(1) or True)
    monkeypatch.setenv("HGM_MALLOC_TRIM", "0")
    by_env = MemoryRegistry(store_path, max_open=1, collect_growth=0)
    monkeypatch.delenv("HGM_MALLOC_TRIM")
    by_argument = MemoryRegistry(store_path, max_open=1, trim=False, collect_growth=0)
    for registry in (by_env, by_argument):
        _touch(registry, "a", "b", "c")
        registry.flush()
        assert registry.trim is False and registry.collections == 2
        registry.close()
    assert calls == []
    with MemoryRegistry(store_path) as registry:
        assert registry.trim is True  # on by default


def _heap_of(monkeypatch, blocks: list[int]) -> None:
    """Make Python's allocated blocks (what the registry measures the heap by) blocks[0]."""
    import sys

    monkeypatch.setattr(sys, "getallocatedblocks", lambda: blocks[0])


def test_evictions_collect_again_only_once_the_heap_has_grown_by_a_twentieth(store_path, monkeypatch):
    _count_collections_only(monkeypatch)
    # A full collection walks every object of the process, not only the closed memories: in a
    # process that holds far more than its open memories (a worker of this suite, ~1M objects,
    # 0.5-1 s a collection) one collection per close made an evicting test take minutes.
    blocks = [1_000_000]
    _heap_of(monkeypatch, blocks)
    registry = MemoryRegistry(store_path, max_open=1)
    _touch(registry, "a", "b", "c", "d")  # three closes
    registry.flush()
    assert registry.evicted == 3 and registry.collections == 1  # the first; nothing grew since
    blocks[0] = 1_049_999
    _touch(registry, "a")
    registry.flush()
    assert registry.collections == 1
    blocks[0] = 1_050_000  # a twentieth more than after the last collection
    _touch(registry, "b")
    registry.flush()
    assert registry.collections == 2
    registry.close()


def test_an_evicted_memory_left_to_wait_is_freed_once_the_heap_has_grown(store_path, monkeypatch):
    # What the rule above leaves uncollected is frozen by the next open (gc.freeze), given back
    # by the next close and freed by the collection that the heap's growth brings.
    import gc
    import weakref

    blocks = [1_000_000]
    _heap_of(monkeypatch, blocks)
    registry = MemoryRegistry(store_path, max_open=1)
    _touch(registry, "a", "b")  # a closed, collected: the first collection
    registry.flush()
    with registry.lease("c") as service:  # b closed, not collected (the heap did not grow)
        graph = weakref.ref(service.memory.graph)
    del service
    was_enabled = gc.isenabled()
    gc.disable()  # only the registry's own collection may free it
    try:
        _touch(registry, "d")  # d opened, then c closed and not collected
        registry.flush()
        assert registry.collections == 1 and graph() is not None
        blocks[0] = 1_050_000
        _touch(registry, "a")  # a's open freezes c's objects, d's close gives them back and,
        # the heap having grown a twentieth, collects them
        registry.flush()
        assert registry.collections == 2 and graph() is None
    finally:
        if was_enabled:
            gc.enable()
    registry.close()


def test_on_a_growing_heap_a_collection_follows_every_quarter_of_max_open_closes(store_path, monkeypatch):
    _count_collections_only(monkeypatch)
    blocks = [1_000]
    _heap_of(monkeypatch, blocks)
    registry = MemoryRegistry(store_path, max_open=8)  # one collection per 2 closes at most
    names = [f"m{i}" for i in range(14)]
    for name in names:
        registry.create(name)
    for name in names:
        blocks[0] *= 2  # every memory opened doubles the heap
        _touch(registry, name)
        registry.flush()
    assert registry.evicted == 6 and registry.collections == 3
    registry.close()


def test_with_collect_growth_0_the_heap_is_not_measured(store_path, monkeypatch):
    _count_collections_only(monkeypatch)
    def measured():
        raise AssertionError("measured the heap")

    monkeypatch.setattr(__import__("sys"), "getallocatedblocks", measured)
    registry = MemoryRegistry(store_path, max_open=1, collect_growth=0)
    _touch(registry, "a", "b", "c")
    registry.flush()
    assert registry.collections == 2
    registry.close()


@pytest.mark.parametrize("growth", [-0.1, float("nan"), float("inf"), "0.1", True, None])
def test_a_bad_collect_growth_is_refused_naming_it(store_path, growth):
    with pytest.raises(RequestError) as caught:
        MemoryRegistry(store_path, collect_growth=growth)
    assert caught.value.category == "invalid-argument" and caught.value.problems[0].where == "collect_growth"


def _memories_alive() -> int:
    import gc

    gc.collect()
    return sum(1 for obj in gc.get_objects() if type(obj) is Memory)


def test_hgm_serve_keeps_no_reference_to_the_memory_it_opened_at_start(store_path, monkeypatch):
    # `hgm serve` opened its default memory with `with registry.lease(...) as default:` in the
    # function that runs as long as the server: the `with` target stays bound after the block,
    # so once evicted, that memory stayed in RAM for the server's whole life.
    from hgm_engine.server.rest import command

    seen = []

    def serve(registry, sock, options):  # instead of uvicorn: evict the default memory
        before = _memories_alive()
        _touch(registry, "a")
        registry.flush()
        seen.append((before, registry.resident(), _memories_alive()))

    monkeypatch.setattr(command, "serve", serve)
    monkeypatch.setattr(command, "configure_logging", lambda level: None)
    monkeypatch.setattr(command, "finish", lambda registry: (registry.close(), [])[1])
    args = command.build_parser().parse_args(["--db", store_path, "--host", "127.0.0.1", "--port", "0", "--max-open", "1"])
    assert command.run(args) == 0
    [(before, resident, after)] = seen
    assert resident == ["a"] and after == before


def test_hgm_mcp_keeps_no_reference_to_the_memory_it_opened_at_start(store_path, monkeypatch):
    from hgm_engine.server.mcp import command as mcp_server

    seen = []

    async def serve(registry, *, default_memory):
        before = _memories_alive()
        _touch(registry, "a")
        registry.flush()
        seen.append((before, registry.resident(), _memories_alive()))

    monkeypatch.setattr(mcp_server, "serve", serve)
    monkeypatch.setattr(mcp_server, "_configure_logging", lambda level: None)
    assert mcp_server.main(["--db", store_path, "--max-open", "1"]) == 0
    [(before, resident, after)] = seen
    assert resident == ["a"] and after == before


def test_a_bad_malloc_trim_setting_is_refused_naming_the_variable(store_path, monkeypatch):
    monkeypatch.setenv("HGM_MALLOC_TRIM", "sometimes")
    with pytest.raises(RequestError) as caught:
        MemoryRegistry(store_path)
    assert caught.value.category == "invalid-argument" and caught.value.problems[0].where == "HGM_MALLOC_TRIM"


def test_the_application_factory_takes_malloc_trim_from_the_environment_it_is_given(store_path):
    from hgm_engine.server.rest.factory import settings_from_environment

    assert settings_from_environment({"HGM_DB": store_path})["trim"] is True
    assert settings_from_environment({"HGM_DB": store_path, "HGM_MALLOC_TRIM": "off"})["trim"] is False
    with pytest.raises(RequestError, match="HGM_MALLOC_TRIM is 0 or 1"):
        settings_from_environment({"HGM_DB": store_path, "HGM_MALLOC_TRIM": "2"})


def test_any_malloc_trim_setting_is_a_switch_or_a_named_refusal():
    from hypothesis import given, settings, strategies as st

    from hgm_engine.server.registry import malloc_trim_from_env

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=40))
    def check(text):
        try:
            assert malloc_trim_from_env(environ=lambda key: text) in (True, False)
        except RequestError as err:
            assert err.category == "invalid-argument" and err.problems[0].where == "HGM_MALLOC_TRIM"

    check()
