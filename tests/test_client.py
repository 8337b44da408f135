"""The remote memory (``hgm_engine.connect``) against a local one: every case runs on both, a
``Memory`` in this process and a ``RemoteMemory`` speaking to a real ``hgm serve`` app (uvicorn
on a loopback socket of port 0, in a thread), so the two cannot drift. The remote-only cases
at the end hold the transport to account: a server that is down or silent, a token refused,
retries of reads and never of writes.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
import time
import uuid

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import hgm_engine  # noqa: E402
from hgm_engine import (  # noqa: E402
    ConflictError,
    Memory,
    PathError,
    QueryAnalysisError,
    QueryExecutionError,
    QueryResult,
    QuerySyntaxError,
    RequestError,
    SearchError,
    ServiceError,
    TransactionError,
    TransactionRefused,
    TransactionReport,
)
from hgm_engine.client import RetryPolicy, Transport, connect  # noqa: E402
from hgm_engine.server.registry import MemoryRegistry  # noqa: E402
from hgm_engine.server.rest import create_app  # noqa: E402

PLAN = {
    "author": "planner",
    "reason": "plan the trip",
    "ops": [
        {"op": "add_node", "id": "trip", "type": "goal", "title": "Trip to Beijing"},
        {"op": "add_node", "id": "book", "type": "action", "parent": "trip", "status": "pending", "content": "Book the hotel"},
        {"op": "add_node", "id": "pack", "type": "action", "parent": "trip", "status": "pending", "content": "Pack the bags"},
        {"op": "add_edge", "from": "book", "to": "pack", "type": "before"},
        {"op": "add_node", "id": "price", "type": "fact", "content": "The hotel costs 800 CNY per night"},
    ],
}


class ServedApp:
    """A uvicorn server in a thread on 127.0.0.1, port 0 (the OS picks a free one)."""

    def __init__(self, app):
        import uvicorn

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server for the module over a store of many memories; each test makes its own."""
    registry = MemoryRegistry(tmp_path_factory.mktemp("served") / "memories.db")
    running = ServedApp(create_app(registry))
    yield running
    running.stop()
    registry.close()


@pytest.fixture(params=["local", "remote"])
def memory(request, served):
    """A fresh memory: local, or a remote one — a new memory of the module's server, named
    with a '/' (sent as %2F)."""
    if request.param == "local":
        yield Memory()
        return
    name = f"cases/{uuid.uuid4().hex[:12]}"
    made = Transport(served.url).request("POST", "/api/v1/memories", body={"name": name})
    assert made.status == 201, made.doc
    remote = connect(served.url, memory=name, timeout=10)
    yield remote
    remote.close()


@pytest.fixture
def planned(memory):
    memory.apply(PLAN)
    return memory


# -- reading ----------------------------------------------------------------------------------


def test_a_query_returns_the_same_result_type_ids_and_nodes(planned):
    result = planned.query("root.actions.where(status = $s)", params={"s": "pending"})
    assert isinstance(result, QueryResult)
    assert result.ids == ["book", "pack"]
    assert result.nodes[0] == {"id": "book", "type": "action", "status": "pending", "content": "Book the hotel"}
    assert [node.attrs["status"] for node in result.payloads()] == ["pending", "pending"]


def test_count_exists_and_paths_results_are_the_same(planned):
    assert planned.query("nodes.count()").value == 4
    assert planned.query("#trip.actions.exists()").value is True
    assert planned.query("#trip.actions.paths()").to_json() == {"kind": "paths", "paths": [["trip", "book"], ["trip", "pack"]]}


def test_a_syntax_error_is_the_same_class_with_its_position_and_caret(planned):
    with pytest.raises(QuerySyntaxError) as caught:
        planned.query("root.actions[")
    err = caught.value
    assert (err.category, err.line, err.column) == ("syntax", 1, 14)
    assert err.excerpt == "root.actions[\n             ^"


def test_an_unknown_relation_is_an_analysis_error_with_the_suggestion(planned):
    with pytest.raises(QueryAnalysisError) as caught:
        planned.query("root.subgoal")
    assert caught.value.category == "unknown-name"
    assert (caught.value.line, caught.value.column) == (1, 6)
    assert "did you mean 'subgoals'" in caught.value.message


def test_a_missing_parameter_is_refused_before_anything_runs(planned):
    with pytest.raises(QueryAnalysisError) as caught:
        planned.query("nodes.where(status = $s)")
    assert caught.value.category == "missing-parameter"


def test_a_missing_focus_is_an_execution_error(planned):
    with pytest.raises(QueryExecutionError) as caught:
        planned.query("focus.children")
    assert caught.value.category == "missing-focus"


def test_node_export_and_len(planned):
    assert planned.node("trip") == {"id": "trip", "type": "goal", "title": "Trip to Beijing"}
    assert planned.node("nope") is None
    assert [n["id"] for n in planned.export()["nodes"]] == ["trip", "book", "pack", "price"]
    assert len(planned) == 4 and planned.t == 1


def test_explain_gives_the_plan_text(planned):
    assert planned.explain("#x.children").splitlines()[1] == "rules applied: id_lookup"


# -- changing ---------------------------------------------------------------------------------


def test_apply_returns_the_report_with_its_changes(memory):
    report = memory.apply(PLAN)
    assert isinstance(report, TransactionReport)
    assert (report.committed, report.t, report.author) == (True, 1, "planner")
    assert [c.kind for c in report.changes] == ["node_added"] * 4 + ["edge_added"] * 3
    assert report.created == ("trip", "book", "pack", "price")


def test_a_report_round_trips_to_the_same_document(memory):
    memory.apply(PLAN)
    report = memory.apply({"ops": [{"op": "update_node", "id": "book", "set": {"status": "done"}, "unset": ["content"]}]})
    assert report.to_json()["changes"] == [
        {"kind": "node_updated", "id": "book", "before": {"content": "Book the hotel", "status": "pending"}, "after": {"status": "done"}}
    ]


def test_a_dry_run_changes_nothing(planned):
    report = planned.apply({"ops": [{"op": "delete_node", "id": "price"}]}, dry_run=True)
    assert (report.committed, report.dry_run) == (False, True)
    assert planned.node("price") is not None


def test_a_malformed_transaction_is_a_transaction_error_naming_the_op(planned):
    with pytest.raises(TransactionError) as caught:
        planned.apply({"ops": [{"op": "update_node", "id": "ghost", "set": {"status": "done"}}]})
    assert (caught.value.category, caught.value.problems[0].where) == ("unknown-node", "ops[0]")
    assert planned.t == 1


def test_a_transaction_block_commits_its_ops_with_generated_ids(planned):
    with planned.transaction(author="planner", reason="more") as tx:
        made = tx.add_node("action", parent="trip", status="pending", content="Buy tickets")
        tx.add_edge("pack", made, "before")
    assert tx.report.t == 2 and tx.report.created == (made,)
    assert planned.query("#trip.actions").ids == ["book", "pack", made]
    assert planned.query("#$id.in(before)", params={"id": made}).ids == ["pack"]


def test_an_exception_in_the_block_commits_nothing(planned):
    with pytest.raises(KeyError):
        with planned.transaction() as tx:
            tx.add_node("fact", id="draft")
            raise KeyError("changed my mind")
    assert planned.node("draft") is None and planned.t == 1


def test_a_conflict_after_base_t_is_the_same_conflict_error(planned):
    base = planned.t
    planned.apply({"ops": [{"op": "update_node", "id": "book", "set": {"status": "done"}}]})
    with pytest.raises(ConflictError) as caught:
        planned.apply({"base_t": base, "ops": [{"op": "update_node", "id": "book", "set": {"status": "failed"}}]})
    assert caught.value.category == "conflict"
    assert planned.node("book")["status"] == "done"


def test_a_transaction_block_with_base_t_conflicts_too(planned):
    planned.apply({"ops": [{"op": "update_node", "id": "pack", "set": {"status": "done"}}]})
    with pytest.raises(ConflictError):
        with planned.transaction(base_t=1) as tx:
            tx.update_node("pack", set={"status": "failed"})


def test_a_constraint_refusal_raises_transaction_refused_with_the_report(planned):
    planned.add_constraint("actions_have_content", "each action must has(content)")
    with pytest.raises(TransactionRefused) as caught:
        with planned.transaction() as tx:
            tx.update_node("book", unset=["content"])
    assert [(v.constraint, v.node) for v in caught.value.report.violations] == [("actions_have_content", "book")]
    assert planned.node("book")["content"] == "Book the hotel"
    # apply returns the refused report instead of raising, as locally
    report = planned.apply({"ops": [{"op": "update_node", "id": "pack", "unset": ["content"]}]})
    assert (report.committed, [v.node for v in report.violations]) == (False, ["pack"])


def test_adding_a_constraint_that_does_not_hold_is_refused_with_every_violation(planned):
    with pytest.raises(TransactionRefused) as caught:
        planned.add_constraint("goals_have_content", "each goal must has(content)")
    assert [v.node for v in caught.value.report.violations] == ["trip"]
    assert planned.constraints() == {}


def test_a_bad_value_in_an_op_is_refused_at_the_op(planned):
    with planned.transaction() as tx:
        with pytest.raises(TransactionError) as caught:
            tx.update_node("book", set={"cost": float("nan")})
        tx.rollback()
    assert (caught.value.category, caught.value.problems[0].where) == ("invalid-value", "ops[0].set.cost")


# -- history ----------------------------------------------------------------------------------


def test_history_diff_and_changes_since(planned):
    planned.apply({"author": "me", "ops": [{"op": "update_node", "id": "book", "set": {"status": "done"}}]})
    assert [(h["t"], h["author"]) for h in planned.history("book")] == [(1, "planner"), (2, "me")]
    assert planned.history("ghost") == []
    assert planned.diff(1, 2) == [{"kind": "node_updated", "id": "book", "before": {"status": "pending"}, "after": {"status": "done"}}]
    assert [c["t"] for c in planned.changes_since(1)["commits"]] == [2]


def test_snapshots_and_as_of_read_an_earlier_state(planned):
    assert planned.snapshot("planned") == 1
    planned.apply({"ops": [{"op": "delete_node", "id": "price"}]})
    assert planned.snapshots() == {"planned": 1}
    assert planned.query("nodes.count()", as_of="planned").value == 4
    assert planned.as_of(1).node("price")["type"] == "fact"
    assert planned.as_of("planned").query("nodes.count()").value == 4


def test_an_unknown_snapshot_is_a_request_error(planned):
    with pytest.raises(RequestError) as caught:
        planned.query("nodes.count()", as_of="nope")
    assert caught.value.category == "unknown-snapshot"


# -- search and locate ------------------------------------------------------------------------


def test_search_gives_the_same_hits(planned):
    hits = planned.search("hotel costs")
    assert [(h["id"], h["matched"]) for h in hits] == [("price", ["hotel", "costs"]), ("book", ["hotel"])]
    assert hits[0]["score"] > hits[1]["score"] > 0
    assert hits[0]["node"]["content"] == "The hotel costs 800 CNY per night"
    assert [h["id"] for h in planned.search("hotel", type="action", limit=None)] == ["book"]


def test_search_of_an_unknown_type_is_a_search_error(planned):
    with pytest.raises(SearchError) as caught:
        planned.search("hotel", type="fcat")
    assert caught.value.category == "invalid-argument" and "did you mean 'fact'" in caught.value.message


def test_locate_finds_the_ingested_path(memory):
    report = memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]},
                            {"id": "s1", "goal": "Ship a parcel", "steps": ["label", "ship"]}])
    assert report.ingested == ["r1", "s1"]
    result = memory.locate("refund my order", k=1)
    assert result.paths == ["r1"] and result.matches[0].steps == ("check_policy", "refund")


def test_a_bad_trajectory_is_a_path_error(memory):
    with pytest.raises(PathError) as caught:
        memory.ingest([{"id": "r1", "goal": "Refund"}])
    assert caught.value.category == "bad-trajectory"


# -- planner views ----------------------------------------------------------------------------


def test_frontier_and_focus_path(planned):
    assert planned.frontier("trip") == ["book"]
    assert planned.frontier("ghost") == []
    assert planned.focus_path("pack") == ["trip", "pack"]
    assert planned.focus_path("ghost") == []


def test_stale_marks_and_confirm(planned):
    planned.load_rules("rule watch: on update action where status = 'failed' then mark parent as needs_review")
    planned.apply({"ops": [{"op": "update_node", "id": "book", "set": {"status": "failed"}}]})
    assert [(s["id"], s["state"], [m["rule"] for m in s["marks"]]) for s in planned.stale()] == [("trip", "needs_review", ["watch"])]
    report = planned.confirm("trip")
    assert report.committed and planned.stale() == []


# -- remote only: the transport ---------------------------------------------------------------


def test_health_is_the_servers_or_the_named_memorys(served):
    assert connect(served.url).health()["status"] == "ok"
    name = f"cases/{uuid.uuid4().hex[:12]}"
    Transport(served.url).request("POST", "/api/v1/memories", body={"name": name})
    assert connect(served.url, memory=name).health()["name"] == name


def test_connect_is_exported_from_the_package():
    assert hgm_engine.connect is connect and "connect" in hgm_engine.__all__


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()[1]


def test_a_server_that_is_down_is_a_clear_error_after_the_retries():
    remote = connect(f"http://127.0.0.1:{_free_port()}", timeout=2, retries=RetryPolicy(retries=2, backoff=0.01, jitter=False))
    started = time.monotonic()
    with pytest.raises(ServiceError) as caught:
        remote.query("root")
    assert caught.value.category == "unreachable"
    assert "3 attempts" in caught.value.message
    assert time.monotonic() - started < 5


@contextlib.contextmanager
def _silent_server():
    """Accepts connections and never answers; counts them."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        listener.close()


def test_a_silent_server_times_out_without_hanging_and_a_write_is_sent_once():
    with _silent_server() as (url, accepted):
        remote = connect(url, timeout=0.3, retries=RetryPolicy(retries=2, backoff=0.01, jitter=False))
        started = time.monotonic()
        with pytest.raises(ServiceError) as caught:
            remote.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        assert caught.value.category == "timeout" and "read t before sending it again" in caught.value.message
        assert time.monotonic() - started < 5  # 0.3 s and scheduling (a hang would be for ever)
        assert len(accepted) == 1
        with pytest.raises(ServiceError) as caught:
            remote.query("root")  # a read is tried again
        assert caught.value.category == "timeout" and "3 attempts" in caught.value.message
        assert len(accepted) == 4


class _Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next (status, document) of the server's script."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.server.seen.append((self.command, self.path))
        status, doc = self.server.script.pop(0)
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if status == 503:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def _scripted_server(script):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    server.script, server.seen = list(script), []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _error(category: str) -> dict:
    return {"error": {"category": category, "message": category, "line": None, "column": None, "request_id": "r1"}}


REPORT = {"committed": True, "t": 1, "base_t": None, "author": None, "reason": None, "changes": [],
          "fired_rules": [], "dirtied": [], "violations": []}


def test_an_overloaded_server_is_asked_again_with_backoff():
    script = [(503, _error("overloaded")), (503, _error("overloaded")), (200, {"kind": "count", "value": 3, "t": 1})]
    with _scripted_server(script) as (url, seen):
        remote = connect(url, retries=RetryPolicy(retries=3, backoff=0.01))
        assert remote.query("nodes.count()").value == 3
    assert seen == [("POST", "/api/v1/query")] * 3


def test_a_write_is_retried_only_when_the_server_refused_it_unstarted():
    with _scripted_server([(503, _error("overloaded")), (200, REPORT)]) as (url, seen):
        assert connect(url, retries=RetryPolicy(backoff=0.01)).apply({"ops": []}).t == 1
    assert len(seen) == 2
    with _scripted_server([(503, _error("stopping"))]) as (url, seen):
        with pytest.raises(ServiceError) as caught:
            connect(url, retries=RetryPolicy(backoff=0.01)).apply({"ops": []})
    assert caught.value.category == "stopping" and len(seen) == 1


def test_the_error_carries_the_request_id_of_the_server_log():
    with _scripted_server([(404, _error("unknown-path"))]) as (url, _):
        with pytest.raises(PathError) as caught:
            connect(url).locate("refund")
    assert caught.value.request_id == "r1"


def test_a_token_without_access_is_refused_clearly():
    running = ServedApp(create_app(Memory(), token="s3cret"))
    try:
        with pytest.raises(ServiceError) as caught:
            connect(running.url, token="wrong").query("root")
        assert caught.value.category == "unauthorized"
        assert connect(running.url, token="s3cret").query("nodes.count()").value == 0
    finally:
        running.stop()


def test_a_body_that_is_no_json_is_a_clear_error():
    class Html(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b"<html>bad gateway</html>"
            self.send_response(502)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Html)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        with pytest.raises(ServiceError) as caught:
            connect(f"http://127.0.0.1:{server.server_address[1]}", retries=0).query("root")
        assert caught.value.category == "bad-response" and "bad gateway" in caught.value.message
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# -- fuzz: whatever a server (or something posing as one) answers ---------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hgm_engine import HGMError  # noqa: E402
from hgm_engine.client import error_from_document  # noqa: E402

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["error", "category", "message", "line", "column", "where", "problems", "committed", "ingested", "attempts", "request_id"]) | st.text(max_size=4), inner, max_size=5),
    max_leaves=12,
)
ERROR_DOCS = st.fixed_dictionaries(
    {"error": st.fixed_dictionaries({"category": st.sampled_from(["syntax", "conflict", "unknown-node", "overloaded", "constraint-violation", "bad-trajectory", "invalid-model-answer", "x"]) | st.text(max_size=5)},
                                    optional={"message": JSON, "line": JSON, "column": JSON, "where": JSON, "problems": JSON, "request_id": JSON})},
    optional={"committed": JSON, "ingested": JSON, "attempts": JSON},
)


@settings(max_examples=80, deadline=None)
@given(doc=JSON | ERROR_DOCS, family=st.sampled_from(["query", "transaction", "load", "search", "paths", "rules", "request", "nope"]))
def test_any_answer_becomes_an_hgm_error_never_a_crash(doc, family):
    err = error_from_document(doc, family=family, source="root", status=400)
    assert isinstance(err, HGMError) and isinstance(err.category, str) and err.problems


def test_an_answer_of_another_shape_is_a_bad_response_not_a_key_error():
    with _scripted_server([(200, {"status": "ok"}), (200, {"committed": True, "changes": 5})]) as (url, _):
        remote = connect(url, retries=0)
        with pytest.raises(ServiceError) as caught:
            remote.query("root")
        assert caught.value.category == "bad-response" and "POST /query" in caught.value.message
        with pytest.raises(ServiceError) as caught:
            remote.apply({"ops": []})
        assert caught.value.category == "bad-response"


def test_a_scoped_token_reaches_its_memories_only_and_a_read_token_cannot_write(tmp_path):
    from hgm_engine.server.tokens import TokenScopes

    registry = MemoryRegistry(tmp_path / "memories.db")
    registry.create("team/alice")
    registry.create("other")
    tokens = TokenScopes.parse("reader-token-0123456789 team read\nwriter-token-0123456789 * write")
    running = ServedApp(create_app(registry, tokens=tokens))
    try:
        connect(running.url, token="writer-token-0123456789", memory="team/alice").apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        reader = connect(running.url, token="reader-token-0123456789", memory="team/alice")
        assert reader.query("root").ids == ["g"]
        with pytest.raises(ServiceError) as caught:
            reader.apply({"ops": [{"op": "delete_node", "id": "g"}]})
        assert caught.value.category == "forbidden"
        with pytest.raises(ServiceError) as caught:
            connect(running.url, token="reader-token-0123456789", memory="other").query("root")
        assert caught.value.category == "forbidden"
        with pytest.raises(RequestError) as caught:
            connect(running.url, token="writer-token-0123456789", memory="team/alcie").query("root")
        assert caught.value.category == "unknown-memory" and "team/alice" in caught.value.message
        assert reader.query("root").ids == ["g"]
    finally:
        running.stop()
        registry.close()


@pytest.mark.parametrize("value, says", [(float("nan"), "NaN"), (__import__("datetime").date(2026, 1, 1), "a date is not a JSON value")])
def test_a_parameter_json_cannot_carry_is_refused_at_its_place(memory, value, says):
    with pytest.raises(QueryAnalysisError) as caught:
        memory.query("nodes.where(status = $s)", params={"s": value})
    assert (caught.value.category, caught.value.line, caught.value.column) == ("invalid-argument", 1, 22)
    assert says in caught.value.message


def test_an_op_value_json_cannot_carry_is_refused_naming_it(memory):
    with pytest.raises(TransactionError) as caught:
        memory.apply({"ops": [{"op": "add_node", "type": "goal", "x": float("nan")}]})
    assert (caught.value.category, caught.value.problems[0].where) == ("invalid-value", "ops[0].x")
    assert memory.t == 0


def test_a_lone_surrogate_is_refused_naming_where_it_is(memory):
    with pytest.raises(TransactionError) as caught:
        memory.apply({"ops": [{"op": "add_node", "type": "goal", "content": "\udfff"}]})
    assert (caught.value.category, caught.value.problems[0].where) == ("invalid-value", "ops[0].content")
    assert memory.t == 0


def test_what_json_cannot_carry_is_refused_before_it_is_sent(served):
    # (a local memory searches for a lone surrogate as for any text; no request can carry one)
    with pytest.raises(RequestError) as caught:
        connect(served.url).search("hotel \udfff")
    assert (caught.value.category, caught.value.problems[0].where) == ("invalid-value", "body.text")


# -- more of the Memory surface, on both --------------------------------------------------------


def test_facts_at_a_valid_time(memory):
    memory.apply({"ops": [{"op": "add_node", "id": "e", "type": "entity"},
                          {"op": "add_node", "id": "f1", "type": "fact", "content": "780 CNY", "valid_from": "2026-01-01"},
                          {"op": "add_edge", "from": "e", "to": "f1", "type": "related_to"}]})
    memory.apply({"ops": [{"op": "add_node", "id": "f2", "type": "fact", "content": "820 CNY"},
                          {"op": "add_edge", "from": "e", "to": "f2", "type": "related_to"},
                          {"op": "invalidate", "id": "f1", "at": "2026-06-01", "by": "f2", "reason": "new season"}]})
    assert memory.facts("e", at="2026-03-01")["holding"] == ["f1"]
    assert memory.facts("e", at="2026-07-01")["holding"] == ["f2"]
    assert "t" not in memory.facts("e")


def test_summarize_and_summary_of(memory):
    memory.apply({"ops": [{"op": "add_node", "id": "s", "type": "goal", "kind": "scenario", "content": "Refund"},
                          {"op": "add_node", "id": "a", "type": "action", "parent": "s", "content": "Look up the order", "status": "done"}]})
    report = memory.summarize("s")
    assert report.committed and report.created == ("summary-s",)
    assert memory.summary_of("s")["covers"] == 1
    assert memory.summary_of("ghost") is None


def test_revert_load_and_histories(memory):
    memory.load({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []})
    memory.apply({"ops": [{"op": "add_node", "id": "f", "type": "fact", "content": "x"}]})
    report = memory.revert(2)
    assert report.committed and memory.node("f") is None
    assert {node: [h["t"] for h in entries] for node, entries in memory.histories(["f"]).items()} == {"f": [2, 3]}


def test_rules_and_constraints_are_listed_and_removed(planned):
    planned.add_constraint("actions_have_content", "each action must has(content)")
    planned.load_rules("rule watch: on update action where status = 'failed' then mark parent as needs_review", name="watch")
    assert planned.constraints() == {"actions_have_content": "each action must has(content)"}
    assert list(planned.rules()) == ["watch"] and planned.violations() == []
    planned.remove_constraint("actions_have_content")
    planned.remove_rules("watch")
    assert planned.constraints() == {} and planned.rules() == {}


def test_a_rule_file_syntax_error_has_its_line_and_column(planned):
    with pytest.raises(QuerySyntaxError) as caught:
        planned.load_rules("rule watch: on update action where status = then mark parent as needs_review")
    assert caught.value.category == "syntax" and caught.value.line == 1


def test_an_empty_transaction_commits_as_locally(memory):
    with memory.transaction(reason="nothing") as tx:
        pass
    assert (tx.report.committed, tx.report.t, tx.report.reason) == (True, 1, "nothing")


@pytest.mark.parametrize("options, where", [
    ({"timeout": 0}, "timeout"), ({"timeout": "5"}, "timeout"), ({"retries": -1}, "retries"), ({"retries": "3"}, "retries"),
    ({"token": "a\nb"}, "token"), ({"memory": ""}, "memory"),
])
def test_bad_connect_options_are_refused_naming_the_option(options, where):
    with pytest.raises(HGMError) as caught:
        connect("http://127.0.0.1:8765", **options)
    assert caught.value.problems[0].where == where


def test_a_url_that_is_no_http_url_is_refused():
    with pytest.raises(ServiceError) as caught:
        connect("127.0.0.1:8765")
    assert caught.value.problems[0].where == "url"


@contextlib.contextmanager
def _dribbling_server():
    """Answers a byte every 50 ms, for ever: each read gets something in time, the answer never ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conn.recv(65536)
            with conn:
                for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"x" * 10_000:
                    if stop.is_set():
                        return
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:
                        break
                    time.sleep(0.05)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_a_server_that_dribbles_its_answer_is_cut_off_at_the_deadline():
    with _dribbling_server() as url:
        started = time.monotonic()
        with pytest.raises(ServiceError) as caught:
            connect(url, timeout=0.5, retries=0).query("root")
        assert caught.value.category == "timeout"
        assert time.monotonic() - started < 5  # 0.5 s and scheduling; it ran for ever before
