"""Child processes for the durability tests (run as scripts, killed or raced on purpose).

The location is a SQLite path or a PostgreSQL URL."""

from __future__ import annotations

import json
import os
import sys
import time


def ops_for(t: int) -> list[dict]:
    """The deterministic transaction number ``t`` of the crash stream."""
    if t % 7 == 0 and t > 7:
        # The goal's action produced r{t-6}; a result must keep a producer, so it goes first.
        return [
            {"op": "delete_node", "id": f"r{t - 6}"},
            {"op": "delete_node", "id": f"g{t - 7}", "cascade": True},
        ]
    if t % 2 == 1:
        return [
            {"op": "add_node", "id": f"g{t}", "type": "goal", "content": f"goal {t}", "status": "active"},
            {"op": "add_node", "id": f"a{t}", "type": "action", "parent": f"g{t}", "status": "pending"},
            {"op": "add_node", "id": f"f{t}", "type": "fact", "content": "x" * (t % 50)},
            {"op": "add_edge", "from": f"a{t}", "to": f"f{t}", "type": "related_to"},
        ]
    previous = t - 1
    return [
        {"op": "update_node", "id": f"a{previous}", "set": {"status": "done", "step": t}},
        {"op": "add_node", "id": f"r{t}", "type": "result", "ok": True},
        {"op": "add_edge", "from": f"a{previous}", "to": f"r{t}", "type": "produces"},
    ]


def open_memory(location: str):
    """A memory on the store at ``location``: a SQLite path or a PostgreSQL URL."""
    from hgm_engine import Memory
    from hgm_engine.store import open_store

    return Memory(store=open_store(location))


def crash_writer(location: str, stop_at: int, emit=None) -> None:
    """Commit the crash stream until ``t == stop_at``, telling ``emit`` (print) each new ``t``."""
    emit = emit or (lambda t: print(t, flush=True))
    memory = open_memory(location)
    while memory.t < stop_at:
        t = memory.t + 1
        ops = ops_for(t)
        if not any(op["op"] == "update_node" and op["id"] not in memory.graph for op in ops) and not any(
            op["op"] == "delete_node" and op["id"] not in memory.graph for op in ops
        ):
            report = memory.apply({"author": "crash", "reason": f"step {t}", "ops": ops})
        else:  # the target was removed earlier in the stream; commit a marker instead
            report = memory.apply({"author": "crash", "reason": f"step {t}", "ops": [
                {"op": "add_node", "id": f"m{t}", "type": "fact", "content": "marker"}]})
        assert report.committed, report.to_json()
        emit(report.t)


def crash_writer_to_file(location: str, stop_at: int, out_path: str) -> None:
    """``crash_writer`` in a forked process: each committed ``t`` is appended to ``out_path``
    as it returns (one small ``write``, so a SIGKILL never leaves half a line)."""
    fd = os.open(out_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        crash_writer(location, stop_at, lambda t: os.write(fd, f"{t}\n".encode()))
    except BaseException:  # tell the test why the writer died (a kill leaves no trace here)
        import traceback

        with open(out_path + ".error", "w") as handle:
            handle.write(traceback.format_exc())
        raise


def racer(location: str, name: str, attempts: int) -> None:
    from hgm_engine.errors import ConflictError

    memory = open_memory(location)
    outcomes = []
    for _ in range(attempts):
        base_t = memory.refresh()
        value = memory.node("counter")["value"]
        try:
            report = memory.apply(
                {
                    "author": name,
                    "base_t": base_t,
                    "ops": [{"op": "update_node", "id": "counter", "set": {"value": value + 1, "by": name}}],
                }
            )
            outcomes.append({"committed": True, "t": report.t, "value": value + 1})
        except ConflictError as err:
            outcomes.append({"committed": False, "conflict": err.message})
        time.sleep(0.001)
    print(json.dumps(outcomes), flush=True)


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "crash":
        crash_writer(sys.argv[2], int(sys.argv[3]))
    elif command == "race":
        racer(sys.argv[2], sys.argv[3], int(sys.argv[4]))
