"""Durability of the durable stores (SQLite and PostgreSQL): SIGKILL at random moments, and
two processes racing with ``base_t``."""

from __future__ import annotations

import json
import multiprocessing
import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import pytest

from hgm_engine import Memory

WORKER = os.path.join(os.path.dirname(__file__), "durability_worker.py")
sys.path.insert(0, os.path.dirname(__file__))
from durability_worker import crash_writer_to_file, open_memory, ops_for  # noqa: E402


class ExpectedStates:
    """The states the crash stream must have, replayed in memory (``t`` only grows)."""

    def __init__(self) -> None:
        self.memory = Memory()

    def after(self, t: int) -> dict:
        memory = self.memory
        assert t >= memory.t, "the stream never goes back"
        for step in range(memory.t + 1, t + 1):
            ops = ops_for(step)
            if any(op["op"] in ("update_node", "delete_node") and op["id"] not in memory.graph for op in ops):
                ops = [{"op": "add_node", "id": f"m{step}", "type": "fact", "content": "marker"}]
            memory.apply({"author": "crash", "reason": f"step {step}", "ops": ops})
        return memory.export()


def expected_after(t: int) -> dict:
    """The state the crash stream must have after ``t`` commits."""
    return ExpectedStates().after(t)


def _fork_context():
    """Processes forked from a server that has imported the engine already, so a writer
    starts in milliseconds and the test can kill many of them (each is a real process)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(
        ["durability_worker", "hgm_engine", "hgm_engine.store.sqlite", "hgm_engine.store.postgres", "psycopg"]
    )
    return context


def _committed(out_path: str) -> list[int]:
    try:
        with open(out_path) as handle:
            return [int(line) for line in handle.read().split()]
    except FileNotFoundError:
        return []


@pytest.mark.slow
def test_sigkill_at_random_moments_leaves_exactly_a_prefix(store_location, tmp_path):
    location = store_location
    context = _fork_context()
    rng = random.Random(20261129)
    expected = ExpectedStates()
    kills = mid_stream_kills = 0
    last_printed = 0
    while mid_stream_kills < 20:
        kills += 1
        out_path = str(tmp_path / f"committed-{kills}.txt")
        child = context.Process(target=crash_writer_to_file, args=(location, 100000, out_path))
        child.start()
        if rng.random() < 0.2:
            time.sleep(rng.uniform(0.0, 0.05))  # now and then while it opens the store or loads
        else:
            deadline = time.monotonic() + 60
            while not _committed(out_path):
                if not child.is_alive() or time.monotonic() >= deadline:
                    error_path = pathlib.Path(out_path + ".error")
                    why = error_path.read_text() if error_path.exists() else f"exit code {child.exitcode}"
                    raise AssertionError(f"the writer committed nothing: {why}")
                time.sleep(0.005)
            mid_stream_kills += 1
            time.sleep(rng.uniform(0.0, 0.15))  # somewhere in the stream of commits
        child.kill()  # SIGKILL
        child.join()
        assert child.exitcode == -signal.SIGKILL, child.exitcode
        printed = _committed(out_path)
        if printed:
            last_printed = printed[-1]
        with open_memory(location) as memory:
            t = memory.t
            # Everything reported committed is there; at most the one in flight is extra.
            assert last_printed <= t <= last_printed + 1, (last_printed, t)
            assert [c.t for c in memory.commits(0)] == list(range(1, t + 1))
            assert memory.export() == expected.after(t)
            assert memory.violations() == []
            last_printed = t
    assert last_printed > 20, "the kills hit a stream of commits"
    # Writing resumes where it stopped, in a process of its own.
    subprocess.run([sys.executable, WORKER, "crash", location, str(last_printed + 3)], check=True, capture_output=True)
    with open_memory(location) as memory:
        assert memory.t == last_printed + 3
        assert memory.export() == expected.after(memory.t)


@pytest.mark.slow
def test_two_processes_racing_with_base_t_lose_nothing(store_location):
    location = store_location
    with open_memory(location) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "counter", "type": "fact", "value": 0}]})
    children = [
        subprocess.Popen([sys.executable, WORKER, "race", location, name, "40"], stdout=subprocess.PIPE, text=True)
        for name in ("left", "right")
    ]
    outcomes = []
    for child in children:
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0
        outcomes.extend(json.loads(out))
    committed = [o for o in outcomes if o["committed"]]
    conflicts = [o for o in outcomes if not o["committed"]]
    assert len(committed) + len(conflicts) == 80  # every attempt is accounted for
    with open_memory(location) as memory:
        # Every committed increment is in the journal, once, and none was lost.
        assert sorted(o["t"] for o in committed) == list(range(2, memory.t + 1))
        assert memory.node("counter")["value"] == len(committed)
        assert sorted(o["value"] for o in committed) == list(range(1, len(committed) + 1))
