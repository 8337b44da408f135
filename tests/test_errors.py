"""Errors: category, position, caret, expected tokens as typed, suggestions, nothing changed."""

from __future__ import annotations

import pytest

from hgm_engine import HGMError, Memory, QueryAnalysisError, QueryExecutionError, QuerySyntaxError, compile


def error_of(expr: str, **kwargs) -> HGMError:
    memory = kwargs.pop("memory", None) or Memory()
    with pytest.raises(HGMError) as caught:
        memory.query(expr, **kwargs)
    return caught.value


def test_syntax_error_shows_caret_under_the_offending_place():
    err = error_of("root.subgoals[")
    assert isinstance(err, QuerySyntaxError)
    assert (err.category, err.line, err.column) == ("syntax", 1, 15)
    assert err.excerpt == "root.subgoals[\n              ^"
    assert "^" in str(err)


def test_syntax_error_lists_expected_tokens_as_typed():
    err = error_of("root.subgoals.where(status='pending'")
    assert "')'" in err.message and "','" in err.message
    assert "RPAR" not in err.message and "COMMA" not in err.message


def test_syntax_error_on_second_line_reports_that_line():
    err = error_of("root\n  .children[")
    assert (err.line, err.column) == (2, 13)


def test_unknown_relation_suggests_closest_name():
    err = error_of("root.subgoal")
    assert err.category == "unknown-name"
    assert "did you mean 'subgoals'" in err.message
    assert (err.line, err.column) == (1, 6)


def test_unknown_edge_type_suggests_closest_name():
    err = error_of("#x.out(parentof)")
    assert "did you mean 'parent_of'" in err.message


def test_unknown_node_type_suggests_closest_name():
    assert "did you mean 'action'" in error_of("acton#x").message


def test_every_analysis_problem_is_reported_in_text_order():
    err = error_of("root.subgoal.frob().where(x =~ '(').limit(-1)")
    assert isinstance(err, QueryAnalysisError)
    assert [p.category for p in err.problems] == ["unknown-name", "unknown-name", "invalid-regex", "invalid-argument"]
    columns = [p.column for p in err.problems]
    assert columns == sorted(columns)


def test_missing_parameter_points_at_its_use():
    err = error_of("nodes.where(status = $s)")
    assert (err.category, err.column) == ("missing-parameter", 22)


def test_missing_focus_is_an_execution_error():
    err = error_of("current_goal.children")
    assert isinstance(err, QueryExecutionError)
    assert (err.category, err.column) == ("missing-focus", 1)


def test_parameter_values_must_be_json():
    err = error_of("nodes.where(status = $s)", params={"s": object()})
    assert err.category == "invalid-argument"


def test_error_json_has_category_message_line_column():
    doc = error_of("root.subgoals[").to_json()
    assert set(doc["error"]) >= {"category", "message", "line", "column"}
    assert doc["error"]["category"] == "syntax"


def test_a_failed_query_changes_nothing(travel_graph_path):
    memory = Memory.from_file(travel_graph_path)
    before = memory.export()
    for bad in ("root.subgoals[", "root.subgoal", "focus", "$x"):
        with pytest.raises(HGMError):
            memory.query(bad)
    assert memory.export() == before


def test_non_string_query_is_a_type_error():
    with pytest.raises(TypeError):
        compile(42)  # type: ignore[arg-type]


def test_a_hostile_regex_is_stopped_by_its_time_limit():
    import time

    from hgm_engine import Limits

    memory = Memory.from_document(
        {"format": "hgm-graph/1", "nodes": [{"id": "f", "type": "fact", "content": "a" * 2000 + "!"}], "edges": []}
    )
    memory.limits = Limits(regex_timeout=0.2)
    started = time.monotonic()
    with pytest.raises(QueryExecutionError) as caught:
        # polynomial backtracking the shape check lets through ('^(a|aa)+$' is refused before
        # it runs: tests/test_query_limits.py)
        memory.query("nodes.where(content =~ 'a.*a.*a.*a.*a.*a.*b')")
    assert caught.value.category == "limit-exceeded"
    assert time.monotonic() - started < 5


def test_work_limit_counts_scanned_and_started_nodes():
    from hgm_engine import Limits

    nodes = [{"id": f"f{i}", "type": "fact"} for i in range(30)]
    memory = Memory.from_document({"format": "hgm-graph/1", "nodes": nodes, "edges": []})
    memory.limits = Limits(max_work=10)
    for expr in ("nodes", "nodes.where(type = 'fact', content != 'x')", "nodes.where(has(content))"):
        with pytest.raises(QueryExecutionError) as caught:
            memory.query(expr)
        assert caught.value.category == "limit-exceeded"


def test_the_query_cache_is_safe_to_share_between_threads():
    import threading

    from hgm_engine.query.pipeline import QueryCache

    cache = QueryCache(size=8)
    failures = []

    def hammer(offset):
        try:
            for i in range(300):
                cache.get(f"#n{(i + offset) % 40}.children")
        except Exception as exc:  # noqa: BLE001 - any exception is the failure
            failures.append(exc)

    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and len(cache) <= 8
