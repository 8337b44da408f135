"""Every query is bounded before it runs (issue 12, items 4 and 6): text length, nesting depth,
regular expressions (size, repetition, shapes that backtrack), the size of what compiling
builds, and the size of a ``paths()`` result. Over a limit is an error with a category and a
position, never a traceback, on every interface: Python, the CLI, REST, MCP, constraints and
rule files."""

from __future__ import annotations

import json
import sys
import threading
import time
import tracemalloc

import pytest

from hgm_engine import HGMError, Limits, Memory, QueryAnalysisError, QueryExecutionError
from hgm_engine.query import DEFAULT_LIMITS, QueryCache, regex_problem
from hgm_engine.query.pipeline import compile_uncached
from hgm_engine.rules import parse_rules

DEPTH = DEFAULT_LIMITS.max_depth
FRAMES_NEEDED = 500  # what compiling a query at the depth limit may use: half of Python's default limit


def _memory() -> Memory:
    memory = Memory()
    memory.apply(
        {
            "ops": [
                {"op": "add_node", "id": "g", "type": "goal", "title": "trip"},
                {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "done", "content": "book"},
                {"op": "add_node", "id": "f", "type": "fact", "content": "aaaa"},
            ]
        }
    )
    return memory


def _chain(length: int) -> Memory:
    """A goal with a chain of ``length`` nested subgoals (built as one document, fast)."""
    nodes = [{"id": f"n{i}", "type": "goal"} for i in range(length)]
    edges = [{"from": f"n{i}", "to": f"n{i + 1}", "type": "parent_of"} for i in range(length - 1)]
    return Memory.from_document({"format": "hgm-graph/1", "nodes": nodes, "edges": edges})


def _refused(run, category: str = "limit-exceeded") -> HGMError:
    with pytest.raises(HGMError) as caught:
        run()
    assert caught.value.category == category, caught.value
    return caught.value


def _measured(run):
    """(CPU seconds, peak bytes allocated by Python) of ``run()``, its error swallowed."""
    tracemalloc.start()
    started = time.thread_time()  # CPU time of this thread: the work, not the machine's load
    try:
        run()
    except HGMError:
        pass
    finally:
        elapsed = time.thread_time() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return elapsed, peak


def _nested(kind: str, depth: int) -> str:
    """A query ``depth`` levels deep, nesting one construct (docs/language.md §13 counts a
    level for each parenthesised query, ``.where()``, function call, ``not``, ``and``/``or``,
    comparison and list literal around another)."""
    if kind == "parens":  # (((root)))
        return "(" * depth + "root" + ")" * depth
    if kind == "not":  # where, then depth - 1 nots around an attribute
        return "nodes.where(" + "not " * (depth - 1) + "ok)"
    if kind == "exists-where":  # where, then exists and where per level
        levels = (depth - 1) // 2
        return "nodes.where(" + "exists(children.where(" * levels + "ok" + "))" * levels + ")"
    if kind == "count":  # where, then a comparison, count and where per level
        levels = (depth - 1) // 3
        return "nodes.where(" + "count(children.where(" * levels + "ok" + ")) > 0" * levels + ")"
    if kind == "list":  # where, a comparison, then the lists
        return "nodes.where(status in " + "[" * (depth - 2) + "'done'" + "]" * (depth - 2) + ")"
    if kind == "or-and":  # where, the connectives, then the innermost comparison
        inner = "status = 'done'"
        for level in range(depth - 2):
            inner = f"(x = {level} {'or' if level % 2 else 'and'} {inner})"
        return f"nodes.where({inner})"
    if kind == "subquery-union":  # one parenthesised query per level
        inner = "#g"
        for _ in range(depth):
            inner = f"({inner} | #a).children"
        return inner
    raise ValueError(kind)


KINDS = ["parens", "not", "exists-where", "count", "list", "or-and", "subquery-union"]


# -- nesting -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_nesting_beyond_the_depth_limit_is_refused_with_a_position(kind):
    text = _nested(kind, 250)
    err = _refused(lambda: compile_uncached(text))
    assert isinstance(err, QueryAnalysisError)
    assert err.line == 1 and 1 <= err.column <= len(text)
    assert f"at most {DEPTH}" in err.message


@pytest.mark.parametrize("kind", ["parens", "not", "list", "or-and", "subquery-union"])
def test_the_depth_limit_is_exact(kind):
    assert compile_uncached(_nested(kind, DEPTH)).kind == "nodes"
    _refused(lambda: compile_uncached(_nested(kind, DEPTH + 1)))


@pytest.mark.parametrize("kind", KINDS)
def test_nesting_at_the_depth_limit_compiles_and_runs(kind):
    result = _memory().query(_nested(kind, DEPTH))
    assert result.kind == "nodes"


def test_parentheses_that_nest_nothing_are_not_limited():
    # ((((x)))) around a condition leaves no trace in the syntax tree: nothing nests
    text = "nodes.where(" + "(" * 300 + "status = 'done'" + ")" * 300 + ")"
    assert _memory().query(text).ids == ["a"]


@pytest.mark.parametrize("kind", KINDS)
def test_nesting_at_the_depth_limit_compiles_with_little_stack_left(kind):
    # A server thread or a test runner calls in with frames of its own: compiling a query at
    # the limit needs far fewer frames than Python allows.
    text = _nested(kind, DEPTH)
    outcome = []

    def deep(frames_left: int):
        if frames_left:
            return deep(frames_left - 1)
        outcome.append(compile_uncached(text).kind)

    in_use = 0
    frame = sys._getframe()
    while frame is not None:
        in_use, frame = in_use + 1, frame.f_back
    deep(sys.getrecursionlimit() - in_use - FRAMES_NEEDED)
    assert outcome == ["nodes"]


def test_the_depth_limit_is_configurable():
    text = _nested("not", 10)
    _refused(lambda: compile_uncached(text, limits=Limits(max_depth=5)))
    assert compile_uncached(text, limits=Limits(max_depth=12)).kind == "nodes"


def test_200_nested_nots_in_a_rule_file_are_refused_before_anything_is_kept():
    text = "rule a: on add fact where " + "not " * 200 + "ok then mark self as blocked"
    err = _refused(lambda: parse_rules(text))
    assert err.line == 1 and err.column is not None
    memory = Memory()
    _refused(lambda: memory.load_rules(text))
    assert not memory.rules()


def test_a_rule_condition_at_the_file_limit_also_compiles_as_a_trigger():
    # A trigger's condition runs as $node.where(COND): one level deeper than it is written.
    # What the rule file check passes, compiling the trigger never refuses.
    memory = Memory()
    text = "rule a: on add fact where " + "not " * (DEPTH - 1) + "ok then mark self as blocked"
    memory.load_rules(text)
    memory.apply({"ops": [{"op": "add_node", "id": "x", "type": "fact"}]})
    _refused(lambda: parse_rules("rule a: on add fact where " + "not " * DEPTH + "ok then mark self as blocked"))


def test_a_deeply_nested_constraint_is_refused():
    text = "each action must " + "not " * 200 + "ok"
    _refused(lambda: Memory().add_constraint("deep", text))


def test_nested_exists_compiles_in_linear_time_and_memory():
    # depth 14 took 14 s and kept ~700 MB: each level compiled the level below twice
    times = {}
    for depth in (6, 12):
        text = _nested("exists-where", depth)
        times[depth], peak = _measured(lambda: compile_uncached(text))
        assert peak < 20_000_000, (depth, peak)
    assert times[12] < 5.0, times  # was 20 s and doubling per level


def test_a_nested_constraint_compiles_fast():
    text = "each action must " + "exists(children.where(" * 14 + "status = 'done'" + "))" * 14
    elapsed, _ = _measured(lambda: Memory().add_constraint("deep", text))
    assert elapsed < 5.0  # was 9.5 s, on every open


@pytest.mark.parametrize(
    "text",
    [
        " | ".join(["root"] * 2500),  # a wide union
        "root" + ".children" * 2000,  # a long chain of steps
        "root" + ".children.where(status = 'done')" * 500,
        "nodes.where(" + " or ".join(f"x = {i}" for i in range(1500)) + ")",
        "nodes.where(x in [" + ", ".join(str(i) for i in range(3000)) + "])",
    ],
    ids=["union", "chain", "chain-where", "wide-or", "long-list"],
)
def test_wide_and_long_queries_compile_in_bounded_time(text):
    assert len(text) <= DEFAULT_LIMITS.max_length
    elapsed, peak = _measured(lambda: compile_uncached(text))
    assert elapsed < 10.0 and peak < 100_000_000, (elapsed, peak)
    assert compile_uncached(text).kind == "nodes"


# -- length and integers -----------------------------------------------------------------------


def test_a_query_over_the_length_limit_is_refused_before_parsing():
    text = "root" + ".children" * 20
    err = _refused(lambda: compile_uncached(text, limits=Limits(max_length=50)))
    assert err.column == 51 and "at most 50" in err.message
    long = "root" + ".children" * (DEFAULT_LIMITS.max_length // 9 + 1)
    _refused(lambda: compile_uncached(long))


@pytest.mark.parametrize(
    "text",
    [
        "root[" + "9" * 5000 + "]",
        "root[1:" + "9" * 5000 + "]",
        "root.children{" + "9" * 5000 + "}",
        "root.limit(" + "9" * 5000 + ")",
        "nodes.where(x in [" + "9" * 5000 + "])",
        "nodes.where(x = -" + "9" * 5000 + ")",
    ],
    ids=["index", "slice", "repeat", "limit", "list", "compare"],
)
def test_an_integer_of_5000_digits_is_refused_at_its_position(text):
    err = _refused(lambda: compile_uncached(text))
    token = text.index("9" * 10)
    if text[token - 1] == "-":
        token -= 1  # the sign is part of the number
    assert err.column == token + 1


def test_integers_of_a_few_hundred_digits_still_work():
    big = "9" * 300
    memory = _memory()
    assert memory.query(f"root[{big}]").ids == []
    assert memory.query(f"root[-{big}:{big}]").ids == ["g"]
    assert memory.query(f"nodes.where(x = {big})").ids == []
    assert memory.query(f"root.actions[{big}]").ids == []  # an index inlined into generated code
    assert memory.query(f"root.actions.where(status = 'done')[{big}]").ids == []


# -- regular expressions -----------------------------------------------------------------------


def test_a_huge_regex_repetition_is_refused_before_it_is_compiled():
    # 'a{5000000}' took 1.4 GB to compile, before the hazard check looked at it
    text = "nodes.where(content =~ 'a{5000000}')"
    elapsed, peak = _measured(lambda: compile_uncached(text))
    assert elapsed < 2 and peak < 5_000_000, (elapsed, peak)  # was 1.4 GB
    err = _refused(lambda: compile_uncached(text))
    assert err.column == text.index("'") + 1


@pytest.mark.parametrize(
    "pattern",
    [
        "a{5000000}",
        "(?:[a-z]{100}){100}",
        "(?:ab|[cd]){3000}x{3000}y{3000}z{3000}",
        "a{10000,}",
        "(?x)([a][b][c] # a comment with a ) in it\n){3000}",  # verbose mode read as regex reads it
        "[]a]{20000}",  # a ']' first in a class is a character
        "(?P<n>a{20000})",
        "(?i:a{20000})",
    ],
)
def test_regex_size_counts_what_compiling_expands(pattern):
    assert regex_problem(pattern)[0] == "limit-exceeded"


@pytest.mark.parametrize("pattern", ["a(?x)b", "(?x:a b)c", "(?-x)a"])
def test_a_verbose_flag_that_would_hide_part_of_a_pattern_is_refused(pattern):
    # the size of the part after it could not be trusted: a '#' may start a comment or not
    category, message, _ = regex_problem(pattern)
    assert category == "limit-exceeded" and "first group" in message


@pytest.mark.parametrize(
    "pattern",
    [
        r"^\d{4}-\d{2}-\d{2}$",
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        r"(?i)hotel|palace",
        r"a{1,65535}",
        r"book.*hotel",
        r"^(Mon|Tue)day$",
        r"\p{L}+\s\d+",
        r"(?x) a b # a comment (with a parenthesis",
        r"[)(|*+]{2}",
        r"\u263A\N{WHITE SMILING FACE}\p{Greek}",
    ],
)
def test_ordinary_patterns_pass_the_regex_checks(pattern):
    assert regex_problem(pattern) is None


@pytest.mark.parametrize(
    "pattern, why",
    [
        ("(a+)+$", "a quantifier inside another quantifier"),
        (r"(\p{L}+)+$", "a quantifier inside another quantifier"),  # regex-only syntax
        (r"(?:a{1,30}){1,30}$", "a quantifier inside another quantifier"),
        ("(a|aa)*b", "an alternation inside an unbounded quantifier"),
        (r"(a)\1", "a back-reference"),
        (r"(?P<x>a)(?P=x)", "a back-reference"),
        (r"(?<x>a)\g<x>", "a back-reference"),
        (r"(a|b(?1))", "a recursive pattern"),
        (r"(?:hotel){e<=2}", "fuzzy matching"),
        (r"(?:hotel){e}", "fuzzy matching"),
        (r"(?p)hotel|hotels", "POSIX matching"),
        ("a.*b.*c.*d.*e.*f.*g.*h.*i.*j", "unbounded quantifiers"),
    ],
)
def test_regex_shapes_that_backtrack_are_refused(pattern, why):
    category, message, _offset = regex_problem(pattern)
    assert category == "limit-exceeded" and why in message


def test_the_regex_checks_do_not_use_cpythons_private_parser():
    import hgm_engine.query as query_package

    for path in query_package.__path__:
        import pathlib

        for source in pathlib.Path(path).rglob("*.py"):
            assert "re._parser" not in source.read_text() and "sre_parse" not in source.read_text(), source
    import hgm_engine.server.service as service

    for source in pathlib.Path(service.__file__).parent.rglob("*.py"):  # the service is a package
        assert "_parser" not in source.read_text(), source


def test_a_hazardous_regex_is_refused_by_the_python_api():
    err = _refused(lambda: _memory().query(r"nodes.where(content =~ '(\p{L}+)+$')"))
    assert isinstance(err, QueryAnalysisError) and err.column is not None


def test_a_hazardous_regex_parameter_is_refused_when_bound():
    memory = _memory()
    started = time.perf_counter()
    err = _refused(lambda: memory.query("nodes.where(content =~ $p)", params={"p": "a{5000000}"}))
    assert time.perf_counter() - started < 2
    assert err.column == len("nodes.where(content =~ ") + 1
    _refused(lambda: memory.query("nodes.where(content =~ $p)", params={"p": "(a+)+$"}))
    assert memory.query("nodes.where(content =~ $p)", params={"p": "^a+$"}).ids == ["f"]


def test_regex_limits_are_configurable():
    text = "nodes.where(content =~ 'a{3000}')"
    _refused(lambda: compile_uncached(text, limits=Limits(max_regex_size=1000)))
    assert compile_uncached(text, limits=Limits(max_regex_size=5000)).kind == "nodes"
    many = "nodes.where(content =~ 'a.*b.*c')"
    _refused(lambda: compile_uncached(many, limits=Limits(max_regex_unbounded=1)))


def test_the_cache_does_not_serve_a_query_compiled_under_looser_limits():
    cache = QueryCache()
    text = "nodes.where(content =~ 'a{3000}')"
    assert cache.get(text).kind == "nodes"
    _refused(lambda: cache.get(text, Limits(max_regex_size=1000)))


# -- paths() output ----------------------------------------------------------------------------


def test_paths_walks_count_against_max_work():
    memory = _chain(200)
    memory.limits = Limits(max_work=5_000)
    assert len(memory.query("root.descendants").ids) == 199  # 199 nodes of work: fine
    err = _refused(lambda: memory.query("root.descendants.paths()"))  # ~20,000 ids in walks
    assert isinstance(err, QueryExecutionError)


def test_paths_output_is_bounded_by_max_output():
    memory = _chain(200)
    memory.limits = Limits(max_output=10_000)
    err = _refused(lambda: memory.query("root.descendants.paths()"))
    assert "10000" in err.message.replace(",", "")
    memory.limits = Limits(max_output=50_000)  # the walks built on the way count too
    assert len(memory.query("root.descendants.paths()").paths) == 199


def test_paths_on_a_long_chain_stop_within_the_default_limits():
    # 3.6 GB on a 15k chain before; the walks are quadratic in the chain's length
    memory = _chain(4000)
    elapsed, peak = _measured(lambda: memory.query("root.descendants.paths()"))
    assert peak < 200_000_000 and elapsed < 20, (elapsed, peak)
    _refused(lambda: memory.query("root.descendants.paths()"))


# -- every interface ---------------------------------------------------------------------------

HOSTILE = [
    "(" * 250 + "root" + ")" * 250,
    "nodes.where(" + "not " * 250 + "ok)",
    "nodes.where(content =~ 'a{5000000}')",
    "root[" + "9" * 5000 + "]",
]


@pytest.mark.parametrize("text", HOSTILE, ids=["parens", "not", "regex", "integer"])
def test_the_cli_reports_a_limit_without_a_traceback(tmp_path, capsys, text):
    from hgm_engine.cli import main

    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []}))
    code = main(["query", text, "--graph", str(graph), "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in out + err
    assert json.loads(out)["error"]["category"] == "limit-exceeded"


# A server takes 4,096 characters at most: an integer of over 4,300 digits cannot reach it.
SERVED = HOSTILE[:3]


@pytest.mark.parametrize("text", SERVED, ids=["parens", "not", "regex"])
def test_rest_answers_400_limit_exceeded(text):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server import create_app

    memory = _memory()
    client = TestClient(create_app(memory))
    response = client.post("/api/v1/query", json={"expr": text})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["category"] == "limit-exceeded"


@pytest.mark.parametrize("text", SERVED, ids=["parens", "not", "regex"])
def test_mcp_reports_a_limit_as_a_tool_error(text):
    from hgm_engine.server.mcp import call_tool
    from hgm_engine.server.service import MemoryService

    answer, failed = call_tool(MemoryService(_memory()), "query", {"expr": text})
    assert failed and answer["error"]["category"] == "limit-exceeded"


def test_the_service_refuses_a_hazardous_regex_before_compiling_it():
    # what the service refuses must not be compiled into (and kept by) the memory's cache
    from hgm_engine.server.service import MemoryService

    memory = _memory()
    service = MemoryService(memory)
    compiled = []
    original = memory.compile
    memory.compile = lambda expr: compiled.append(expr) or original(expr)
    for text in ("nodes.where(content =~ 'a.*b.*c.*d.*e.*f')", "#g.children{1,1000}"):
        _refused(lambda: service.query(text))
    assert compiled == []
    assert service.query("nodes.where(content =~ 'a.*b')")["ids"] == []
    assert compiled == ["nodes.where(content =~ 'a.*b')"]


def test_compiling_from_many_threads_under_limits_is_safe():
    cache = QueryCache()
    errors = []

    def work():
        try:
            for depth in range(1, 30):
                cache.get(_nested("not", depth))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_all_the_regex_matches_of_one_query_share_a_time_budget():
    # Each match stays under regex_timeout; together they would run for minutes.
    nodes = [{"id": f"f{i}", "type": "fact", "content": "a" * 200 + "!"} for i in range(2000)]
    memory = Memory.from_document({"format": "hgm-graph/1", "nodes": nodes, "edges": []})
    memory.limits = Limits(regex_budget=0.5)
    started = time.monotonic()
    err = _refused(lambda: memory.query("nodes.where(content =~ 'a.*a.*a.*a.*a.*b')"))
    assert "Limits.regex_budget" in err.message and time.monotonic() - started < 10


def test_a_rule_file_part_too_long_to_compile_is_refused_when_the_file_is_checked():
    from hgm_engine.query import analyze_rule_file, parse_rule_file
    from hgm_engine.model import DEFAULT_SCHEMA

    text = "rule a: on add fact where " + " or ".join(["x = 1"] * 10) + " then mark self as blocked"
    limits = Limits(max_length=40)
    err = _refused(lambda: analyze_rule_file(parse_rule_file(text, limits), DEFAULT_SCHEMA, limits))
    assert err.column == text.index("x = 1") + 1


def test_the_query_cache_is_bounded_by_the_text_it_holds():
    cache = QueryCache(max_chars=1_000)
    texts = ["root" + ".children" * 20 + f"[{i}]" for i in range(50)]  # ~190 characters each
    for text in texts:
        cache.get(text)
    assert 0 < len(cache) <= 1_000 // len(texts[0])
    assert cache.get(texts[-1]) is cache.get(texts[-1])  # the latest are kept


def test_an_error_lists_at_most_twenty_problems():
    # 2,000 unknown names in one long query made an error of megabytes (each with its line)
    text = "root" + ".frob()" * 2000
    elapsed, peak = _measured(lambda: compile_uncached(text))
    err = _refused(lambda: compile_uncached(text), "unknown-name")
    assert len(err.problems) == 20 and "1980 more problems" in err.problems[-1].message
    assert peak < 20_000_000, (elapsed, peak)


def test_a_filter_is_charged_for_the_size_of_its_condition():
    memory = _memory()
    memory.limits = Limits(max_work=500)
    memory.query("nodes.where(status = 'done' or status = 'x')")  # 3 nodes, 1 each
    wide = "nodes.where(" + " or ".join(["n = 1"] * 2000) + ")"
    _refused(lambda: memory.query(wide))  # 3 nodes × 2,000 terms: 750
    # a list of strings is a set: one term, whatever its length
    assert memory.query("nodes.where(id in [" + ", ".join(f"'x{i}'" for i in range(1500)) + "])").ids == []
    _refused(lambda: memory.query("nodes.where(n in [" + ", ".join(["1"] * 2000) + "])"))


def test_the_worst_query_bench_measures_every_query_on_a_small_memory():
    import pathlib

    repo = pathlib.Path(__file__).resolve().parents[1]
    if str(repo) not in sys.path:
        sys.path.insert(0, str(repo))
    from bench import worst_query

    for name in ("regex-largest", "paths-deep-chain", "nested-exists", "union-ids-max-length"):
        row = worst_query.measure(name, 30)
        assert row["ended"] in ("answered", "limit-exceeded") and row["wall_s"] >= 0, row
