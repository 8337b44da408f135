"""Durability of the SQLite store: SIGKILL at random moments, and two processes racing."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from hgm_engine import Memory

WORKER = os.path.join(os.path.dirname(__file__), "durability_worker.py")
sys.path.insert(0, os.path.dirname(__file__))
from durability_worker import ops_for  # noqa: E402


def expected_after(t: int) -> dict:
    """The state the crash stream must have after ``t`` commits (replayed in memory)."""
    memory = Memory()
    for step in range(1, t + 1):
        ops = ops_for(step)
        if any(op["op"] in ("update_node", "delete_node") and op["id"] not in memory.graph for op in ops):
            ops = [{"op": "add_node", "id": f"m{step}", "type": "fact", "content": "marker"}]
        memory.apply({"author": "crash", "reason": f"step {step}", "ops": ops})
    return memory.export()


@pytest.mark.slow
def test_sigkill_at_random_moments_leaves_exactly_a_prefix(tmp_path):
    path = str(tmp_path / "crash.db")
    rng = random.Random(20261129)
    kills = 0
    last_printed = 0
    while kills < 22:
        child = subprocess.Popen(
            [sys.executable, WORKER, "crash", path, "100000"], stdout=subprocess.PIPE, text=True
        )
        time.sleep(rng.uniform(0.4, 1.0))  # interpreter start-up is ~0.3 s; then commits stream
        child.send_signal(signal.SIGKILL)
        printed = [int(line) for line in child.stdout.read().split()]
        child.wait()
        kills += 1
        if printed:
            last_printed = printed[-1]
        with Memory.open(path) as memory:
            t = memory.t
            # Everything reported committed is there; at most the one in flight is extra.
            assert last_printed <= t <= last_printed + 1, (last_printed, t)
            assert [c.t for c in memory.commits(0)] == list(range(1, t + 1))
            assert memory.export() == expected_after(t)
            assert memory.violations() == []
            last_printed = t
    # Writing resumes where it stopped.
    subprocess.run([sys.executable, WORKER, "crash", path, str(last_printed + 3)], check=True, capture_output=True)
    with Memory.open(path) as memory:
        assert memory.t == last_printed + 3
        assert memory.export() == expected_after(memory.t)


@pytest.mark.slow
def test_two_processes_racing_with_base_t_lose_nothing(tmp_path):
    path = str(tmp_path / "race.db")
    with Memory.open(path) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "counter", "type": "fact", "value": 0}]})
    children = [
        subprocess.Popen([sys.executable, WORKER, "race", path, name, "40"], stdout=subprocess.PIPE, text=True)
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
    with Memory.open(path) as memory:
        # Every committed increment is in the journal, once, and none was lost.
        assert sorted(o["t"] for o in committed) == list(range(2, memory.t + 1))
        assert memory.node("counter")["value"] == len(committed)
        assert sorted(o["value"] for o in committed) == list(range(1, len(committed) + 1))
