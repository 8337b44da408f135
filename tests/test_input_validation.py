"""Input at every door: what the engine cannot store, reserved names, malformed documents.

Each bad input is refused with an hgm error whose category and place (``ops[3].set.x``,
``nodes[12].content``, a line and column) say what is wrong, and memory stays exactly as it
was: the same ``t``, the same export, the same file on disk. The rules themselves (valid
Unicode, finite numbers, integers of at most 4,300 digits, values nested at most 64 deep) are
in docs/transactions.md; they live in ``hgm_engine.model`` and every entry point calls them.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from hgm_engine import GraphFileError, HGMError, Memory, PathError, TransactionError
from hgm_engine.cli import main
from hgm_engine.txn import AddEdge, AddNode, UpdateEdge, UpdateNode, apply_op

SURROGATE = "\ud800"


def deep(levels: int, leaf: object = 1) -> object:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def base_doc() -> dict:
    return {
        "format": "hgm-graph/1",
        "nodes": [
            {"id": "g", "type": "goal", "content": "Trip"},
            {"id": "a", "type": "action", "status": "pending"},
            {"id": "e", "type": "entity", "content": "Park"},
        ],
        "edges": [
            {"from": "g", "to": "a", "type": "parent_of", "order": 0},
            {"from": "a", "to": "e", "type": "related_to"},
        ],
    }


@pytest.fixture
def db(tmp_path) -> pathlib.Path:
    path = tmp_path / "memory.db"
    with Memory.open(path) as memory:
        memory.load(base_doc())
    return path


@pytest.fixture
def memory(db):
    with Memory.open(db) as opened:
        yield opened


def state(memory: Memory) -> tuple:
    return memory.t, json.dumps(memory.export(), sort_keys=True)


def refused(memory: Memory, doc: dict) -> TransactionError:
    """Apply ``doc``; it must raise a TransactionError and change nothing, on disk included."""
    before = state(memory)
    with pytest.raises(TransactionError) as caught:
        memory.apply(doc)
    assert state(memory) == before
    with Memory.open(memory.store.location) as reopened:
        assert state(reopened) == before
    return caught.value


def run(capsys, *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path: pathlib.Path, name: str, content: object) -> pathlib.Path:
    path = tmp_path / name
    text = content if isinstance(content, str) else json.dumps(content)
    path.write_text(text, encoding="utf-8")
    return path


# -- reserved names -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["from", "to", "type"])
def test_update_edge_cannot_set_an_edge_key(memory, name):
    err = refused(memory, {"ops": [{"op": "update_edge", "from": "g", "to": "a", "type": "parent_of", "set": {name: "zzz"}}]})
    assert (err.category, err.problems[0].where) == ("invalid-transaction", "ops[0]")
    assert repr(name) in err.message


def test_update_edge_cannot_unset_an_edge_key(memory):
    err = refused(memory, {"ops": [{"op": "update_edge", "from": "g", "to": "a", "type": "parent_of", "unset": ["to"]}]})
    assert err.category == "invalid-transaction" and "'to'" in err.message


def test_a_plan_edge_cannot_carry_a_from_key(memory):
    plan = [{"id": "a2", "type": "action", "edges": [{"to": "e", "type": "related_to", "from": "g"}]}]
    err = refused(memory, {"ops": [{"op": "replace_branch", "id": "g", "with": plan}]})
    assert (err.category, err.problems[0].where) == ("invalid-transaction", "ops[0].with[0].edges[0]")


def test_ops_built_in_code_cannot_use_reserved_names(memory):
    before = state(memory)
    for op in (
        UpdateNode("g", {"id": "other"}),
        UpdateNode("g", {"type": "action"}),
        AddNode("n", "fact", {"id": "x"}),
        AddEdge("g", "e", "related_to", {"from": "a"}),
        UpdateEdge("g", "a", "parent_of", {"type": "before"}),
    ):
        with pytest.raises(TransactionError) as caught:
            memory.commit_built(lambda overlay, ctx, op=op: apply_op(overlay, op, ctx, "ops[0]"))
        assert caught.value.category == "invalid-transaction", op
    assert state(memory) == before


def test_export_then_load_gives_the_same_graph_after_edge_updates(memory):
    memory.apply({"ops": [{"op": "update_edge", "from": "g", "to": "a", "type": "parent_of", "set": {"order": 3, "note": "x"}}]})
    exported = memory.export()
    again = Memory.from_document(exported)
    assert again.export() == exported


# -- ops that are not what they claim ----------------------------------------------------------


@pytest.mark.parametrize("name", [["add_node"], {"op": "add_node"}, 5, None])
def test_an_op_name_that_is_not_a_string_is_refused(memory, name):
    err = refused(memory, {"ops": [{"op": name, "type": "fact"}]})
    assert (err.category, err.problems[0].where) == ("invalid-transaction", "ops[0]")


# -- strings must be Unicode -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "doc, where",
    [
        ({"ops": [{"op": "add_node", "type": "fact", "content": SURROGATE}]}, "ops[0].content"),
        ({"ops": [{"op": "add_node", "id": "f" + SURROGATE, "type": "fact"}]}, "ops[0].id"),
        ({"ops": [{"op": "add_node", "type": "fact", "tags": ["ok", SURROGATE]}]}, "ops[0].tags[1]"),
        ({"ops": [{"op": "add_node", "type": "fact", "x" + SURROGATE: 1}]}, "ops[0]"),
        ({"ops": [{"op": "update_node", "id": "g", "set": {"content": SURROGATE}}]}, "ops[0].set.content"),
        ({"ops": [{"op": "update_node", "id": "g", "set": {"meta": {"k": SURROGATE}}}]}, "ops[0].set.meta.k"),
        ({"ops": [{"op": "add_edge", "from": "g", "to": "e", "type": "related_to", "note": SURROGATE}]}, "ops[0].note"),
        ({"ops": [{"op": "delete_node", "id": SURROGATE}]}, "ops[0].id"),
        ({"author": SURROGATE, "ops": []}, "author"),
        ({"reason": SURROGATE, "ops": []}, "reason"),
        (
            {"ops": [{"op": "replace_branch", "id": "g", "with": [{"type": "action", "children": [{"type": "action", "content": SURROGATE}]}]}]},
            "ops[0].with[0].children[0].content",
        ),
    ],
)
def test_a_lone_surrogate_is_refused_where_it_is(memory, doc, where):
    err = refused(memory, doc)
    assert (err.category, err.problems[0].where) == ("invalid-value", where)
    assert "surrogate" in err.message


def test_a_lone_surrogate_in_a_transaction_file_is_an_error_not_a_traceback(capsys, tmp_path, db):
    tx = write(tmp_path, "tx.json", '{"ops": [{"op": "add_node", "type": "fact", "content": "\\ud800"}]}')
    code, out, err = run(capsys, "apply", tx, "--db", db, "--json")
    report = json.loads(out)
    assert code == 1 and report["committed"] is False
    assert (report["error"]["category"], report["error"]["where"]) == ("invalid-value", "ops[0].content")


@pytest.mark.parametrize("call", ["transaction", "revert", "load"])
def test_an_author_that_is_not_unicode_is_refused_by_every_commit(tmp_path, memory, call):
    before = state(memory)
    with pytest.raises(TransactionError) as caught:
        if call == "transaction":
            with memory.transaction(author=SURROGATE) as tx:
                tx.add_node("fact", content="x")
        elif call == "revert":
            memory.apply({"ops": [{"op": "update_node", "id": "g", "set": {"status": "active"}}]})
            before = state(memory)
            memory.revert(memory.t, reason="undo" + SURROGATE)
        else:
            Memory.open(tmp_path / "other.db").load(base_doc(), author=SURROGATE)
    assert caught.value.category == "invalid-value" and caught.value.problems[0].where in ("author", "reason")
    assert state(memory) == before


# -- numbers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinity_are_refused_in_values(memory, bad):
    err = refused(memory, {"ops": [{"op": "update_node", "id": "g", "set": {"score": bad}}]})
    assert (err.category, err.problems[0].where) == ("invalid-value", "ops[0].set.score")


def test_nan_is_refused_as_an_edge_order(memory):
    err = refused(memory, {"ops": [{"op": "add_node", "id": "a2", "type": "action", "parent": "g", "order": float("nan")}]})
    assert err.category == "invalid-value" and err.problems[0].where == "ops[0].order"
    err = refused(memory, {"ops": [{"op": "update_edge", "from": "g", "to": "a", "type": "parent_of", "set": {"order": float("inf")}}]})
    assert err.problems[0].where == "ops[0].set.order"


def test_nan_in_a_transaction_file_is_refused_by_the_cli(capsys, tmp_path, db):
    tx = write(tmp_path, "tx.json", '{"ops": [{"op": "add_node", "id": "n", "type": "fact", "content": "x", "score": NaN}]}')
    code, out, err = run(capsys, "apply", tx, "--db", db)
    assert code == 1 and "invalid-value at ops[0].score" in err and "Traceback" not in err


def test_an_integer_of_more_than_4300_digits_is_refused(memory):
    err = refused(memory, {"ops": [{"op": "update_node", "id": "g", "set": {"n": 10**4300}}]})
    assert (err.category, err.problems[0].where) == ("invalid-value", "ops[0].set.n")
    assert "4300 digits" in err.message
    memory.apply({"ops": [{"op": "update_node", "id": "g", "set": {"n": 10**4300 - 1}}]})  # 4,300 nines: fine


def test_an_integer_too_long_to_read_in_a_transaction_file_names_its_place(capsys, tmp_path, db):
    tx = write(tmp_path, "tx.json", '{"ops": [\n {"op": "add_node", "type": "fact", "n": ' + "9" * 5000 + "}]}")
    code, out, err = run(capsys, "apply", tx, "--db", db, "--json")
    error = json.loads(out)["error"]
    assert code == 1 and (error["category"], error["line"], error["column"]) == ("invalid-json", 2, 42)
    assert "4300 digits" in error["message"]


# -- nesting ----------------------------------------------------------------------------------------


def test_values_nest_at_most_64_levels(memory):
    memory.apply({"ops": [{"op": "update_node", "id": "g", "set": {"v": deep(64)}}]})
    err = refused(memory, {"ops": [{"op": "update_node", "id": "g", "set": {"v": deep(65)}}]})
    assert (err.category, err.problems[0].where) == ("invalid-value", "ops[0].set.v")
    assert "64 levels" in err.message


def test_a_value_nested_500_deep_is_an_error_not_a_recursion_error(memory):
    err = refused(memory, {"ops": [{"op": "add_node", "type": "fact", "content": deep(500)}]})
    assert err.category == "invalid-value"


def test_a_value_nested_a_million_deep_in_code_is_refused(memory):
    err = refused(memory, {"ops": [{"op": "add_node", "type": "fact", "content": deep(1_000_000)}]})
    assert err.category == "invalid-value"


def test_a_transaction_file_nested_50k_deep_is_invalid_json_with_its_place(capsys, tmp_path, db):
    tx = write(tmp_path, "tx.json", '{"ops": [{"op": "add_node", "type": "fact", "v": ' + "[" * 50_000 + "]" * 50_000 + "}]}")
    code, out, err = run(capsys, "apply", tx, "--db", db)
    assert code == 1 and "invalid-json at line 1" in err and "nested too deeply" in err and "Traceback" not in err


# -- values made in code -----------------------------------------------------------------------


@pytest.mark.parametrize("bad, kind", [({"a"}, "set"), (b"x", "bytes"), (object(), "object")])
def test_a_value_that_is_not_json_is_refused_in_a_transaction(memory, bad, kind):
    before = state(memory)
    with pytest.raises(TransactionError) as caught:
        with memory.transaction() as tx:
            tx.add_node("fact", id="n", content="x", extra=bad)
    assert (caught.value.category, caught.value.problems[0].where) == ("invalid-value", "ops[0].extra")
    assert kind in caught.value.message
    assert state(memory) == before


def test_object_keys_must_be_strings_in_code(memory):
    err = refused(memory, {"ops": [{"op": "update_node", "id": "g", "set": {"meta": {1: "one"}}}]})
    assert (err.category, err.problems[0].where) == ("invalid-value", "ops[0].set.meta")


# -- the transaction document --------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["yes", 1, "false", [True]])
def test_dry_run_must_be_a_boolean(memory, flag):
    err = refused(memory, {"dry_run": flag, "ops": [{"op": "add_node", "type": "fact", "content": "x"}]})
    assert (err.category, err.problems[0].where) == ("invalid-transaction", "dry_run")


def test_a_base_t_too_large_for_any_store_is_refused(memory):
    err = refused(memory, {"base_t": 10**5000, "ops": []})
    assert (err.category, err.problems[0].where) == ("invalid-transaction", "base_t")


def test_the_engine_limits_ops_per_transaction(tmp_path):
    memory = Memory(max_ops=3)
    ops = [{"op": "add_node", "type": "fact", "content": str(i)} for i in range(4)]
    with pytest.raises(TransactionError) as caught:
        memory.apply({"ops": ops})
    assert (caught.value.category, caught.value.problems[0].where) == ("limit-exceeded", "ops")
    assert memory.t == 0
    with pytest.raises(TransactionError) as caught:
        with memory.transaction() as tx:
            for op in ops:
                tx.op(op)
    assert caught.value.category == "limit-exceeded" and memory.t == 0
    assert memory.apply({"ops": ops[:3]}).committed


def test_the_default_limit_is_10000_ops_on_the_command_line_too(capsys, tmp_path, db):
    ops = [{"op": "confirm", "id": "g"}] * 10_001
    tx = write(tmp_path, "tx.json", {"ops": ops})
    code, out, err = run(capsys, "apply", tx, "--db", db, "--json")
    assert code == 1 and json.loads(out)["error"]["category"] == "limit-exceeded"
    assert Memory().max_ops == 10_000
    code, out, err = run(capsys, "apply", tx, "--db", db, "--max-ops", "20000")
    assert code == 0, err


# -- graph files -----------------------------------------------------------------------------------


def test_a_graph_file_without_nodes_is_an_empty_graph(capsys, tmp_path):
    path = write(tmp_path, "empty.json", {"format": "hgm-graph/1"})
    code, out, err = run(capsys, "validate", path)
    assert (code, err) == (0, "") and "valid: 0 nodes" in out
    code, out, err = run(capsys, "load", path, "--db", tmp_path / "m.db")
    assert (code, err) == (0, "") and "0 nodes, 0 edges" in out


@pytest.mark.parametrize(
    "node, where",
    [
        ({"id": "f", "type": "fact", "content": SURROGATE}, "nodes[1].content"),
        ({"id": "f" + SURROGATE, "type": "fact"}, "nodes[1].id"),
        ({"id": "f", "type": "fact", "score": float("nan")}, "nodes[1].score"),
        ({"id": "f", "type": "fact", "v": deep(500)}, "nodes[1].v"),
        ({"id": "f", "type": "fact", "n": -(10**4300)}, "nodes[1].n"),
        ({"id": "f", "type": "fact", "ok": {"k" + SURROGATE: 1}}, "nodes[1].ok"),
    ],
)
def test_a_graph_document_with_a_value_it_cannot_store_loads_nothing(tmp_path, node, where):
    doc = {"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}, node], "edges": []}
    with pytest.raises(GraphFileError) as caught:
        Memory.from_document(doc)
    problem = caught.value.problems[0]
    assert problem.category == "invalid-value" and problem.where.startswith(where)
    path = tmp_path / "m.db"
    with Memory.open(path) as memory:
        with pytest.raises(GraphFileError):
            memory.load(doc)
        assert memory.t == 0
    with Memory.open(path) as memory:
        assert (memory.t, len(memory)) == (0, 0)


def test_an_edge_attribute_it_cannot_store_is_named_by_the_edge(tmp_path):
    doc = base_doc()
    doc["edges"][1]["weight"] = float("inf")
    with pytest.raises(GraphFileError) as caught:
        Memory.from_document(doc)
    assert (caught.value.category, caught.value.problems[0].where) == ("invalid-value", "edges[1].weight")


def test_loading_into_a_memory_that_holds_something_refuses_the_same_values(memory):
    doc = {"format": "hgm-graph/1", "nodes": [{"id": "f", "type": "fact", "content": SURROGATE}], "edges": []}
    before = state(memory)
    with pytest.raises(GraphFileError) as caught:
        memory.load(doc)
    assert caught.value.problems[0].where == "nodes[0].content"
    assert state(memory) == before


def test_validate_finds_a_lone_surrogate_that_load_would_refuse(capsys, tmp_path):
    path = write(tmp_path, "g.json", '{"format": "hgm-graph/1", "nodes": [{"id": "a", "type": "fact", "content": "\\ud800"}]}')
    code, out, err = run(capsys, "validate", path, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["valid"] is False
    assert (doc["problems"][0]["category"], doc["problems"][0]["where"]) == ("invalid-value", "nodes[0].content")
    code, out, err = run(capsys, "load", path, "--db", tmp_path / "m.db")
    assert code == 1 and "invalid-value at nodes[0].content" in err and "Traceback" not in err


def test_a_graph_file_nested_too_deep_to_parse_is_invalid_json_with_its_place(capsys, tmp_path):
    path = write(tmp_path, "g.json", '{"format": "hgm-graph/1",\n"nodes": [{"id": "a", "type": "fact", "v": ' + "[" * 50_000 + "]" * 50_000 + "}]}")
    for command in (["validate", path], ["load", path, "--db", tmp_path / "m.db"], ["query", "root", "--graph", path]):
        code, out, err = run(capsys, *command)
        assert code == 1 and "invalid-json at line 2" in (out + err) and "Traceback" not in err, command


@pytest.mark.parametrize(
    "marks",
    [
        {"dirty_marks": 5},
        {"dirty": "needs_review", "dirty_marks": [5]},
        {"dirty": "needs_review", "dirty_marks": [{"state": "needs_review"}]},
        {"dirty": "on fire"},
        {"dirty": ["blocked"]},
    ],
)
def test_malformed_staleness_marks_in_a_graph_file_are_refused(capsys, tmp_path, marks):
    doc = {"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal", **marks}], "edges": []}
    path = write(tmp_path, "g.json", doc)
    code, out, err = run(capsys, "validate", path, "--json")
    problem = json.loads(out)["problems"][0]
    assert code == 1 and problem["category"] == "invalid-value" and problem["where"].startswith("nodes[0].dirty")
    code, out, err = run(capsys, "load", path, "--db", tmp_path / "m.db")
    assert code == 1 and "Traceback" not in err
    # The refused first load left no memory behind (a memory is made by its first commit).
    code, out, err = run(capsys, "stale", "--db", tmp_path / "m.db")
    assert "Traceback" not in err and code == 1 and "no memory at" in err


def test_marks_set_by_rules_survive_export_and_load(tmp_path):
    memory = Memory.from_document(base_doc())
    memory.load_rules("rule watch: on update action where status = 'failed' then mark parent as needs_review")
    memory.apply({"ops": [{"op": "update_node", "id": "a", "set": {"status": "failed"}}]})
    exported = memory.export()
    assert any("dirty_marks" in node for node in exported["nodes"])
    assert Memory.from_document(exported).stale() == memory.stale()


# -- ingest ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "trajectory, place",
    [
        ({"id": "p", "goal": SURROGATE, "steps": ["a"]}, "goal"),
        ({"goal": "g", "steps": ["a" + SURROGATE]}, "steps[0]"),
        ({"id": "p", "goal": "g", "steps": [{"name": "a", "cost": float("nan")}]}, "steps[0].cost"),
        ({"id": "p", "goal": "g", "steps": [{"name": "a", "v": deep(500)}]}, "steps[0].v"),
    ],
)
def test_ingest_refuses_values_it_cannot_store_with_their_line(memory, trajectory, place):
    before = state(memory)
    with pytest.raises(PathError) as caught:
        memory.ingest([{"id": "ok", "goal": "fine", "steps": ["x"]}, trajectory])
    problem = caught.value.problems[0]
    assert problem.category == "invalid-value" and problem.where == "line 2" and place in problem.message
    assert state(memory) == before


def test_a_jsonl_line_nested_too_deep_is_a_line_problem(tmp_path, memory):
    path = write(tmp_path, "t.jsonl", '{"id": "p", "goal": "g", "steps": ["a"]}\n{"id": "q", "x": ' + "[" * 50_000 + "]" * 50_000 + "}\n")
    with pytest.raises(PathError) as caught:
        memory.ingest_file(path)
    assert [p.where for p in caught.value.problems] == ["line 2"]


# -- query parameters ------------------------------------------------------------------------------


def test_params_nested_50k_deep_are_an_invalid_argument(capsys, tmp_path):
    graph = write(tmp_path, "g.json", base_doc())
    code, out, err = run(capsys, "query", "root", "--graph", graph, "--params", '{"s": ' + "[" * 50_000 + "]" * 50_000 + "}")
    assert code == 2 and "invalid-argument at --params" in err and "Traceback" not in err


def test_params_follow_the_value_rules(capsys, tmp_path):
    graph = write(tmp_path, "g.json", base_doc())
    code, out, err = run(capsys, "query", "root", "--graph", graph, "--params", '{"s": NaN}', "--json")
    error = json.loads(out)["error"]
    assert code == 2 and (error["category"], error["where"]) == ("invalid-argument", "--params.s")


# -- text output -----------------------------------------------------------------------------------

ESC = "\x1b[2J\x1b]0;owned\x07"


@pytest.fixture
def hostile_db(tmp_path) -> pathlib.Path:
    path = tmp_path / "hostile.db"
    with Memory.open(path) as memory:
        report = memory.apply({"author": "me" + ESC, "reason": "why" + ESC, "ops": [
            {"op": "add_node", "id": "g" + ESC, "type": "goal", "status": "active", "content": "Trip" + ESC},
            {"op": "add_node", "id": "f\x9b31m", "type": "fact", "content": "\u202eevil"}]})
        assert report.committed
    return path


def assert_no_control_characters(text: str) -> None:
    assert not any(ch in text for ch in ("\x1b", "\x07", "\x9b", "\u202e")), repr(text)


@pytest.mark.parametrize(
    "command",
    [
        ["show", "--db"],
        ["query", "nodes", "--db"],
        ["history", "--db"],
        ["diff", "0", "1", "--db"],
        ["export", "--db"],
        ["show", "--format", "mermaid", "--db"],
        ["show", "--format", "dot", "--db"],
    ],
)
def test_text_output_escapes_control_characters(capsys, hostile_db, command):
    code, out, err = run(capsys, *command, hostile_db)
    assert code == 0
    assert_no_control_characters(out + err)
    if command[0] != "export" and "--format" not in command:
        assert "\\x1b[2J" in out  # shown, as an escape


def test_errors_escape_control_characters(capsys, hostile_db):
    code, out, err = run(capsys, "show", "--db", hostile_db, "--root", "nope" + ESC)
    assert code == 1
    assert_no_control_characters(err)


def test_json_output_keeps_the_characters_as_they_are(capsys, hostile_db):
    code, out, err = run(capsys, "query", "nodes", "--db", hostile_db, "--json")
    assert json.loads(out)["ids"] == ["g" + ESC, "f\x9b31m"]


# -- the t a query read -----------------------------------------------------------------------------


def test_query_json_reports_the_t_it_read(capsys, db):
    with Memory.open(db) as memory:
        memory.apply({"ops": [{"op": "update_node", "id": "g", "set": {"status": "active"}}]})
    code, out, err = run(capsys, "query", "root", "--db", db, "--json")
    assert (code, json.loads(out)["t"]) == (0, 2)
    code, out, err = run(capsys, "query", "root.count()", "--db", db, "--as-of", "1", "--json")
    assert json.loads(out) == {"kind": "count", "value": 1, "t": 1}


def test_query_json_on_a_graph_file_is_the_spec_document(capsys, tmp_path):
    graph = write(tmp_path, "g.json", base_doc())
    code, out, err = run(capsys, "query", "root.count()", "--graph", graph, "--json")
    assert json.loads(out) == {"kind": "count", "value": 1}


# -- any document: a commit or an hgm error, and what is stored exports and loads back ---------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5) | st.sampled_from([(1, 64, 0), (1, 4300, -1), (1, 4300, 0), (-1, 4300, 0)]).map(lambda s: s[0] * (10 ** s[1] + s[2]) if s[1] > 100 else 2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0xDFFF), max_size=4),
    st.sampled_from([SURROGATE, "\x1b[2J", "", "id", "from", "type", "dirty"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_scalars.filter(lambda k: isinstance(k, str)) | st.just(1), inner, max_size=3),
    max_leaves=8,
) | st.builds(deep, st.sampled_from([64, 65, 300]))
_names = st.sampled_from(["g", "a", "e", "n1", "content", "from", "to", "type", "id", "order", "dirty"]) | _values
_ops = st.fixed_dictionaries(
    {"op": st.sampled_from(["add_node", "update_node", "add_edge", "update_edge", "replace_branch"]) | _values},
    optional={
        "id": _names, "type": st.sampled_from(["fact", "goal", "related_to", "parent_of"]) | _values,
        "from": _names, "to": _names, "set": st.dictionaries(_names.filter(lambda k: isinstance(k, str)), _values, max_size=2) | _values,
        "unset": st.lists(_names, max_size=2) | _values, "order": _values, "content": _values,
        "with": st.lists(st.fixed_dictionaries({"type": st.just("action")}, optional={"content": _values, "edges": _values}), max_size=2),
    },
)
_documents = st.fixed_dictionaries(
    {"ops": st.lists(_ops, max_size=3)},
    optional={"author": _values, "dry_run": _values, "base_t": _values},
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_documents)
def test_any_transaction_document_commits_or_is_an_hgm_error_and_what_is_stored_round_trips(doc):
    memory = Memory.from_document(base_doc())
    before = state(memory)
    try:
        report = memory.apply(doc)
    except HGMError as err:
        assert err.category and state(memory) == before
        return
    exported = memory.export()
    text = json.dumps(exported, allow_nan=False, ensure_ascii=False).encode("utf-8")  # strict JSON, UTF-8
    again = Memory.from_document(json.loads(text))
    assert again.export() == exported
    assert report.committed or report.violations or report.dry_run
