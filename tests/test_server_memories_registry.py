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
