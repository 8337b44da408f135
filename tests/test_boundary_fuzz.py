"""Every input boundary fuzzed through the interfaces users call (issue 12's acceptance).

One property per boundary: queries (``Memory.query`` / ``compile`` with any parameters, focus
and ``as_of``), graph files (``hgm validate``, ``hgm load``, ``Memory.load``), transaction files
(``hgm apply``, ``Memory.apply``), rule files (``hgm rules check`` / ``load``,
``Memory.load_rules``), JSON Lines (``hgm ingest``, ``Memory.ingest``), the other command
lines, REST bodies and MCP tool calls. The only outcomes allowed are a value or an hgm error
with a category: never another exception, a ``Traceback`` on the terminal, an exit code
outside 0-3, ``--json`` output that does not parse, a 5xx, a call that runs past
:data:`HANG` seconds, or a refusal that changed the store (its bytes on disk, ``memory.t`` or
``export()``).

Inputs are built from valid documents and mutated (wrong types, missing keys, huge, deep,
non-finite and surrogate values, duplicate ids, dangling edges), from token soup of the
language's keywords, and from random bytes. The command line runs in process
(:func:`hgm_engine.cli.main`) with a standard output that encodes UTF-8 strictly, as a
terminal's does, and a standard error that escapes what it cannot encode, as Python's does.

The suite runs a few dozen examples per boundary (a few seconds in all); for a long run set
``HYPOTHESIS_PROFILE=long`` (tests/conftest.py), which multiplies every count by 40::

    HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_boundary_fuzz.py
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import math
import os
import pathlib
import shutil
import sys
import tempfile
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hgm_engine import HGMError, Memory, compile as compile_query
from hgm_engine.cli import build_parser, main

from tests.test_fuzz import TOKENS as QUERY_TOKENS

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

HANG = 30.0  # seconds: no single call may take longer (the default limits stop a query far sooner)
EXIT_CODES = {0, 1, 2, 3}


def boundary(examples: int, **kwargs: Any) -> settings:
    """``examples`` per run in the suite, 40 times as many under ``HYPOTHESIS_PROFILE=long``
    (the profile's ``max_examples`` over hypothesis' default of 100, times the count)."""
    scale = settings().max_examples / 100
    return settings(
        max_examples=max(1, round(examples * scale)),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        **kwargs,
    )


# -- hostile values, shared by every boundary -------------------------------------------------------

SURROGATES = ["\ud800", "\udfff", "\udcff", "a\ud83d"]
HOSTILE_STRINGS = st.sampled_from(
    SURROGATES
    + ["", " ", "\x00", "a\x00b", "\x1b[2J", "\u202e", "\n", "a\nb", "²", "٣", "-1", "0", "1", "9" * 30,
       "id", "from", "to", "type", "dirty", "dirty_marks", "order", "seq", "g", "a", "e", "n1", "trip",
       "needs_review", "blocked", "done", "pending", "goal", "action", "fact", "parent_of", "before",
       "derived_from", "x" * 300]
)


class Big:
    """An integer of ``digits`` digits, drawn as this stand-in (hypothesis cannot print an
    integer of over 4,300 digits) and made real by :func:`real` just before the call."""

    def __init__(self, digits: int, sign: int = 1):
        self.digits, self.sign = digits, sign

    def __repr__(self) -> str:
        return f"Big({self.digits} digits{', negative' if self.sign < 0 else ''})"

    @property
    def value(self) -> int:
        return self.sign * (10**self.digits - 1)


def real(value: Any) -> Any:
    """``value`` with every :class:`Big` made a real integer."""
    if isinstance(value, Big):
        return value.value
    if isinstance(value, dict):
        return {k: real(v) for k, v in value.items()}
    if isinstance(value, list):
        return [real(v) for v in value]
    return value


BIG_NUMBERS = st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**300, 1e308, 5e-324]) | st.builds(
    Big, st.sampled_from([4300, 4301, 5000, 20000]), st.sampled_from([1, -1])
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.integers(),
    BIG_NUMBERS,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0xDFFF), max_size=4),
    HOSTILE_STRINGS,
)


def deep(levels: int, leaf: Any = 1, kind: str = "list") -> Any:
    value = leaf
    for _ in range(levels):
        value = [value] if kind == "list" else {"k": value}
    return value


DEEP = st.builds(deep, st.sampled_from([63, 64, 65, 200, 600]), st.just(1), st.sampled_from(["list", "dict"]))
KEYS = st.text(max_size=5) | HOSTILE_STRINGS
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
ANY_VALUE = VALUES | DEEP
NON_JSON = st.sampled_from([{1, 2}, b"bytes", object(), {1: "a"}, {(1, 2): "a"}, complex(1, 2), ("tuple",)])


def json_text(value: Any) -> str:
    """``value`` as JSON text: NaN and Infinity as JavaScript writes them, surrogates escaped,
    a :class:`Big` as its digits."""
    markers: dict[str, str] = {}

    def fit(item: Any) -> Any:
        if isinstance(item, Big):
            marker = f"@big{len(markers)}@"
            markers[marker] = ("-" if item.sign < 0 else "") + "9" * item.digits
            return marker
        if isinstance(item, dict):
            return {k: fit(v) for k, v in item.items()}
        if isinstance(item, list):
            return [fit(v) for v in item]
        return item

    text = json.dumps(fit(value))
    for marker, digits in markers.items():
        text = text.replace(f'"{marker}"', digits)
    return text


def write_bytes(folder: pathlib.Path, name: str, data: str | bytes) -> pathlib.Path:
    path = folder / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return path


# -- structure-aware mutation of a valid document --------------------------------------------------


def _places(value: Any, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_places(item, path + (key,)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_places(item, path + (index,)))
    return found


def _get(value: Any, path: tuple) -> Any:
    for part in path:
        value = value[part]
    return value


MUTATIONS = ["replace", "delete", "add_key", "duplicate", "wrap", "retype", "swap_ids"]


def mutate(doc: Any, data: st.DataObject, *, ids: list[str] = (), rounds: int = 4, json_only: bool = False) -> Any:
    """A copy of ``doc`` with 1 to ``rounds`` random changes: a value replaced by a hostile one,
    a key deleted or added, a list item duplicated (duplicate ids and edges), a value nested
    deep, a container turned into a scalar, a string replaced by another id (dangling or not).
    Without ``json_only`` the whole document may become a value JSON cannot hold (a set)."""
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, rounds), label="mutations")):
        places = _places(doc)
        path = data.draw(st.sampled_from(places), label="place")
        action = data.draw(st.sampled_from(MUTATIONS), label="action")
        if not path:
            if action in ("replace", "retype"):
                whole = ANY_VALUE if json_only else ANY_VALUE | NON_JSON.filter(lambda v: isinstance(v, (set, tuple)))
                doc = data.draw(whole, label="document")
            continue
        parent, last = _get(doc, path[:-1]), path[-1]
        target = parent[last]
        if action == "replace":
            parent[last] = data.draw(ANY_VALUE, label="value")
        elif action == "delete":
            del parent[last]
        elif action == "add_key" and isinstance(target, dict):
            target[data.draw(KEYS, label="key")] = data.draw(ANY_VALUE, label="value")
        elif action == "duplicate" and isinstance(parent, list):
            parent.insert(last, copy.deepcopy(target))
        elif action == "wrap":
            parent[last] = deep(data.draw(st.sampled_from([1, 63, 65, 200]), label="depth"), target)
        elif action == "retype":
            parent[last] = data.draw(st.sampled_from([None, 0, "", [], {}, True, 1.5]), label="retyped")
        elif action == "swap_ids" and isinstance(target, str):
            parent[last] = data.draw(st.sampled_from(list(ids) + ["nowhere", ""]) | HOSTILE_STRINGS, label="id")
    return doc


def text_damage(text: str, data: st.DataObject) -> str:
    """``text`` cut, with characters inserted, or with a byte-level character replaced."""
    action = data.draw(st.sampled_from(["cut", "insert", "replace", "none"]), label="text damage")
    if action == "none" or not text:
        return text
    at = data.draw(st.integers(0, len(text)), label="at")
    if action == "cut":
        return text[:at]
    piece = data.draw(st.sampled_from(['"', "{", "[", "]", "}", ",", ":", "\\", "\\u", "\\ud800", "NaN", "-", "\x00", "\ufeff", "9" * 5000]) | st.text(max_size=3), label="piece")
    if action == "insert":
        return text[:at] + piece + text[at:]
    return text[:at] + piece + text[at + 1 :]


# -- the memory every example starts from -----------------------------------------------------------

GRAPH = {
    "format": "hgm-graph/1",
    "nodes": [
        {"id": "trip", "type": "goal", "content": "Plan a trip", "status": "active"},
        {"id": "book", "type": "goal", "content": "Book", "status": "active"},
        {"id": "a1", "type": "action", "content": "find hotels", "status": "done"},
        {"id": "a2", "type": "action", "content": "reserve", "status": "pending", "tags": ["x", "y"], "notes": {"k": [None, 1.5]}},
        {"id": "r1", "type": "result", "content": "3 hotels"},
        {"id": "f1", "type": "fact", "content": "budget 900", "amount": 900.5},
        {"id": "e1", "type": "entity", "content": "Paris"},
        {"id": "f2", "type": "fact", "content": "old", "dirty": "needs_review",
         "dirty_marks": [{"state": "needs_review", "rule": "watch", "because": ["f1"], "t": 1}]},
    ],
    "edges": [
        {"from": "trip", "to": "book", "type": "parent_of", "order": 0},
        {"from": "book", "to": "a1", "type": "parent_of", "order": 0},
        {"from": "book", "to": "a2", "type": "parent_of", "order": 1},
        {"from": "a1", "to": "a2", "type": "before"},
        {"from": "a1", "to": "r1", "type": "produces"},
        {"from": "f2", "to": "f1", "type": "derived_from"},
        {"from": "a2", "to": "e1", "type": "related_to"},
    ],
}
GRAPH_IDS = [node["id"] for node in GRAPH["nodes"]]

RULES = """\
// staleness and a trigger
propagate derived_from backward depth 2
rule failure_blocks_next: on update action where status = 'failed'
    then mark following.where(status = 'pending') as blocked because 'an earlier step failed'
rule tag: on add fact where content contains 'x' then set self with checked = true
constraint actions_have_content: each action must has(content) or true
"""

TRAJECTORY = {
    "id": "order-17",
    "goal": "Check the status of order A1001",
    "steps": [{"name": "query_order", "content": "call the API", "args": {"order_id": "A1001"}},
              {"name": "check_result", "condition": "ok"}, "notify_user"],
    "edges": [[0, 1], [1, 2]],
    "tags": ["order", "query"],
    "result": "success",
    "reward": 1.0,
}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> pathlib.Path:
    """A SQLite memory with a graph, a rule set, a constraint, a path and a snapshot."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    with Memory.open(path) as memory:
        memory.load(GRAPH)
        memory.load_rules(RULES, name="plan")
        memory.add_constraint("goals_ok", "each goal must true")
        memory.ingest([TRAJECTORY])
        memory.snapshot("loaded")
        memory.locate("order")  # the path index, saved when the memory closes: reads then write nothing
    assert not os.path.exists(str(path) + "-wal")
    return path


class Workspace:
    """A folder for one example: a copy of the template memory and room for input files."""

    def __init__(self, template: pathlib.Path):
        self.folder = pathlib.Path(tempfile.mkdtemp(prefix="hgm-fuzz-"))
        self.db = self.folder / "memory.db"
        shutil.copyfile(template, self.db)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def workspaces(template):
    """Make a fresh :class:`Workspace` per hypothesis example (``with workspaces() as ws``)."""
    made: list[Workspace] = []

    @contextlib.contextmanager
    def make():
        ws = Workspace(template)
        made.append(ws)
        try:
            yield ws
        finally:
            ws.close()

    yield make
    for ws in made:
        ws.close()


def store_bytes(db: pathlib.Path) -> str:
    """A digest of the store's bytes on disk: the file and its write-ahead log."""
    digest = hashlib.sha256()
    for suffix in ("", "-wal"):
        file = pathlib.Path(str(db) + suffix)
        digest.update(file.read_bytes() if file.exists() else b"<none>")
    return digest.hexdigest()


def memory_state(memory: Memory) -> tuple:
    return (memory.t, json.dumps(memory.export(), sort_keys=True), memory.snapshots(), memory.rules(),
            sorted(memory.constraints()))


def reopened_state(db: pathlib.Path) -> tuple:
    with Memory.open(db) as memory:
        assert memory.broken() == []
        return memory_state(memory)


# -- calling an interface ---------------------------------------------------------------------------


class Crash(AssertionError):
    pass


def timed(call, *args, **kwargs):
    """``call(...)``; an hgm error is returned, not raised; anything else fails the example."""
    started = time.monotonic()
    try:
        result = call(*args, **kwargs)
    except HGMError as err:
        result = err
        # The store is healthy: a store error means the input reached it unchecked.
        assert err.category and err.category != "store", err
        for problem in err.problems:
            assert problem.category and isinstance(problem.message, str)
        err.to_json()
        str(err)
    elapsed = time.monotonic() - started
    assert elapsed < HANG, f"{call.__name__} took {elapsed:.1f} s"
    return result


def run_cli(*args: Any, healthy: bool = True) -> tuple[int, str, str]:
    """``hgm ARGS`` in process, with the streams a terminal gives: stdout encodes UTF-8
    strictly, stderr escapes what it cannot encode. Exit code in 0-3, no traceback, and with
    ``--json`` exactly one JSON document on stdout. On a ``healthy`` store, no store error
    (an input that reached the store unchecked)."""
    argv = [str(a) for a in args]
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="backslashreplace", write_through=True)
    started = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    elapsed = time.monotonic() - started
    stdout, stderr = out_bytes.getvalue().decode("utf-8"), err_bytes.getvalue().decode("utf-8")
    if os.environ.get("FUZZ_SLOW") and elapsed > 1:
        with open(os.environ["FUZZ_SLOW"], "a") as log:
            print(f"{elapsed:.2f} {argv!r}"[:600], file=log)
    assert elapsed < HANG, f"hgm {argv!r} took {elapsed:.1f} s"
    assert code in EXIT_CODES, (argv, code, stderr)
    assert "Traceback" not in stdout + stderr, (argv, stderr)
    assert not healthy or "error: store" not in stderr, (argv, stderr)
    if "--json" in argv and _parses(argv):
        doc = json.loads(stdout)  # exactly one document, once the command line has been parsed
        assert not healthy or not isinstance(doc, dict) or (doc.get("error") or {}).get("category") != "store", (argv, doc)
    return code, stdout, stderr


def _parses(argv: list[str]) -> bool:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            build_parser().parse_args(argv)
        except SystemExit:
            return False
    return True


def check_result(result: Any) -> None:
    """A query result: what it holds can be written as strict JSON."""
    if isinstance(result, HGMError):
        return
    assert result.kind in ("nodes", "count", "exists", "paths")
    json.dumps(result.to_json(), allow_nan=False)


def assert_round_trips(memory: Memory) -> None:
    """What a memory holds exports as strict UTF-8 JSON that loads back equal."""
    exported = memory.export()
    text = json.dumps(exported, allow_nan=False, ensure_ascii=False).encode("utf-8")
    assert Memory.from_document(json.loads(text)).export() == exported


# == queries ========================================================================================

QUERY_TEMPLATES = [
    "nodes.where(content = $p)", "nodes.where(status in $p)", "#$p", "#$p.children", "$ids",
    "nodes.where(content =~ $p)", "root.limit($p)", "nodes.where(x = $p).count()", "focus.descendants",
    "nodes.where(tags contains $p)", "nodes[0]", "nodes.where(amount > 1e999)", "nodes.where(amount < -1e999)",
    "nodes.where(amount > 1e308)", "current_goal.actions", "nodes.where(has(dirty)).paths()",
]
QUERY_TEXT = (
    st.sampled_from(QUERY_TEMPLATES)
    | st.lists(st.sampled_from(QUERY_TOKENS + ["$p", "$q", "1e999", "-1e999", "1e308", "9" * 5000]), max_size=12).map(" ".join)
    | st.lists(st.sampled_from(QUERY_TOKENS), max_size=12).map("".join)
    | st.text(max_size=30)
)
PARAMS = st.dictionaries(st.sampled_from(["p", "q", "ids"]) | KEYS, ANY_VALUE | NON_JSON, max_size=3)
AS_OF = st.none() | st.integers(-3, 8) | st.sampled_from(["loaded", "nope", "", "1", "²", 10**30, True, 1.5, [1]]) | HOSTILE_STRINGS


def _query_problems_placed(text: str, err: HGMError) -> None:
    for problem in err.problems:
        if problem.line is not None:
            lines = text.split("\n")
            assert 1 <= problem.line <= len(lines), (text, problem)
            assert 1 <= problem.column <= len(lines[problem.line - 1]) + 1, (text, problem)


@boundary(60)
@given(data=st.data())
def test_queries_with_any_parameters_focus_and_as_of_give_a_value_or_an_hgm_error(template, workspaces, data):
    text = data.draw(QUERY_TEXT, label="query")
    params = data.draw(st.none() | PARAMS, label="params")
    focus = data.draw(st.none() | st.sampled_from(GRAPH_IDS) | HOSTILE_STRINGS, label="focus")
    as_of = data.draw(AS_OF, label="as_of")
    with workspaces() as ws, Memory.open(ws.db) as memory:
        before = store_bytes(ws.db), memory_state(memory)
        compiled = timed(memory.compile, text)
        if isinstance(compiled, HGMError):
            _query_problems_placed(text, compiled)
            assert isinstance(timed(compile_query, text), HGMError)
        result = timed(memory.query, text, focus=focus, params=real(params), as_of=real(as_of))
        if isinstance(result, HGMError):
            _query_problems_placed(text, result)
        check_result(result)
        assert (store_bytes(ws.db), memory_state(memory)) == before


# == graph files ====================================================================================

def graph_file_text(data: st.DataObject) -> str | bytes:
    kind = data.draw(st.sampled_from(["mutated", "mutated", "mutated", "damaged", "bytes", "values"]), label="graph file")
    if kind == "bytes":
        return data.draw(st.binary(max_size=80), label="bytes")
    if kind == "values":
        return json_text(data.draw(ANY_VALUE, label="document"))
    text = json_text(mutate(GRAPH, data, ids=GRAPH_IDS, json_only=True))
    return text_damage(text, data) if kind == "damaged" else text


@boundary(40)
@given(data=st.data())
def test_any_graph_file_validates_and_loads_alike_and_a_refused_load_leaves_no_memory(workspaces, data):
    content = graph_file_text(data)
    with workspaces() as ws:
        file = write_bytes(ws.folder, "graph.json", content)
        new_db = ws.folder / "new.db"
        valid, out, _ = run_cli("validate", file, "--json")
        assert json.loads(out)["valid"] == (valid == 0)
        loaded, out, _ = run_cli("load", file, "--db", new_db, "--json")
        assert (loaded == 0) == (valid == 0), (content, out)
        if loaded != 0:
            assert not new_db.exists()  # a memory is made by its first commit
            return
        with Memory.open(new_db) as memory:
            assert memory.t == 1 and memory.broken() == []
            assert_round_trips(memory)
        # Loading the same file into a memory that already holds one is refused, untouched.
        before = store_bytes(ws.db)
        code, _, _ = run_cli("load", file, "--db", ws.db, "--json")
        assert code != 0 and store_bytes(ws.db) == before


@boundary(60)
@given(data=st.data())
def test_any_graph_document_loads_into_a_memory_or_is_an_hgm_error_that_changes_nothing(data):
    doc = mutate(GRAPH, data, ids=GRAPH_IDS)
    memory = Memory()
    result = timed(memory.load, real(doc))
    if isinstance(result, HGMError):
        assert memory.t == 0 and len(memory) == 0
        return
    assert memory.t == 1
    assert_round_trips(memory)


# == transaction files ==============================================================================

TRANSACTION = {
    "author": "fuzz",
    "reason": "change things",
    "base_t": 3,
    "ops": [
        {"op": "add_node", "id": "n1", "type": "fact", "parent": "trip", "content": "new", "order": 2},
        {"op": "update_node", "id": "a2", "set": {"status": "failed", "tags": ["y"]}, "unset": ["content"]},
        {"op": "add_edge", "from": "n1", "to": "e1", "type": "related_to"},
        {"op": "update_edge", "from": "book", "to": "a2", "type": "parent_of", "set": {"order": 5}},
        {"op": "delete_edge", "from": "a2", "to": "e1", "type": "related_to"},
        {"op": "confirm", "id": "f2"},
        {"op": "replace_branch", "id": "book", "with": [{"type": "action", "content": "redo", "edges": []}]},
        {"op": "delete_node", "id": "r1", "cascade": True},
    ],
}
TRANSACTION_IDS = GRAPH_IDS + ["n1"]


def transaction_document(data: st.DataObject) -> Any:
    ops = data.draw(st.lists(st.sampled_from(TRANSACTION["ops"]), min_size=1, max_size=4), label="ops")
    doc = dict(TRANSACTION, ops=copy.deepcopy(ops))
    if data.draw(st.booleans(), label="dry_run"):
        doc["dry_run"] = data.draw(st.sampled_from([True, False, "yes", 1, None]), label="dry_run value")
    return mutate(doc, data, ids=TRANSACTION_IDS, json_only=True) if data.draw(st.integers(0, 4), label="mutate?") else doc


@boundary(60)
@given(data=st.data())
def test_any_transaction_document_commits_or_is_an_hgm_error_that_changes_nothing_on_disk(workspaces, data):
    doc = transaction_document(data)
    with workspaces() as ws:
        with Memory.open(ws.db) as memory:
            before = store_bytes(ws.db), memory_state(memory)
            report = timed(memory.apply, real(doc))
            if isinstance(report, HGMError) or not report.committed:
                assert (store_bytes(ws.db), memory_state(memory)) == before
            else:
                assert memory.t == before[1][0] + 1
                assert_round_trips(memory)
            after = memory_state(memory)
        assert reopened_state(ws.db) == after


@boundary(30)
@given(data=st.data())
def test_any_transaction_file_applied_by_the_cli_commits_or_changes_nothing(workspaces, data):
    doc = transaction_document(data)
    kind = data.draw(st.sampled_from(["json", "json", "damaged", "bytes"]), label="file")
    text: str | bytes = json_text(doc) if kind != "bytes" else data.draw(st.binary(max_size=60), label="bytes")
    if kind == "damaged":
        text = text_damage(text, data)
    dry = data.draw(st.booleans(), label="--dry-run")
    with workspaces() as ws:
        file = write_bytes(ws.folder, "change.json", text)
        before = store_bytes(ws.db), reopened_state(ws.db)
        code, out, _ = run_cli("apply", file, "--db", ws.db, "--json", *(["--dry-run"] if dry else []))
        report = json.loads(out)
        if code != 0 or dry or not report.get("committed"):
            assert (store_bytes(ws.db), reopened_state(ws.db)) == before
        else:
            assert reopened_state(ws.db)[0] == before[1][0] + 1


# == rule files =====================================================================================

RULE_TOKENS = [
    "rule", "constraint", "propagate", "on", "add", "update", "delete", "where", "then", "mark", "as",
    "needs_review", "blocked", "because", "set", "with", "self", "each", "must", "forward", "backward",
    "both", "depth", "from", "to", "and", "or", "not", "in", "contains", "true", "false", "null",
    "fact", "action", "goal", "derived_from", "before", "parent_of", "following", "children", "parent",
    "status", "content", "checked", "r1", "c1", ":", ";", ",", "=", "!=", "<", ">", "=~", "(", ")", "[",
    "]", ".", "'done'", "'failed'", "'x'", "0", "2", "99999", "1e999", "-1", "'\\ud800'", "'(('",
    "exists(children)", "count(children) > 0", "\n", "//", "\ufeff",
]
VALID_RULE_LINES = [
    "propagate derived_from backward depth 2",
    "propagate before forward depth 3 from action to action",
    "rule r1: on update action where status = 'failed' then mark following.where(status = 'pending') as blocked because 'failed'",
    "rule r2: on add fact where content contains 'x' then set self with checked = true, level = 2",
    "rule r3: on delete action then mark parent as needs_review",
    "constraint c1: each action where status = 'done' must has(content) or true",
    "constraint c2: each goal must count(children) >= 0",
    "// a comment",
]


def rule_file_text(data: st.DataObject) -> str:
    kind = data.draw(st.sampled_from(["mutated", "mutated", "soup", "nested", "text"]), label="rule file")
    if kind == "soup":
        return " ".join(data.draw(st.lists(st.sampled_from(RULE_TOKENS), max_size=25), label="tokens"))
    if kind == "text":
        return data.draw(st.text(max_size=40), label="text")
    lines = data.draw(st.lists(st.sampled_from(VALID_RULE_LINES), min_size=1, max_size=4), label="lines")
    if kind == "nested":
        wrapper = data.draw(st.sampled_from(["not ", "(", "exists(children.where("]), label="wrapper")
        closing = {"not ": "", "(": ")", "exists(children.where(": "))"}[wrapper]
        levels = data.draw(st.sampled_from([5, 30, 70, 200, 1000]), label="levels")
        return f"rule deep: on add fact where {wrapper * levels}status = 'x'{closing * levels} then mark self as blocked"
    words = " \n ".join(lines).split(" ")
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        at = data.draw(st.integers(0, len(words)), label="at")
        edit = data.draw(st.sampled_from(["drop", "insert", "duplicate", "replace"]), label="edit")
        token = data.draw(st.sampled_from(RULE_TOKENS) | HOSTILE_STRINGS.map(lambda s: json.dumps(s).replace('"', "'")), label="token")
        if edit == "drop" and at < len(words):
            del words[at]
        elif edit == "insert":
            words.insert(at, token)
        elif edit == "duplicate" and at < len(words):
            words.insert(at, words[at])
        elif at < len(words):
            words[at] = token
    return " ".join(words)


RULE_NAMES = st.sampled_from(["default", "plan", "other"]) | HOSTILE_STRINGS


@boundary(60)
@given(data=st.data())
def test_any_rule_file_loads_or_is_an_hgm_error_and_never_poisons_the_memory(workspaces, data):
    text = rule_file_text(data)
    name = data.draw(RULE_NAMES, label="name")
    with workspaces() as ws:
        with Memory.open(ws.db) as memory:
            before = store_bytes(ws.db), memory_state(memory)
            loaded = timed(memory.load_rules, text, name=name)
            if isinstance(loaded, HGMError):
                assert (store_bytes(ws.db), memory_state(memory)) == before
            else:
                # The rules run: a change that fires triggers gives a report or an hgm error.
                timed(memory.apply, {"ops": [{"op": "add_node", "id": "nx", "type": "fact", "content": "x"},
                                             {"op": "update_node", "id": "a2", "set": {"status": "failed"}},
                                             {"op": "update_node", "id": "f1", "set": {"content": "new"}}]})
                timed(memory.apply, {"ops": [{"op": "delete_node", "id": "a1", "cascade": True}]})
            after = memory_state(memory)
        assert reopened_state(ws.db) == after  # reopens, and nothing stored is broken


@boundary(30)
@given(data=st.data())
def test_rules_check_and_load_agree_on_any_rule_file_and_a_refused_load_changes_nothing(workspaces, data):
    text = rule_file_text(data)
    with workspaces() as ws:
        file = write_bytes(ws.folder, "rules.hgmr", text)
        checked, _, _ = run_cli("rules", "check", file, "--json")
        before = store_bytes(ws.db), reopened_state(ws.db)
        loaded, _, _ = run_cli("rules", "load", file, "--db", ws.db, "--name", "fuzz", "--json")
        if checked != 0:
            assert loaded != 0
        if loaded != 0:
            assert (store_bytes(ws.db), reopened_state(ws.db)) == before
        else:
            assert reopened_state(ws.db)[3].get("fuzz") == text  # reopens without broken objects


# == JSON Lines =====================================================================================


def trajectory_lines(data: st.DataObject) -> str | bytes:
    kind = data.draw(st.sampled_from(["mutated", "mutated", "damaged", "values", "bytes"]), label="jsonl")
    if kind == "bytes":
        return data.draw(st.binary(max_size=80), label="bytes")
    count = data.draw(st.integers(1, 3), label="lines")
    lines = []
    for i in range(count):
        if kind == "values":
            lines.append(json_text(data.draw(ANY_VALUE, label="line")))
            continue
        record = dict(TRAJECTORY, id=f"t{i}")
        line = json_text(mutate(record, data, ids=["order-17", "t0", "t1"], rounds=3, json_only=True))
        lines.append(text_damage(line, data) if kind == "damaged" else line)
    return "\n".join(lines) + data.draw(st.sampled_from(["", "\n", "\n\n", "\r\n"]), label="end")


@boundary(50)
@given(data=st.data())
def test_any_trajectories_ingest_or_are_an_hgm_error_that_changes_nothing(workspaces, data):
    records = [mutate(dict(TRAJECTORY, id=f"t{i}"), data, ids=["order-17", "t0"], rounds=3)
               for i in range(data.draw(st.integers(1, 3), label="records"))]
    records = data.draw(st.sampled_from([records, [data.draw(ANY_VALUE, label="record")]]), label="which")
    skip = data.draw(st.booleans(), label="skip_invalid")
    with workspaces() as ws:
        with Memory.open(ws.db) as memory:
            before = store_bytes(ws.db), memory_state(memory)
            report = timed(memory.ingest, real(records), skip_invalid=skip)
            if isinstance(report, HGMError) or report.t is None:
                assert (store_bytes(ws.db), memory_state(memory)) == before
            else:
                assert_round_trips(memory)
            after = memory_state(memory)
        assert reopened_state(ws.db) == after


@boundary(30)
@given(data=st.data())
def test_any_jsonl_file_ingested_by_the_cli_is_stored_or_changes_nothing(workspaces, data):
    content = trajectory_lines(data)
    skip = data.draw(st.booleans(), label="--skip-invalid")
    with workspaces() as ws:
        file = write_bytes(ws.folder, "paths.jsonl", content)
        before = store_bytes(ws.db), reopened_state(ws.db)
        code, out, _ = run_cli("ingest", file, "--db", ws.db, "--json", *(["--skip-invalid"] if skip else []))
        report = json.loads(out)
        if code != 0 or report.get("t") is None:
            assert (store_bytes(ws.db), reopened_state(ws.db)) == before


# == every other command line =======================================================================

ARG = HOSTILE_STRINGS | st.text(max_size=6) | st.sampled_from(GRAPH_IDS + ["order-17", "loaded", "plan", "goals_ok", "1", "2", "3"])
QUERY_ARG = QUERY_TEXT
PARAMS_TEXT = st.builds(json_text, st.dictionaries(st.sampled_from(["p", "q", "ids"]) | KEYS, ANY_VALUE, max_size=3)) | st.sampled_from(
    ["{", "[1]", "null", '{"p": NaN}', '{"p": ' + "[" * 50000 + "]" * 50000 + "}", '{"p": ' + "9" * 5000 + "}", '{"\\ud800": 1}']
)

COMMANDS = {
    "query": lambda d: ["query", d.draw(QUERY_ARG), "--params", d.draw(PARAMS_TEXT), "--focus", d.draw(ARG), "--as-of", d.draw(ARG)],
    "explain": lambda d: ["explain", d.draw(QUERY_ARG)],
    "export": lambda d: ["export", "--as-of", d.draw(ARG)],
    "history": lambda d: ["history", d.draw(ARG)],
    "diff": lambda d: ["diff", d.draw(ARG), d.draw(ARG)],
    "revert": lambda d: ["revert", d.draw(ARG)],
    "snapshot": lambda d: ["snapshot", d.draw(ARG), *(["--t", d.draw(ARG)] if d.draw(st.booleans()) else [])],
    "snapshots": lambda d: ["snapshots"],
    "constraint add": lambda d: ["constraint", "add", d.draw(ARG), d.draw(st.sampled_from(["each ", "each action must ", ""])) + d.draw(QUERY_ARG)],
    "constraint remove": lambda d: ["constraint", "remove", d.draw(ARG)],
    "rules remove": lambda d: ["rules", "remove", d.draw(ARG)],
    "frontier": lambda d: ["frontier", d.draw(ARG), "--as-of", d.draw(ARG)],
    "stale": lambda d: ["stale"],
    "changes": lambda d: ["changes", "--since", d.draw(ARG)],
    "focus-path": lambda d: ["focus-path", d.draw(ARG)],
    "confirm": lambda d: ["confirm", d.draw(ARG), "--author", d.draw(ARG)],
    "locate": lambda d: ["locate", d.draw(ARG), "--tags", d.draw(ARG), "--steps", d.draw(ARG)],
    "paths": lambda d: ["paths", *(["--all"] if d.draw(st.booleans()) else []), *(["--metrics"] if d.draw(st.booleans()) else [])],
    "path": lambda d: ["path", d.draw(ARG)],
    "outcome": lambda d: ["outcome", d.draw(ARG), d.draw(st.sampled_from(["success", "failure"])), "--reward", d.draw(st.sampled_from(["0.5", "nan", "inf", "-1", "1e999", "2"]))],
    "rollback": lambda d: ["rollback", d.draw(ARG), d.draw(ARG)],
    "path-reset": lambda d: ["path-reset", d.draw(ARG)],
}
CHANGING = {"revert", "snapshot", "constraint add", "constraint remove", "rules remove", "confirm", "outcome", "rollback", "path-reset"}


@boundary(60)
@given(data=st.data())
def test_any_command_line_exits_0_to_3_without_a_traceback_and_a_failure_changes_nothing(workspaces, data):
    name = data.draw(st.sampled_from(sorted(COMMANDS)), label="command")
    args = COMMANDS[name](data)
    as_json = data.draw(st.booleans(), label="--json")
    with workspaces() as ws:
        before = store_bytes(ws.db), reopened_state(ws.db)
        code, out, err = run_cli(*args, "--db", ws.db, *(["--json"] if as_json else []))
        if code != 0 or name not in CHANGING:
            assert (store_bytes(ws.db), reopened_state(ws.db)) == before, (args, code, out, err)
        else:
            reopened_state(ws.db)  # reopens, nothing broken


# == REST bodies and MCP tool calls, on a SQLite memory ============================================

STEPS = st.lists(st.sampled_from(["check", "refund", {"name": "ask", "content": "why"}, {"keep": 0}, {"remove": 1}]) | ANY_VALUE, max_size=3)


def field_value(name: str, data: st.DataObject) -> Any:
    """A value for the body field ``name``: often one that fits it, else anything."""
    fitting = {
        "expr": QUERY_TEXT, "text": st.sampled_from(["refund my order", "x"]), "query": st.sampled_from(["order status"]),
        "ops": st.builds(lambda: None).flatmap(lambda _: st.data()).map(lambda d: transaction_document(d)["ops"]),
        "params": PARAMS.filter(lambda p: all(not isinstance(v, (set, bytes, complex, tuple)) and type(v).__module__ == "builtins" for v in p.values())),
        "steps": STEPS, "id": st.sampled_from(GRAPH_IDS), "path_id": st.sampled_from(["order-17", "nope"]),
        "t": st.integers(-1, 8), "base_t": st.integers(-1, 8), "as_of": AS_OF.filter(lambda v: not isinstance(v, list)),
        "name": st.sampled_from(["s1", "loaded", "9"]) | HOSTILE_STRINGS,
    }
    choice = fitting.get(name)
    if choice is not None and data.draw(st.booleans(), label=f"{name} fits?"):
        return data.draw(choice, label=name)
    return data.draw(ANY_VALUE, label=name)


REST_ROUTES = {
    "/api/v1/query": ["expr", "focus", "params", "as_of", "nodes"],
    "/api/v1/explain": ["expr"],
    "/api/v1/transactions": ["author", "reason", "base_t", "ops", "dry_run"],
    "/api/v1/confirm": ["id", "author", "reason"],
    "/api/v1/revert": ["t", "author", "reason"],
    "/api/v1/snapshots": ["name", "t"],
    "/api/v1/locate": ["text", "tags", "k"],
    "/api/v1/rewrite": ["path_id", "steps", "reason", "author"],
    "/api/v1/memory/node": ["content", "type", "level", "session_id", "parent_id", "id", "metadata", "author", "reason"],
    "/api/v1/memory/path/retrieve": ["query", "max_paths", "max_hops", "tags"],
    "/api/v1/memory/path/rewrite": ["path_id", "feedback", "steps", "session_context"],
}


@pytest.fixture(scope="module")
def served(template, tmp_path_factory):
    """A SQLite memory (a copy of the template) behind the REST app, for the whole module."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server.rest import create_app

    db = tmp_path_factory.mktemp("served") / "memory.db"
    shutil.copyfile(template, db)
    memory = Memory.open(db)
    yield memory, db, TestClient(create_app(memory), raise_server_exceptions=False)
    memory.close()


@boundary(60)
@given(data=st.data())
def test_any_rest_body_is_a_document_or_a_4xx_error_and_a_refusal_changes_nothing(served, data):
    memory, db, client = served
    route = data.draw(st.sampled_from(sorted(REST_ROUTES)), label="route")
    fields = data.draw(st.lists(st.sampled_from(REST_ROUTES[route]), unique=True), label="fields")
    body = {name: field_value(name, data) for name in fields}
    text = json_text(body)
    if data.draw(st.integers(0, 5), label="damage?") == 0:
        text = text_damage(text, data)
    before = store_bytes(db), memory_state(memory)
    started = time.monotonic()
    response = client.post(route, content=text.encode("utf-8", "surrogatepass"), headers={"content-type": "application/json"})
    assert time.monotonic() - started < HANG
    assert response.status_code < 500, response.text
    doc = response.json()
    if response.status_code >= 400:
        error = doc["error"]
        assert error["category"] and error["category"] != "store", error
        assert error["request_id"] == response.headers["x-request-id"]
        assert (store_bytes(db), memory_state(memory)) == before, (route, body, doc)


@boundary(60)
@given(data=st.data())
def test_any_mcp_tool_call_is_a_result_or_an_error_with_a_category_and_a_refusal_changes_nothing(served, data):
    from hgm_engine.server.mcp_server import TOOLS, call_tool
    from hgm_engine.server.service import MemoryService

    memory, db, _ = served
    tool = data.draw(st.sampled_from(TOOLS), label="tool")
    names = sorted(tool.input_schema.get("properties", {})) + ["bogus"]
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True), label="arguments")
    arguments = real({name: field_value(name, data) for name in chosen})
    before = store_bytes(db), memory_state(memory)
    started = time.monotonic()
    doc, failed = call_tool(MemoryService(memory), tool.name, arguments)
    assert time.monotonic() - started < HANG
    json.dumps(doc, default=str)
    if failed:
        assert doc["error"]["category"] not in (None, "internal", "store"), doc
        assert (store_bytes(db), memory_state(memory)) == before, (tool.name, arguments, doc)




# == known leftovers of issue 12: each failed before its fix ======================================


def test_a_snapshot_name_with_a_lone_surrogate_or_a_control_character_is_an_invalid_value(workspaces, capsys):
    with workspaces() as ws:
        with Memory.open(ws.db) as memory:
            before = store_bytes(ws.db), memory_state(memory)
            for name in ["\ud800", "a\x00b", "a\x1b[2J", "tab\there", "\x7f"]:
                with pytest.raises(HGMError) as caught:
                    memory.snapshot(name)
                assert caught.value.category == "invalid-value" and caught.value.problems[0].where == "name", name
            assert (store_bytes(ws.db), memory_state(memory)) == before
        code, out, _ = run_cli("snapshot", "\udcff", "--db", ws.db, "--json")  # a byte of argv that is not UTF-8
        assert code == 1 and json.loads(out)["error"]["category"] == "invalid-value"


def test_a_snapshot_name_with_a_lone_surrogate_is_refused_on_postgresql_too(postgres_url):
    with Memory.open(postgres_url) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        for name in ["\ud800", "a\x00b"]:
            with pytest.raises(HGMError) as caught:
                memory.snapshot(name)
            assert caught.value.category == "invalid-value"
        assert memory.snapshots() == {}


@pytest.mark.parametrize(
    "value,place",
    [("\ud800", ""), (float("nan"), ""), ([1, float("inf")], " (at $p[1])"), (deep(65), ""), (10**5000, ""),
     ({"k": "\udfff"}, " (at $p.k)")],
    ids=["surrogate", "nan", "infinity-inside", "too-deep", "5000-digits", "surrogate-inside"],
)
def test_query_parameters_from_python_follow_the_value_rules(value, place):
    memory = Memory.from_document(GRAPH)
    with pytest.raises(HGMError) as caught:
        memory.query("nodes.where(content = $p)", params={"p": value})
    err = caught.value
    assert err.category == "invalid-argument" and (err.line, err.column) == (1, 23)
    assert err.message.startswith("parameter $p: ") and err.message.endswith(place)


def test_query_parameters_over_rest_and_mcp_follow_the_value_rules():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server.mcp_server import call_tool
    from hgm_engine.server.rest import create_app
    from hgm_engine.server.service import MemoryService

    memory = Memory.from_document(GRAPH)
    client = TestClient(create_app(memory), raise_server_exceptions=False)
    response = client.post("/api/v1/query", json={"expr": "nodes.where(content = $p)", "params": {"p": deep(100)}})
    assert response.status_code == 400 and response.json()["error"]["category"] == "invalid-argument"
    doc, failed = call_tool(MemoryService(memory), "query", {"expr": "nodes.where(content = $p)", "params": {"p": "\ud800"}})
    assert failed and doc["error"]["category"] == "invalid-argument"


@pytest.mark.parametrize("route", ["/api/v1/transactions", "/api/v1/snapshots", "/api/v1/query"])
def test_a_rest_body_nested_50000_deep_is_a_400_invalid_json(route):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server.rest import create_app

    memory = Memory.from_document(GRAPH)
    client = TestClient(create_app(memory), raise_server_exceptions=False)
    body = '{"name": ' + "[" * 50_000 + "]" * 50_000 + "}"
    response = client.post(route, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["category"] == "invalid-json" and memory.t == 1


MALFORMED_MARKS = [
    {"dirty": "blocked", "dirty_marks": 5},
    {"dirty": "blocked", "dirty_marks": [5]},
    {"dirty": "blocked", "dirty_marks": [{"state": "blocked"}]},
    {"dirty": ["x"], "dirty_marks": {"a": 1}},
    {"dirty": 7},
    {"dirty": "needs_review", "dirty_marks": [{"state": "x", "rule": 3, "because": "ab", "t": "q"},
                                               {"state": "needs_review", "rule": "r", "because": ["f1"], "t": 1}]},
]


def _write_attrs(db: pathlib.Path, node_id: str, attrs: dict) -> None:
    """Set a node's attributes straight in the SQLite store (with a matching row checksum), as
    an hgm from before the value rules could have written them."""
    import sqlite3

    from hgm_engine.store.sqlite import row_crc

    connection = sqlite3.connect(db)
    try:
        node_type, seq = connection.execute("SELECT type, seq FROM nodes WHERE id = ?", (node_id,)).fetchone()
        text = json.dumps(attrs)
        connection.execute("UPDATE nodes SET attrs = ?, crc = ? WHERE id = ?", (text, row_crc(node_id, node_type, text, seq), node_id))
        connection.commit()
    finally:
        connection.close()


@pytest.mark.parametrize("marks", MALFORMED_MARKS, ids=["marks-5", "mark-5", "mark-without-rule", "wrong-types", "dirty-7", "one-good-one-bad"])
def test_stale_reads_malformed_marks_stored_before_the_value_rules(workspaces, marks):
    with workspaces() as ws:
        _write_attrs(ws.db, "a2", {"content": "reserve", "status": "pending", **marks})
        with Memory.open(ws.db) as memory:
            entry = next(e for e in memory.stale() if e["id"] == "a2")
        assert entry["state"] in ("needs_review", "blocked", None) and entry["problems"]
        for mark in entry["marks"]:
            assert isinstance(mark["rule"], str) and isinstance(mark["t"], int)
        for as_json in (False, True):
            code, out, err = run_cli("stale", "--db", ws.db, *(["--json"] if as_json else []))
            assert code == 0 and "a2" in out, err


@pytest.mark.parametrize("marks", MALFORMED_MARKS, ids=["marks-5", "mark-5", "mark-without-rule", "wrong-types", "dirty-7", "one-good-one-bad"])
def test_a_rule_marking_a_node_with_malformed_stored_marks_commits_or_is_an_hgm_error(workspaces, marks):
    with workspaces() as ws:
        _write_attrs(ws.db, "a2", {"content": "reserve", "status": "pending", **marks})
        with Memory.open(ws.db) as memory:
            timed(memory.apply, {"ops": [{"op": "update_node", "id": "a1", "set": {"status": "failed"}}]})
            timed(memory.apply, {"ops": [{"op": "confirm", "id": "a2"}]})
            memory.stale()


@pytest.mark.parametrize("text", ["1e999", "-1e999", "[1, 2e400]", "9" * 400 + ".5"])
def test_a_number_literal_too_large_for_a_float_is_limit_exceeded_at_its_place(text):
    query = f"nodes.where(amount = {text})"
    with pytest.raises(HGMError) as caught:
        compile_query(query)
    err = caught.value
    assert err.category == "limit-exceeded" and err.line == 1
    assert err.column == query.index(text.lstrip("[").split(", ")[-1].rstrip("]")) + 1


def test_a_number_literal_too_large_for_a_float_in_a_rule_file_is_refused_at_its_line():
    memory = Memory()
    with pytest.raises(HGMError) as caught:
        memory.load_rules("propagate derived_from backward\nrule r: on add fact where amount > 1e999 then mark self as blocked")
    assert caught.value.category == "limit-exceeded" and caught.value.line == 2 and memory.rules() == {}


def test_a_failed_first_load_into_postgresql_leaves_no_memory_as_in_sqlite(postgres_url, tmp_path):
    bad = write_bytes(tmp_path, "bad.json", json.dumps({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "nope"}], "edges": []}))
    code, _, _ = run_cli("load", bad, "--db", postgres_url, "--json")
    assert code == 1
    code, out, _ = run_cli("query", "root", "--db", postgres_url, "--json", healthy=False)
    assert code == 1 and "no memory at" in json.loads(out)["error"]["message"]
    from hgm_engine.store import open_store

    with pytest.raises(HGMError) as caught:
        open_store(postgres_url, create=False)
    assert caught.value.category == "store"
    good = write_bytes(tmp_path, "good.json", json.dumps(GRAPH))
    assert run_cli("load", good, "--db", postgres_url, "--json")[0] == 0
    code, out, _ = run_cli("query", "root", "--db", postgres_url, "--json")
    assert code == 0 and json.loads(out)["ids"] == ["trip"]


def test_a_postgresql_memory_from_before_the_complete_row_still_opens(postgres_url):
    import psycopg

    from hgm_engine.store import open_store

    with Memory.open(postgres_url) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("DELETE FROM hgm_meta WHERE key = 'complete'")
    with Memory(store=open_store(postgres_url, create=False)) as memory:
        assert memory.query("root").ids == ["g"]


# == crashes the fuzz found: one regression test each =============================================


def test_an_mcp_tool_argument_with_an_integer_of_4301_digits_is_an_invalid_argument():
    # jsonschema's message for the wrong type printed the integer, which Python refuses.
    from hgm_engine.server.mcp_server import call_tool
    from hgm_engine.server.service import MemoryService

    doc, failed = call_tool(MemoryService(Memory()), "query", {"expr": "root", "as_of": [10**4301]})
    assert failed and doc["error"]["category"] == "invalid-argument"
    assert doc["error"]["where"] == "as_of[0]" and "4300 digits" in doc["error"]["message"]


@pytest.mark.parametrize("as_of", ["²", "-٣", "9" * 5000, 10**5000, True, 1.5, [1]], ids=["superscript", "arabic-digit", "5000-digit-text", "5000-digit-int", "bool", "float", "list"])
def test_an_as_of_that_is_no_t_and_no_snapshot_name_is_a_request_error(as_of):
    # "²".isdigit() is true and int("²") fails; int() refuses 5,000 digits; True was t=1.
    memory = Memory.from_document(GRAPH)
    with pytest.raises(HGMError) as caught:
        memory.query("root", as_of=as_of)
    assert caught.value.category in ("invalid-argument", "unknown-snapshot")
    str(caught.value)


@pytest.mark.parametrize("text", ["²", "9" * 5000])
def test_a_t_argument_of_the_cli_that_is_no_number_is_an_error_not_a_traceback(workspaces, text):
    with workspaces() as ws:
        for args in (["query", "root", "--as-of", text], ["diff", text, "1"], ["changes", "--since", text]):
            code, out, _ = run_cli(*args, "--db", ws.db, "--json")
            assert code == 1 and json.loads(out)["error"]["category"] in ("invalid-argument", "unknown-snapshot"), args
        code, _, err = run_cli("export", "--as-of", text, "--db", ws.db)
        assert code == 1 and "error: " in err


@pytest.mark.parametrize("version", ["²", "v²", "9" * 5000])
def test_a_rollback_to_a_version_that_is_no_number_is_unknown_version(workspaces, version):
    with workspaces() as ws:
        before = store_bytes(ws.db)
        code, out, _ = run_cli("rollback", "order-17", version, "--db", ws.db, "--json")
        assert code == 1 and json.loads(out)["error"]["category"] == "unknown-version"
        with Memory.open(ws.db) as memory:
            with pytest.raises(HGMError) as caught:
                memory.rollback_path("order-17", version)
            assert caught.value.category == "unknown-version"
        assert store_bytes(ws.db) == before
