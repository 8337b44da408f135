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

The suite runs a few dozen examples per boundary; for a long run set ``HYPOTHESIS_PROFILE=long``
(:mod:`hgm_engine.testing.profiles`), which multiplies every count by 50::

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
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hgm_engine import HGMError, Memory, compile as compile_query
from hgm_engine.cli import build_parser, main
from hgm_engine.testing import examples

from tests.test_fuzz import TOKENS as QUERY_TOKENS

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

HANG = 30.0  # seconds: no single call may take longer (the default limits stop a query far sooner)
EXIT_CODES = {0, 1, 2, 3}


def boundary(count: int, **kwargs: Any) -> settings:
    """``count`` examples per run in the suite (profile ``ci``), fifty times as many under
    ``HYPOTHESIS_PROFILE=long`` (:func:`hgm_engine.testing.examples`)."""
    return settings(max_examples=examples(count), deadline=None, suppress_health_check=list(HealthCheck), **kwargs)


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


def rebuild(value: Any, leaf=lambda item: item) -> Any:
    """A copy of ``value``'s lists and dicts with ``leaf(item)`` for every other item, built
    without recursion: values here are nested far deeper than Python's recursion limit."""
    def fresh(item: Any) -> Any:
        return {} if isinstance(item, dict) else [] if isinstance(item, list) else leaf(item)

    top = fresh(value)
    stack = [(value, top)]
    while stack:
        source, target = stack.pop()
        if isinstance(source, dict):
            for key, item in source.items():
                target[key] = fresh(item)
                stack.append((item, target[key]))
        elif isinstance(source, list):
            for item in source:
                target.append(fresh(item))
                stack.append((item, target[-1]))
    return top


def real(value: Any) -> Any:
    """``value`` with every :class:`Big` made a real integer."""
    return rebuild(value, lambda item: item.value if isinstance(item, Big) else item)


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
        return item

    text = json.dumps(rebuild(value, fit))
    for marker, digits in markers.items():
        text = text.replace(f'"{marker}"', digits)
    return text


def write_bytes(folder: pathlib.Path, name: str, data: str | bytes) -> pathlib.Path:
    path = folder / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return path


# -- structure-aware mutation of a valid document --------------------------------------------------


def _places(value: Any) -> list[tuple]:
    """The path of every value in ``value`` (keys and indexes), the whole first."""
    found, stack = [], [((), value)]
    while stack:
        path, item = stack.pop()
        found.append(path)
        if isinstance(item, dict):
            stack.extend((path + (key,), child) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((path + (index,), child) for index, child in enumerate(item))
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
    doc = rebuild(doc)
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
            parent.insert(last, rebuild(target))
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
        # Into a memory that holds nodes already, the file's nodes are added as one commit,
        # or nothing changes.
        before = store_bytes(ws.db), reopened_state(ws.db)
        code, _, _ = run_cli("load", file, "--db", ws.db, "--json")
        if code != 0:
            assert (store_bytes(ws.db), reopened_state(ws.db)) == before
        else:
            assert reopened_state(ws.db)[0] == before[1][0] + 1


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
    text: str | bytes = rule_file_text(data)
    if data.draw(st.integers(0, 5), label="as bytes?") == 0:  # bytes that may not be UTF-8
        text = data.draw(st.sampled_from([b"propagate derived_from backward // caf\xe9", b"\xff\xfe"]) | st.binary(max_size=40), label="bytes")
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
            assert reopened_state(ws.db)[3].get("fuzz") == (text.decode("utf-8") if isinstance(text, bytes) else text)  # reopens without broken objects


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
NUMBER_ARG = st.sampled_from(["0", "1", "2", "-1", "²", "١", "1e3", "x", "9" * 30, "9" * 5000]) | ARG
PARAMS_TEXT = st.builds(json_text, st.dictionaries(st.sampled_from(["p", "q", "ids"]) | KEYS, ANY_VALUE, max_size=3)) | st.sampled_from(
    ["{", "[1]", "null", '{"p": NaN}', '{"p": ' + "[" * 50000 + "]" * 50000 + "}", '{"p": ' + "9" * 5000 + "}", '{"\\ud800": 1}']
)

COMMANDS = {
    "query": lambda d: ["query", d.draw(QUERY_ARG), "--params", d.draw(PARAMS_TEXT), "--focus", d.draw(ARG), "--as-of", d.draw(ARG)],
    "explain": lambda d: ["explain", d.draw(QUERY_ARG)],
    "export": lambda d: ["export", "--as-of", d.draw(ARG)],
    "history": lambda d: ["history", d.draw(ARG), *(["--since", d.draw(ARG)] if d.draw(st.booleans()) else []),
                          *(["--last", d.draw(NUMBER_ARG)] if d.draw(st.booleans()) else [])],
    "show": lambda d: ["show", "--format", d.draw(st.sampled_from(["tree", "mermaid", "dot", "html"])),
                       *(["--as-of", d.draw(ARG)] if d.draw(st.booleans()) else []),
                       *(["--root", d.draw(ARG)] if d.draw(st.booleans()) else []),
                       *(["--depth", d.draw(NUMBER_ARG)] if d.draw(st.booleans()) else []),
                       *(["--highlight", d.draw(QUERY_ARG)] if d.draw(st.booleans()) else []),
                       *(["--max-nodes", d.draw(NUMBER_ARG)] if d.draw(st.booleans()) else [])],
    "constraint list": lambda d: ["constraint", "list"],
    "rules list": lambda d: ["rules", "list"],
    "diff": lambda d: ["diff", d.draw(ARG), d.draw(ARG)],
    "revert": lambda d: ["revert", d.draw(ARG)],
    "snapshot": lambda d: ["snapshot", d.draw(ARG), *(["--t", d.draw(ARG)] if d.draw(st.booleans()) else [])],
    "snapshots": lambda d: ["snapshots"],
    "constraint add": lambda d: ["constraint", "add", d.draw(ARG), d.draw(st.sampled_from(["each ", "each action must ", ""])) + d.draw(QUERY_ARG)],
    "constraint remove": lambda d: ["constraint", "remove", d.draw(ARG)],
    "rules remove": lambda d: ["rules", "remove", d.draw(ARG)],
    "frontier": lambda d: ["frontier", d.draw(ARG), "--as-of", d.draw(ARG)],
    "stale": lambda d: ["stale", *(["--as-of", d.draw(ARG)] if d.draw(st.booleans()) else [])],
    "changes": lambda d: ["changes", *d.draw(st.sampled_from([["--since"], []])), d.draw(ARG)],
    "focus-path": lambda d: ["focus-path", d.draw(ARG), *(["--as-of", d.draw(ARG)] if d.draw(st.booleans()) else [])],
    "confirm": lambda d: ["confirm", d.draw(ARG), "--author", d.draw(ARG)],
    "locate": lambda d: ["locate", d.draw(ARG), "--tags", d.draw(ARG), "--steps", d.draw(ARG)],
    "paths": lambda d: ["paths", *(["--all"] if d.draw(st.booleans()) else []), *(["--metrics"] if d.draw(st.booleans()) else [])],
    "path": lambda d: ["path", d.draw(ARG)],
    "outcome": lambda d: ["outcome", d.draw(ARG), d.draw(st.sampled_from(["success", "failure"])), "--reward", d.draw(st.sampled_from(["0.5", "nan", "inf", "-1", "1e999", "2"]))],
    "rollback": lambda d: ["rollback", d.draw(ARG), d.draw(ARG)],
    "path-reset": lambda d: ["path-reset", d.draw(ARG)],
    "rewrite-path": lambda d: ["rewrite-path", d.draw(st.just("order-17") | ARG), "--reason", d.draw(ARG),
                               "--steps", InputFile(d.draw(st.builds(json_text, STEPS) | st.binary(max_size=20)))],
}
CHANGING = {"revert", "snapshot", "constraint add", "constraint remove", "rules remove", "confirm", "outcome", "rollback",
            "path-reset", "rewrite-path"}


class InputFile:
    """A file argument: its content, written to the example's folder when the command runs."""

    def __init__(self, content: str | bytes):
        self.content = content

    def __repr__(self) -> str:
        return f"InputFile({self.content!r:.200})"


@boundary(60)
@given(data=st.data())
def test_any_command_line_exits_0_to_3_without_a_traceback_and_a_failure_changes_nothing(workspaces, data):
    name = data.draw(st.sampled_from(sorted(COMMANDS)), label="command")
    args = COMMANDS[name](data)
    as_json = data.draw(st.booleans(), label="--json")
    with workspaces() as ws:
        args = [write_bytes(ws.folder, "input.json", a.content) if isinstance(a, InputFile) else a for a in args]
        before = store_bytes(ws.db), reopened_state(ws.db)
        code, out, err = run_cli(*args, "--db", ws.db, *(["--json"] if as_json else []))
        event(f"hgm {name}: exit {code}")
        if code != 0 or name not in CHANGING:
            assert (store_bytes(ws.db), reopened_state(ws.db)) == before, (args, code, out, err)
        else:
            reopened_state(ws.db)  # reopens, nothing broken


# == REST bodies and MCP tool calls, on a SQLite memory ============================================

STEPS = st.lists(st.sampled_from(["check", "refund", {"name": "ask", "content": "why"}, {"keep": 0}, {"remove": 1}]) | ANY_VALUE, max_size=3)


def field_value(name: str, data: st.DataObject) -> Any:
    """A value for the body or tool field ``name``: often one that fits it, else anything."""
    if not data.draw(st.booleans(), label=f"{name} fits?"):
        return data.draw(ANY_VALUE, label=name)
    if name == "ops":  # the ops of a transaction document, which a mutation may have made anything
        doc = transaction_document(data)
        return doc.get("ops") if isinstance(doc, dict) else doc
    if name == "graph":
        return mutate(GRAPH, data, ids=GRAPH_IDS, json_only=True) if data.draw(st.booleans(), label="mutated") else GRAPH
    if name in ("trajectories", "records"):
        return [mutate(dict(TRAJECTORY, id=f"t{i}"), data, ids=["order-17", "t0"], rounds=2, json_only=True)
                for i in range(data.draw(st.integers(0, 2), label="trajectories"))]
    if name == "text":
        return data.draw(st.sampled_from(["refund my order", "x", "each action must has(content)"]), label="text") if data.draw(
            st.booleans(), label="plain text") else rule_file_text(data)
    fitting = {
        "expr": QUERY_TEXT, "query": st.sampled_from(["order status"]),
        "params": st.dictionaries(st.sampled_from(["p", "q", "ids"]) | KEYS, ANY_VALUE, max_size=3),  # JSON: no sets, objects, tuple keys
        "steps": STEPS, "id": st.sampled_from(GRAPH_IDS), "path_id": st.sampled_from(["order-17", "nope"]),
        "t": st.integers(-1, 8), "base_t": st.integers(-1, 8), "as_of": AS_OF.filter(lambda v: not isinstance(v, list)),
        "name": st.sampled_from(["s1", "loaded", "9", "plan", "goals_ok"]) | HOSTILE_STRINGS,
        "nodes": st.lists(st.sampled_from(GRAPH_IDS) | HOSTILE_STRINGS, max_size=3), "version": st.integers(-1, 4) | HOSTILE_STRINGS,
        "outcome": st.sampled_from(["success", "failure", "partial"]) | HOSTILE_STRINGS,
        "reward": st.floats(allow_nan=True, allow_infinity=True) | BIG_NUMBERS, "feedback": st.sampled_from(["the refund failed"]),
        "since": st.integers(-1, 8) | HOSTILE_STRINGS, "limit": st.integers(-1, 5), "focus": st.sampled_from(GRAPH_IDS) | HOSTILE_STRINGS,
    }
    return data.draw(fitting.get(name, ANY_VALUE), label=name)


def rest_routes(app) -> list[tuple[str, str, list[str], list[str]]]:
    """Every operation of the app's OpenAPI document: (method, path, its path and query
    parameters, its body's fields), so that a new route is fuzzed without being listed here."""
    document = app.openapi()
    schemas = document["components"]["schemas"]
    routes = []
    for path, operations in sorted(document["paths"].items()):
        for method, operation in sorted(operations.items()):
            parameters = [parameter["name"] for parameter in operation.get("parameters", [])]
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            fields = sorted(schemas[body["$ref"].rsplit("/", 1)[-1]].get("properties", {})) if "$ref" in body else []
            routes.append((method.upper(), path, parameters, fields))
    return routes


# The LLM routes may answer 502/503 when no model answers (none is configured here), and the
# planner's step 501 when no planner package is installed.
UNAVAILABLE = {502: {"model-unavailable", "invalid-model-answer"}, 503: {"model-unavailable", "invalid-model-answer"},
               501: {"missing-package"}}
QUERY_VALUE = st.sampled_from(["0", "1", "2", "-1", "true", "false", "loaded", "nope", "g", "trip", "order-17", "9" * 5000]) | ARG


def query_string(values: dict[str, str]) -> str:
    """``values`` as a URL query, each percent-encoded from its UTF-8 bytes (a lone surrogate
    as the three bytes CESU would write: not valid UTF-8)."""
    from urllib.parse import quote

    return "&".join(f"{quote(k, safe='')}={quote(v.encode('utf-8', 'surrogatepass'), safe='')}" for k, v in values.items())


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


@boundary(80)
@given(data=st.data())
def test_any_rest_request_is_a_document_or_a_4xx_error_and_a_refusal_changes_nothing(served, data):
    memory, db, client = served
    method, path, parameters, fields = data.draw(st.sampled_from(rest_routes(client.app)), label="route")
    chosen = data.draw(st.lists(st.sampled_from(parameters), unique=True), label="parameters") if parameters else []
    values = {name: data.draw(QUERY_VALUE, label=name) for name in chosen}
    url = path
    for name in [n for n in parameters if "{" + n + "}" in path]:
        url = url.replace("{" + name + "}", query_string({"": values.pop(name, data.draw(QUERY_VALUE, label=name))})[1:] or "x")
    if values:
        url += "?" + query_string(values)
    content = None
    if method in ("POST", "PUT", "PATCH"):
        names = data.draw(st.lists(st.sampled_from(fields + ["bogus"]), unique=True), label="fields")
        body = {name: field_value(name, data) for name in names}
        if data.draw(st.integers(0, 9), label="not an object?") == 0:
            body = data.draw(ANY_VALUE, label="body")
        text = json_text(body)
        if data.draw(st.integers(0, 5), label="damage?") == 0:
            text = text_damage(text, data)
        content = text.encode("utf-8", "surrogatepass")
    before = store_bytes(db), memory_state(memory)
    started = time.monotonic()
    response = client.request(method, url, content=content, headers={"content-type": "application/json"})
    assert time.monotonic() - started < HANG
    event(f"{method} {path}: {response.status_code // 100}xx")
    doc = response.json()
    if response.status_code >= 500:
        assert doc["error"]["category"] in UNAVAILABLE.get(response.status_code, ()), (method, url, response.text)
    if response.status_code >= 400:
        error = doc["error"]
        assert error["category"] and error["category"] != "store", error
        assert error["request_id"] == response.headers["x-request-id"]
        assert (store_bytes(db), memory_state(memory)) == before, (method, url, content, doc)


@boundary(60)
@given(data=st.data())
def test_any_mcp_tool_call_is_a_result_or_an_error_with_a_category_and_a_refusal_changes_nothing(served, data):
    from hgm_engine.server.mcp import TOOLS, call_tool
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
    event(f"tool {tool.name}: {'error' if failed else 'result'}")
    json.dumps(doc, default=str)
    if failed:
        assert doc["error"]["category"] not in (None, "internal", "store"), doc
        assert (store_bytes(db), memory_state(memory)) == before, (tool.name, arguments, doc)


MCP_MESSAGE = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "query", "arguments": {"expr": "root.children", "params": {"p": 1}}}}


def mcp_line(data: st.DataObject) -> str:
    kind = data.draw(st.sampled_from(["mutated", "mutated", "damaged", "value", "text"]), label="line")
    if kind == "text":
        return data.draw(st.text(max_size=40), label="text")
    if kind == "value":
        return json_text(data.draw(ANY_VALUE, label="value"))
    line = json_text(mutate(MCP_MESSAGE, data, ids=["2.0", "tools/call", "tools/list", "query"], json_only=True))
    return text_damage(line, data) if kind == "damaged" else line


@boundary(80)
@given(data=st.data())
def test_any_mcp_line_is_a_message_for_the_sdk_or_is_answered_with_a_json_rpc_error(data):
    import mcp_types

    from hgm_engine.server.mcp import INVALID_REQUEST, PARSE_ERROR, line_error

    line = mcp_line(data).replace("\n", " ")
    error = timed(line_error, line)
    if error is None:  # the SDK takes it, and a request keeps its id
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        event(f"line: a {type(message).__name__}")
    else:
        code, text, id_ = error
        event(f"line: error {code}")
        assert code in (PARSE_ERROR, INVALID_REQUEST) and isinstance(text, str) and text
        assert id_ is None or (isinstance(id_, (str, int)) and not isinstance(id_, bool))
        answer = mcp_types.JSONRPCError(jsonrpc="2.0", id=id_, error=mcp_types.ErrorData(code=code, message=text))
        json.loads(answer.model_dump_json())  # the answer can be written


RESOURCE_URI = st.sampled_from(["hgm://health", "hgm://stale", "hgm://export", "hgm://paths/metrics", "hgm://nope", "hgm://", ""]) | st.builds(
    lambda prefix, rest: prefix + rest,
    st.sampled_from(["hgm://nodes/", "hgm://history/", "hgm://paths/", "hgm://nodes", "http://"]),
    st.sampled_from(GRAPH_IDS + ["order-17", "%ff", "%ED%A0%80", "%00", "a/b", "9" * 5000]) | HOSTILE_STRINGS | st.text(max_size=6),
)


@boundary(40)
@given(data=st.data())
def test_any_mcp_resource_or_prompt_read_is_a_document_or_an_error_and_changes_nothing(served, data):
    from hgm_engine.server.mcp import PROMPTS, get_prompt, read_resource
    from hgm_engine.server.service import MemoryService

    memory, db, _ = served
    before = store_bytes(db), memory_state(memory)
    uri = data.draw(RESOURCE_URI, label="uri")
    doc, failed = timed(read_resource, MemoryService(memory), uri)
    if doc is not None:
        json.dumps(doc, default=str)
        assert not failed or doc["error"]["category"] not in (None, "internal", "store"), doc
    name = data.draw(st.sampled_from([p.name for p in PROMPTS] + ["nope"]) | HOSTILE_STRINGS, label="prompt")
    arguments = data.draw(st.none() | st.dictionaries(st.sampled_from(["goal", "path_id", "feedback"]) | KEYS,
                                                      HOSTILE_STRINGS | st.text(max_size=5) | st.just("{goal}"), max_size=3), label="prompt arguments")
    try:
        found = get_prompt(name, arguments)
    except ValueError as err:  # a required argument missing: the server answers -32602
        assert "needs the argument" in str(err)
    else:
        assert found is None or all(isinstance(part, str) for part in found)
    assert (store_bytes(db), memory_state(memory)) == before




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

    from hgm_engine.server.mcp import call_tool
    from hgm_engine.server.rest import create_app
    from hgm_engine.server.service import MemoryService

    memory = Memory.from_document(GRAPH)
    client = TestClient(create_app(memory), raise_server_exceptions=False)
    response = client.post("/api/v1/query", json={"expr": "nodes.where(content = $p)", "params": {"p": deep(100)}})
    assert response.status_code == 400 and response.json()["error"]["category"] == "invalid-argument"
    doc, failed = call_tool(MemoryService(memory), "query", {"expr": "nodes.where(content = $p)", "params": {"p": "\ud800"}})
    assert failed and doc["error"]["category"] == "invalid-argument"


UNREADABLE_BODIES = {
    "50k-deep-in-a-field": '{"name": ' + "[" * 50_000 + "]" * 50_000 + "}",
    "50k-deep": "[" * 50_000 + "]" * 50_000,
    "5000-digits": '{"expr": ' + "9" * 5000 + "}",
    "not-utf-8": b'{"expr": "\xff"}',
}


@pytest.mark.parametrize("body", UNREADABLE_BODIES.values(), ids=UNREADABLE_BODIES.keys())
def test_a_rest_body_the_json_parser_cannot_read_is_a_400_invalid_json_on_every_post_route(body):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server.rest import create_app

    memory = Memory.from_document(GRAPH)
    app = create_app(memory)
    client = TestClient(app, raise_server_exceptions=False)
    routes = [route.path for route in app.routes if "POST" in (getattr(route, "methods", None) or ())]
    assert {"/api/v1/query", "/api/v1/transactions", "/api/v1/load", "/api/v1/rules"} <= set(routes)
    for route in routes:
        response = client.post(route, content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400, (route, response.text)
        assert response.json()["error"]["category"] == "invalid-json", route
    assert memory.t == 1


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
    from hgm_engine.server.mcp import call_tool
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
            code, out, err = run_cli(*args, "--db", ws.db, "--json")
            assert code == 1, args
            if out:  # refused by the memory
                assert json.loads(out)["error"]["category"] in ("invalid-argument", "unknown-snapshot"), args
            else:  # refused by the argument parser ('²' is no t): a usage message
                assert "digits 0-9" in err, args
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


# == found by the long run of this fuzz: each failed before its fix ===============================

UNSTORABLE_NAMES = ["\ud800", "a\udfffb", "a\x00b", "a\x1b[2J", "tab\there"]


@pytest.mark.parametrize("name", UNSTORABLE_NAMES)
def test_a_rule_set_name_no_store_can_hold_is_an_invalid_value_that_changes_nothing(workspaces, name):
    with workspaces() as ws:
        with Memory.open(ws.db) as memory:
            before = store_bytes(ws.db), memory_state(memory)
            with pytest.raises(HGMError) as caught:
                memory.load_rules("propagate derived_from backward", name=name)
            assert (caught.value.category, caught.value.problems[0].where) == ("invalid-value", "name")
            assert (store_bytes(ws.db), memory_state(memory)) == before


@pytest.mark.parametrize("name", UNSTORABLE_NAMES)
def test_a_constraint_name_no_store_can_hold_is_an_invalid_value_that_changes_nothing(workspaces, name):
    with workspaces() as ws:
        with Memory.open(ws.db) as memory:
            before = store_bytes(ws.db), memory_state(memory)
            with pytest.raises(HGMError) as caught:
                memory.add_constraint(name, "each goal must true")
            assert (caught.value.category, caught.value.problems[0].where) == ("invalid-value", "name")
            assert (store_bytes(ws.db), memory_state(memory)) == before


@pytest.mark.parametrize(
    "text,line,column",
    [("// \ud800\npropagate derived_from backward", 1, 4), ("propagate derived_from backward\n// a\x00b", 2, 5),
     ("rule r: on add fact where content = 'a\udcff' then mark self as blocked", 1, 39)],
    ids=["surrogate-in-a-comment", "nul-in-a-comment", "surrogate-in-a-string"],
)
def test_a_rule_file_holding_a_character_no_store_can_hold_is_an_invalid_value_at_its_place(workspaces, text, line, column):
    with workspaces() as ws:
        file = write_bytes(ws.folder, "rules.hgmr", text)
        code, out, _ = run_cli("rules", "check", file, "--json")
        # In a file a lone surrogate is bytes that are not UTF-8: the file cannot be read.
        assert code != 0 and json.loads(out)["error"]["category"] == ("invalid-value" if "\x00" in text else "io")
        with Memory.open(ws.db) as memory:
            before = store_bytes(ws.db), memory_state(memory)
            with pytest.raises(HGMError) as caught:
                memory.load_rules(text, name="bad")
            err = caught.value
            assert (err.category, err.line, err.column) == ("invalid-value", line, column), err
            assert (store_bytes(ws.db), memory_state(memory)) == before


@pytest.mark.parametrize("text,column", [("each goal must content != '\ud800'", 28), ("each goal must content != 'a\x00'", 29)])
def test_a_constraint_text_holding_a_character_no_store_can_hold_is_an_invalid_value_at_its_place(workspaces, text, column):
    with workspaces() as ws:
        with Memory.open(ws.db) as memory:
            before = store_bytes(ws.db), memory_state(memory)
            with pytest.raises(HGMError) as caught:
                memory.add_constraint("c", text)
            assert (caught.value.category, caught.value.line, caught.value.column) == ("invalid-value", 1, column)
            assert (store_bytes(ws.db), memory_state(memory)) == before


@pytest.mark.parametrize(
    "effect,literal",
    [("set self with checked = '\\ud800'", "'"), ("set self with n = [1, '\\udfff']", "["),
     ("mark self as blocked because 'a\\ud83d'", "'a")],
    ids=["set-a-surrogate", "set-a-surrogate-in-a-list", "because-a-surrogate"],
)
def test_a_rule_that_would_write_a_value_no_store_can_hold_is_refused_at_its_literal_when_loaded(workspaces, effect, literal):
    text = f"rule r: on add fact where content = 'x' then {effect}"
    column = text.rindex(literal, 0, text.index("\\u")) + 1  # the escape is written in the file as six characters
    with workspaces() as ws:
        with Memory.open(ws.db) as memory:
            with pytest.raises(HGMError) as caught:
                memory.load_rules(text, name="writes")
            err = caught.value
            assert (err.category, err.line, err.column) == ("invalid-value", 1, column), err
            assert "writes" not in memory.rules()
            timed(memory.apply, {"ops": [{"op": "add_node", "id": "nx", "type": "fact", "content": "x"}]})


def test_a_rule_file_holding_nul_is_refused_on_postgresql_before_it_reaches_the_store(postgres_url):
    with Memory.open(postgres_url) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        for call in (lambda: memory.load_rules("// a\x00b\npropagate derived_from backward", name="n"),
                     lambda: memory.load_rules("propagate derived_from backward", name="a\x00b"),
                     lambda: memory.add_constraint("a\x00b", "each goal must true")):
            with pytest.raises(HGMError) as caught:
                call()
            assert caught.value.category == "invalid-value"
        assert memory.rules() == {} and memory.constraints() == {}


@pytest.mark.parametrize("command", [["rules", "check"], ["rules", "load", "--name", "x"], ["check", "--examples", "1"]])
def test_a_rule_file_that_is_not_utf_8_is_an_io_error_not_a_traceback(workspaces, command):
    with workspaces() as ws:
        file = write_bytes(ws.folder, "rules.hgmr", b"propagate derived_from backward // caf\xe9\n")
        before = store_bytes(ws.db)
        code, _, err = run_cli(*command, file, *(["--db", ws.db] if "load" in command else []))
        assert code == 1 and "not UTF-8" in err and str(file) in err, err
        assert store_bytes(ws.db) == before


NUL_ID_CALLS = {
    "add_node": lambda m: m.apply({"ops": [{"op": "add_node", "id": "a\x00b", "type": "fact"}]}),
    "replace_branch": lambda m: m.apply({"ops": [{"op": "replace_branch", "id": "g", "with": [{"id": "n\x00", "type": "action"}]}]}),
    "ingest-id": lambda m: m.ingest([{"id": "p\x00", "goal": "x", "steps": ["a"]}]),
    "ingest-scenario": lambda m: m.ingest([{"id": "p2", "goal": "x", "steps": ["a"]}], scenario="s\x00"),
}


@pytest.mark.parametrize("call", NUL_ID_CALLS.values(), ids=NUL_ID_CALLS.keys())
def test_a_node_id_holding_nul_is_refused_before_it_reaches_postgresql(postgres_url, call):
    with Memory.open(postgres_url) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        before = memory_state(memory)
        result = timed(call, memory)  # a store error fails here: the id reached the store
        assert isinstance(result, HGMError) or getattr(result, "t", None) is None, result
        assert memory_state(memory) == before


def test_a_graph_file_with_a_node_id_holding_nul_is_an_invalid_value_at_the_id(tmp_path):
    doc = {"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}, {"id": "a\x00", "type": "action"}], "edges": []}
    with pytest.raises(HGMError) as caught:
        Memory.from_document(doc)
    assert [(p.category, p.where) for p in caught.value.problems] == [("invalid-value", "nodes[1].id")]
    file = write_bytes(tmp_path, "nul.json", json.dumps(doc))
    code, out, _ = run_cli("validate", file, "--json")
    assert code == 1 and "nodes[1].id" in out


@pytest.mark.parametrize("reward", [10**400, 10**4300 - 1, 10**5000, -(10**400)], ids=["400-digits", "4300-digits", "5000-digits", "negative"])
def test_a_trajectory_reward_too_large_for_a_float_is_a_bad_trajectory_not_an_overflow(workspaces, reward):
    with workspaces() as ws:
        with Memory.open(ws.db) as memory:
            before = memory_state(memory)
            result = timed(memory.ingest, [dict(TRAJECTORY, id="t-big", reward=reward)])
            assert isinstance(result, HGMError), result
            assert "reward" in result.message and len(result.message) < 300, result.message
            assert memory_state(memory) == before


@pytest.mark.parametrize("reward", [10**400, 10**5000], ids=["400-digits", "5000-digits"])
def test_an_outcome_reward_too_large_for_a_float_is_a_bad_outcome_with_a_short_message(workspaces, reward):
    with workspaces() as ws:
        with Memory.open(ws.db) as memory:
            before = memory_state(memory)
            result = timed(memory.record_outcome, "order-17", "success", reward=reward)
            assert isinstance(result, HGMError) and result.category == "bad-outcome", result
            assert len(result.message) < 200, result.message
            assert memory_state(memory) == before


UNREADABLE_JSON = {"4301-digits": "[" + "9" * 4301 + "]", "50k-deep": "[" * 50_000 + "]" * 50_000}


@pytest.mark.parametrize("text", UNREADABLE_JSON.values(), ids=UNREADABLE_JSON.keys())
def test_a_steps_file_python_cannot_read_is_invalid_json_not_a_traceback(workspaces, text):
    with workspaces() as ws:
        file = write_bytes(ws.folder, "steps.json", text)
        before = store_bytes(ws.db)
        code, out, _ = run_cli("rewrite-path", "order-17", "--steps", file, "--reason", "r", "--db", ws.db, "--json")
        assert code == 1 and json.loads(out)["error"]["category"] == "invalid-json"
        assert store_bytes(ws.db) == before


@pytest.mark.parametrize("text", UNREADABLE_JSON.values(), ids=UNREADABLE_JSON.keys())
def test_a_schema_file_python_cannot_read_is_invalid_json_not_a_traceback(tmp_path, text):
    rules = write_bytes(tmp_path, "rules.hgmr", "propagate derived_from backward")
    schema = write_bytes(tmp_path, "schema.json", text)
    code, out, _ = run_cli("check", rules, "--schema", schema, "--examples", "1", "--json")
    assert code == 1 and json.loads(out)["error"]["category"] == "invalid-json"


@pytest.mark.parametrize("text", UNREADABLE_JSON.values(), ids=UNREADABLE_JSON.keys())
def test_a_model_answer_python_cannot_read_is_an_answer_problem_not_an_exception(text):
    from hgm_engine.llm.chat import read_json

    doc, problems = read_json(text)
    assert doc is None and problems and problems[0].startswith("not valid JSON: ")


def test_an_mcp_notification_the_sdk_cannot_read_is_answered_with_invalid_request():
    pytest.importorskip("mcp_types")
    from hgm_engine.server.mcp import INVALID_REQUEST, line_error

    line = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]})
    assert line_error(line)[::2] == (INVALID_REQUEST, None)
    # a notification the SDK reads, with the text "id" inside a value, still goes to the SDK
    assert line_error(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"id": 1}})) is None
