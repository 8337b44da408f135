"""Valid time (issue 18, spec/dsl.md §8.2): valid_from/valid_to, valid_at(T), invalidate,
facts, and as_of by the clock. Bad input gets a clear error and changes nothing."""

from __future__ import annotations

import json
import pathlib

import pytest

from hgm_engine import HGMError, Memory, QueryAnalysisError, RequestError, TransactionError
from hgm_engine.cli import main
from hgm_engine.model import DEFAULT_SCHEMA

HOTEL = {
    "author": "planner",
    "reason": "what we know about the hotel",
    "ops": [
        {"op": "add_node", "id": "e_hotel", "type": "entity", "content": "Jade Courtyard Hotel"},
        {"op": "add_node", "id": "f_rate1", "type": "fact", "content": "The room rate is 780 CNY", "valid_from": "2026-01-01"},
        {"op": "add_node", "id": "f_open", "type": "fact", "content": "The hotel is open"},
        {"op": "add_edge", "from": "e_hotel", "to": "f_rate1", "type": "related_to"},
        {"op": "add_edge", "from": "e_hotel", "to": "f_open", "type": "related_to"},
    ],
}

PRICE_CHANGE = {
    "author": "planner",
    "reason": "the hotel raised its rate",
    "ops": [
        {"op": "add_node", "id": "f_rate2", "type": "fact", "content": "The room rate is 820 CNY"},
        {"op": "add_edge", "from": "e_hotel", "to": "f_rate2", "type": "related_to"},
        {"op": "invalidate", "id": "f_rate1", "at": "2026-06-01", "by": "f_rate2", "reason": "summer season"},
    ],
}


@pytest.fixture
def hotel() -> Memory:
    memory = Memory()
    memory.apply(HOTEL)
    return memory


def _unchanged(memory: Memory, before: dict, t: int) -> None:
    assert memory.t == t
    assert memory.export() == before


def _refused(memory: Memory, ops: list, category: str, where: str | None = None) -> TransactionError:
    before, t = memory.export(), memory.t
    with pytest.raises(TransactionError) as caught:
        memory.apply({"ops": ops})
    assert caught.value.category == category, caught.value.render()
    if where is not None:
        assert caught.value.problems[0].where == where
    _unchanged(memory, before, t)
    return caught.value


# -- valid_at in queries -------------------------------------------------------------------------


def test_valid_at_of_a_non_time_is_refused_at_the_argument():
    with pytest.raises(QueryAnalysisError) as caught:
        Memory().query("nodes.where(valid_at('yesterday'))")
    assert caught.value.category == "invalid-argument"
    assert (caught.value.line, caught.value.column) == (1, 22)
    assert "ISO 8601" in caught.value.message


@pytest.mark.parametrize("expr", ["nodes.where(valid_at(status))", "nodes.where(valid_at(true))", "nodes.where(valid_at([1]))"])
def test_valid_at_needs_a_time_not_a_path_or_other_value(expr):
    with pytest.raises(QueryAnalysisError) as caught:
        Memory().query(expr)
    assert caught.value.category == "invalid-argument"


@pytest.mark.parametrize("expr", ["nodes.where(has('x'))", "nodes.where(exists(5))", "nodes.where(count($p) > 1)"])
def test_path_functions_refuse_a_value_argument(expr):
    with pytest.raises(QueryAnalysisError) as caught:
        Memory().query(expr, params={"p": 1})
    assert caught.value.category == "invalid-argument"


def test_valid_at_parameter_that_is_not_a_time_is_refused_when_bound():
    with pytest.raises(HGMError) as caught:
        Memory().query("nodes.where(valid_at($t))", params={"t": "soon"})
    assert caught.value.category == "invalid-argument" and "ISO 8601" in caught.value.message


def test_valid_at_compares_instants_across_offsets(hotel):
    hotel.apply(PRICE_CHANGE)
    just_before = "2026-06-01T01:59:59+02:00"
    assert hotel.query(f"#e_hotel.related_facts.where(valid_at('{just_before}'))").ids == ["f_rate1", "f_open"]
    assert hotel.query("#e_hotel.related_facts.where(valid_at('2026-06-01T02:00:00+02:00'))").ids == ["f_open", "f_rate2"]


def test_valid_at_works_in_a_constraint():
    memory = Memory()
    memory.add_constraint("closed_facts_have_reasons", "each fact where not valid_at('9999-01-01') must has(invalidated_reason)")
    memory.apply(HOTEL)
    refused = memory.apply({"ops": [{"op": "invalidate", "id": "f_rate1", "at": "2026-06-01"}]})
    assert not refused.committed and [v.node for v in refused.violations] == ["f_rate1"]
    assert memory.apply({"ops": [{"op": "invalidate", "id": "f_rate1", "at": "2026-06-01", "reason": "sold out"}]}).committed


def test_explain_shows_valid_at():
    assert "valid_at('2026-03-01')" in Memory().explain("nodes.where(type = 'fact', valid_at('2026-03-01'))")


# -- writing valid time --------------------------------------------------------------------------


def test_valid_to_before_valid_from_is_refused(hotel):
    err = _refused(
        hotel,
        [{"op": "add_node", "type": "fact", "valid_from": "2026-06-01", "valid_to": "2026-01-01"}],
        "invalid-value",
        "ops[0].valid_to",
    )
    assert "before valid_from" in err.message


def test_empty_validity_is_refused(hotel):
    _refused(hotel, [{"op": "add_node", "type": "fact", "valid_from": "2026-06-01", "valid_to": "2026-06-01T00:00:00Z"}], "invalid-value")


@pytest.mark.parametrize("bound", ["valid_from", "valid_to"])
@pytest.mark.parametrize("value", ["next week", "2026-13-01", "20260301", 5, True])
def test_a_bound_that_is_not_iso_8601_is_refused(hotel, bound, value):
    err = _refused(hotel, [{"op": "add_node", "type": "fact", bound: value}], "invalid-value", f"ops[0].{bound}")
    assert "ISO 8601" in err.message


def test_update_setting_a_bad_bound_is_refused(hotel):
    _refused(hotel, [{"op": "update_node", "id": "f_rate1", "set": {"valid_to": "2025-01-01"}}], "invalid-value", "ops[0].set.valid_to")
    _refused(hotel, [{"op": "update_node", "id": "f_open", "set": {"valid_from": "whenever"}}], "invalid-value")


def test_a_graph_file_bound_that_is_not_a_time_loads_and_never_holds():
    doc = {"format": "hgm-graph/1", "nodes": [{"id": "f", "type": "fact", "valid_from": "soon"}], "edges": []}
    memory = Memory.from_document(doc)
    assert memory.query("nodes.where(valid_at('2026-01-01'))").ids == []
    memory.apply({"ops": [{"op": "update_node", "id": "f", "set": {"content": "other attributes can change"}}]})
    # a later load into a non-empty memory takes the file as it is too
    memory.load({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "fact", "valid_to": "later"}], "edges": []})
    assert memory.node("g")["valid_to"] == "later"


def test_an_attribute_schema_can_require_valid_time():
    schema = DEFAULT_SCHEMA.extend(
        attribute_schemas={"fact": {"type": "object", "required": ["valid_from"], "properties": {"valid_from": {"type": "string"}}}}
    )
    memory = Memory(schema=schema)
    refused = memory.apply({"ops": [{"op": "add_node", "id": "f", "type": "fact", "content": "no time"}]})
    assert not refused.committed and "valid_from" in refused.violations[0].message
    assert memory.t == 0
    assert memory.apply({"ops": [{"op": "add_node", "id": "f", "type": "fact", "valid_from": "2026-01-01"}]}).committed


# -- invalidate ----------------------------------------------------------------------------------


def test_invalidate_closes_the_old_fact_and_links_the_new_one(hotel):
    report = hotel.apply(PRICE_CHANGE)
    assert report.committed
    old, new = hotel.node("f_rate1"), hotel.node("f_rate2")
    assert old["valid_to"] == "2026-06-01" and old["invalidated_reason"] == "summer season"
    assert new["valid_from"] == "2026-06-01"  # it holds from the moment the old one stopped
    assert hotel.query("#f_rate1.replaced_by").ids == ["f_rate2"]
    assert hotel.query("#f_rate1.latest").ids == ["f_rate2"]
    assert hotel.query("#e_hotel.related_facts.where(valid_at('2026-03-01'))").ids == ["f_rate1", "f_open"]
    assert hotel.query("#e_hotel.related_facts.where(valid_at('2026-07-01'))").ids == ["f_open", "f_rate2"]


def test_invalidate_keeps_the_newer_facts_own_valid_from(hotel):
    hotel.apply({"ops": [{"op": "add_node", "id": "f_rate2", "type": "fact", "valid_from": "2026-07-01"}]})
    hotel.apply({"ops": [{"op": "invalidate", "id": "f_rate1", "at": "2026-06-01", "by": "f_rate2"}]})
    assert hotel.node("f_rate2")["valid_from"] == "2026-07-01"


def test_invalidate_without_by_only_closes(hotel):
    hotel.apply({"ops": [{"op": "invalidate", "id": "f_open", "at": "2026-09-01T18:00:00+08:00"}]})
    assert hotel.node("f_open")["valid_to"] == "2026-09-01T18:00:00+08:00"
    assert hotel.query("#f_open.replaced_by").ids == []


def test_contradiction_never_loses_either_fact(hotel):
    hotel.apply(PRICE_CHANGE)
    assert {n["id"] for n in hotel.export()["nodes"]} >= {"f_rate1", "f_rate2"}
    facts = hotel.facts("e_hotel", at="2026-07-01")
    by_id = {f["id"]: f for f in facts["facts"]}
    assert by_id["f_rate1"]["holds"] is False and by_id["f_rate1"]["superseded_by"] == ["f_rate2"]
    assert by_id["f_rate2"]["holds"] is True and by_id["f_rate2"]["supersedes"] == ["f_rate1"]


def test_a_failed_invalidate_adds_no_new_fact_either(hotel):
    ops = [dict(op) for op in PRICE_CHANGE["ops"]]
    ops[2]["at"] = "not a time"
    _refused(hotel, ops, "invalid-value", "ops[2].at")
    assert hotel.node("f_rate2") is None and hotel.node("f_rate1").get("valid_to") is None


def test_invalidating_an_unknown_fact_is_refused(hotel):
    _refused(hotel, [{"op": "invalidate", "id": "f_nope", "at": "2026-06-01"}], "unknown-node")


def test_invalidating_a_closed_fact_is_refused(hotel):
    hotel.apply(PRICE_CHANGE)
    err = _refused(hotel, [{"op": "invalidate", "id": "f_rate1", "at": "2026-08-01"}], "already-invalidated", "ops[0]")
    assert "already closed" in err.message


def test_invalidating_before_the_fact_began_is_refused(hotel):
    err = _refused(hotel, [{"op": "invalidate", "id": "f_rate1", "at": "2025-12-31"}], "invalid-value", "ops[0].at")
    assert "valid_from" in err.message


@pytest.mark.parametrize(
    "op, category",
    [
        ({"op": "invalidate", "id": "f_rate1", "at": "2026-06-01", "by": "f_nope"}, "unknown-node"),
        ({"op": "invalidate", "id": "f_rate1", "at": "2026-06-01", "by": "f_rate1"}, "invalid-transaction"),
        ({"op": "invalidate", "id": "f_rate1", "at": "2026-06-01", "by": "e_hotel"}, "invalid-transaction"),
        ({"op": "invalidate", "id": "f_rate1"}, "invalid-transaction"),
        ({"op": "invalidate", "id": "f_rate1", "at": 20260601}, "invalid-transaction"),
        ({"op": "invalidate", "id": "f_rate1", "at": "2026-06-01", "reason": 3}, "invalid-transaction"),
        ({"op": "invalidate", "id": "f_rate1", "at": "2026-06-01", "when": "now"}, "invalid-transaction"),
    ],
)
def test_malformed_invalidate_is_refused(hotel, op, category):
    _refused(hotel, [op], category)


def test_invalidate_in_a_transaction_built_in_code(hotel):
    with hotel.transaction(author="planner", reason="price change") as tx:
        tx.add_node("fact", id="f_rate2", content="820 CNY")
        tx.op({"op": "invalidate", "id": "f_rate1", "at": "2026-06-01", "by": "f_rate2"})
        assert tx.query("#f_rate1.latest").ids == ["f_rate2"]
    assert hotel.node("f_rate1")["valid_to"] == "2026-06-01"


# -- facts -----------------------------------------------------------------------------------------


def test_facts_lists_holding_facts_first(hotel):
    hotel.apply(PRICE_CHANGE)
    doc = hotel.facts("e_hotel", at="2026-03-01")
    assert doc["holding"] == ["f_rate1", "f_open"]
    assert [f["id"] for f in doc["facts"]] == ["f_rate1", "f_open", "f_rate2"]


def test_facts_as_of_reads_what_memory_knew_then(hotel):
    hotel.apply(PRICE_CHANGE)
    doc = hotel.facts("e_hotel", at="2026-07-01", as_of=1)
    assert doc["holding"] == ["f_rate1", "f_open"]  # at t=1 nobody knew of the new rate


def test_facts_default_time_is_now(hotel):
    hotel.apply(PRICE_CHANGE)
    doc = hotel.facts("e_hotel")
    assert doc["at"].endswith("Z")  # the current instant, in UTC
    assert doc["holding"] == hotel.facts("e_hotel", at=doc["at"])["holding"]


@pytest.mark.parametrize("entity, at, category", [("nope", None, "unknown-node"), ("e_hotel", "soon", "invalid-argument")])
def test_facts_bad_input(hotel, entity, at, category):
    with pytest.raises(RequestError) as caught:
        hotel.facts(entity, at=at)
    assert caught.value.category == category


def test_cli_facts(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(HOTEL))
    change = tmp_path / "change.json"
    change.write_text(json.dumps(PRICE_CHANGE))
    assert main(["apply", str(plan), "--db", db]) == 0
    assert main(["apply", str(change), "--db", db]) == 0
    capsys.readouterr()
    assert main(["facts", "e_hotel", "--db", db, "--at", "2026-07-01", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["holding"] == ["f_open", "f_rate2"] and doc["t"] == 2
    assert main(["facts", "e_hotel", "--db", db, "--at", "2026-07-01"]) == 0
    text = capsys.readouterr().out
    assert "superseded by f_rate2 (summer season)" in text
    assert main(["facts", "e_hotel", "--db", db, "--at", "yesterday", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["category"] == "invalid-argument"
    assert main(["facts", "nope", "--db", db]) == 1
    assert "Traceback" not in capsys.readouterr().err


# -- as_of by the clock ----------------------------------------------------------------------------


class _Clock:
    def __init__(self, monkeypatch, start: float):
        import hgm_engine.txn.commit as commit_module

        self.now = start
        monkeypatch.setattr(commit_module.time, "time", lambda: self.now)


JAN = 1767225600.0  # 2026-01-01T00:00:00Z


def _three_commits(memory: Memory, clock: _Clock) -> None:
    for day, node in ((0, "a"), (31, "b"), (59, "c")):  # Jan 1, Feb 1, Mar 1
        clock.now = JAN + day * 86400
        memory.apply({"ops": [{"op": "add_node", "id": node, "type": "goal"}]})


def test_as_of_an_iso_time_is_the_last_commit_at_or_before_it(monkeypatch):
    memory = Memory()
    _three_commits(memory, _Clock(monkeypatch, JAN))
    assert memory.resolve_t("2025-12-31T23:59:59Z") == 0
    assert memory.resolve_t("2026-01-01") == 1
    assert memory.resolve_t("2026-02-01T00:00:00+00:00") == 2
    assert memory.resolve_t("2026-02-01T00:59:59+01:00") == 1  # 23:59:59 UTC the day before
    assert memory.resolve_t("2026-02-15") == 2
    assert memory.resolve_t("2027-01-01") == 3
    assert memory.query("nodes.count()", as_of="2026-02-15").value == 2
    assert [c["id"] for c in memory.diff("2026-01-15", "2026-03-02")] == ["b", "c"]
    assert [n["id"] for n in memory.export(as_of="2026-01-15")["nodes"]] == ["a"]
    assert memory.as_of("2026-02-15").t == 2


def test_commit_times_never_go_backwards(monkeypatch, tmp_path):
    clock = _Clock(monkeypatch, JAN + 1000)
    path = tmp_path / "m.db"
    with Memory.open(path) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "a", "type": "goal"}]})
        clock.now = JAN  # the clock is set back
        memory.apply({"ops": [{"op": "add_node", "id": "b", "type": "goal"}]})
        stamps = [c.timestamp for c in memory.commits()]
    assert stamps == [JAN + 1000, JAN + 1000]
    with Memory.open(path) as again:  # another process, its pipeline fresh
        again.apply({"ops": [{"op": "add_node", "id": "c", "type": "goal"}]})
        assert again.commits()[-1].timestamp == JAN + 1000


def test_an_unknown_name_that_is_no_time_says_both(hotel):
    with pytest.raises(RequestError) as caught:
        hotel.query("nodes", as_of="last tuesday")
    assert caught.value.category == "unknown-snapshot" and "ISO 8601" in caught.value.message


def test_a_snapshot_cannot_be_named_like_a_time(hotel):
    with pytest.raises(RequestError) as caught:
        hotel.snapshot("2026-03-01")
    assert caught.value.category == "invalid-argument"
    assert hotel.snapshots() == {}


def test_cli_as_of_an_iso_time(monkeypatch, tmp_path, capsys):
    db = str(tmp_path / "m.db")
    with Memory.open(db) as memory:
        _three_commits(memory, _Clock(monkeypatch, JAN))
    capsys.readouterr()
    assert main(["query", "nodes.count()", "--db", db, "--as-of", "2026-02-15", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"kind": "count", "value": 2, "t": 2}
    assert main(["export", "--db", db, "--as-of", "2026-01-15"]) == 0
    assert [n["id"] for n in json.loads(capsys.readouterr().out)["nodes"]] == ["a"]
    assert main(["diff", "2026-01-15", "2026-03-02", "--db", db, "--json"]) == 0
    assert "c" in capsys.readouterr().out


def test_rest_and_mcp_accept_an_iso_time(monkeypatch):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server.mcp import call_tool
    from hgm_engine.server.rest import create_app
    from hgm_engine.server.service import MemoryService

    memory = Memory()
    _three_commits(memory, _Clock(monkeypatch, JAN))
    client = TestClient(create_app(memory))
    answer = client.post("/api/v1/query", json={"expr": "nodes.count()", "as_of": "2026-02-15"})
    assert answer.status_code == 200 and answer.json()["value"] == 2
    assert client.get("/api/v1/export", params={"as_of": "2026-01-15"}).json()["nodes"][0]["id"] == "a"
    assert client.get("/api/v1/export", params={"as_of": "someday"}).status_code == 404
    doc, failed = call_tool(MemoryService(memory), "query", {"expr": "nodes.count()", "as_of": "2026-01-15T12:00:00Z"})
    assert not failed and doc["value"] == 1


def test_rest_and_mcp_facts_and_invalidate():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server.mcp import call_tool
    from hgm_engine.server.rest import create_app
    from hgm_engine.server.service import MemoryService

    memory = Memory()
    memory.apply(HOTEL)
    service = MemoryService(memory)
    report, failed = call_tool(service, "transact", {"ops": PRICE_CHANGE["ops"]})
    assert not failed and report["committed"]
    doc, failed = call_tool(service, "facts", {"id": "e_hotel", "at": "2026-07-01"})
    assert not failed and doc["holding"] == ["f_open", "f_rate2"]
    doc, failed = call_tool(service, "transact", {"ops": [{"op": "invalidate", "id": "f_rate1", "at": "2026-09-01"}]})
    assert failed and doc["error"]["category"] == "already-invalidated"
    client = TestClient(create_app(memory))
    assert client.get("/api/v1/facts", params={"id": "e_hotel", "at": "2026-03-01"}).json()["holding"] == ["f_rate1", "f_open"]
    assert client.get("/api/v1/facts", params={"id": "e_hotel", "at": "soon"}).status_code == 400
    assert client.get("/api/v1/facts", params={"id": "nope"}).status_code == 404
    refused = client.post("/api/v1/transactions", json={"ops": [{"op": "invalidate", "id": "f_rate1", "at": "2026-09-01"}]})
    assert refused.status_code == 409 and refused.json()["error"]["category"] == "already-invalidated"
    assert memory.t == 2


def test_the_printed_commit_time_names_that_commit(hotel):
    hotel.apply(PRICE_CHANGE)
    for t in (1, 2):
        assert hotel.resolve_t(hotel.commit_time(t)) == t


# -- fuzz: the new boundaries ----------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_TIMEISH = st.one_of(
    st.text(alphabet="0123456789-:TZ+. zx", max_size=30),
    st.text(max_size=20),
    st.integers(),
    st.floats(allow_nan=True),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)
_FUZZ_MEMORY = Memory()
_FUZZ_MEMORY.apply(HOTEL)
_FUZZ_BEFORE = (_FUZZ_MEMORY.t, _FUZZ_MEMORY.export())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_TIMEISH, where=st.sampled_from(["query", "param", "as_of", "facts", "invalidate", "bound"]))
def test_any_time_value_gives_an_answer_or_an_hgm_error_and_changes_nothing(value, where):
    memory = _FUZZ_MEMORY
    try:
        if where == "query":
            text = value if isinstance(value, str) else str(value)
            memory.query("nodes.where(valid_at('" + text.replace("\\", "").replace("'", "") + "'))")
        elif where == "param":
            memory.query("nodes.where(valid_at($t))", params={"t": value})
        elif where == "as_of":
            memory.query("nodes.count()", as_of=value if isinstance(value, (str, int)) and not isinstance(value, bool) else str(value))
        elif where == "facts":
            memory.facts("e_hotel", at=value)
        elif where == "invalidate":
            memory.apply({"ops": [{"op": "invalidate", "id": "f_rate1", "at": value}], "dry_run": True})
        else:
            memory.apply({"ops": [{"op": "add_node", "type": "fact", "valid_from": value}], "dry_run": True})
    except HGMError as err:
        assert err.category
    assert (memory.t, memory.export()) == _FUZZ_BEFORE
