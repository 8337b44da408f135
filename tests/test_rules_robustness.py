"""Rules and constraints against hostile and broken input (issue 12): everything is compiled
before anything is stored, a rule file and its constraints are stored in one store
transaction, a bad stored object never stops a memory from opening, and the cap on rule
rounds says what it is and can be set."""

from __future__ import annotations

import json

import pytest

from hgm_engine import HGMError, Memory, QueryExecutionError, RuleError, StoreError
from hgm_engine.store import InMemoryStore, open_store

DEEP = "not " * 200 + "ok"  # a condition nested deeper than Python can compile generated code for
DEEP_RULE = f"rule a: on add fact where {DEEP} then mark self as blocked"
GOOD_RULE = "rule flag: on add fact then mark self as needs_review"


def _fact(m: Memory, node_id: str):
    return m.apply({"ops": [{"op": "add_node", "id": node_id, "type": "fact", "content": "x"}]})


def _store_raw(location: str, *, meta: dict | None = None, constraints: dict | None = None) -> None:
    """Write rule sets and constraints straight into a store, as an older hgm or another
    program could have written them (nothing is checked)."""
    store = open_store(location)
    try:
        with store.write():
            for key, value in (meta or {}).items():
                store.set_meta(key, value)
            for name, text in (constraints or {}).items():
                store.set_constraint(name, text)
    finally:
        store.close()


# -- compile before storing; check and load agree ---------------------------------------------


def test_a_condition_too_deep_to_compile_is_an_hgm_error_placed_at_its_rule():
    m = Memory()
    with pytest.raises(HGMError) as caught:
        m.load_rules(f"{GOOD_RULE}\n{DEEP_RULE}")
    err = caught.value
    assert isinstance(err, ValueError) and err.category and err.line == 2
    assert m.rules() == {} and m.store.get_meta("rule_sets") is None


def test_loading_a_rule_file_that_does_not_compile_stores_nothing_and_the_memory_reopens(tmp_path):
    path = tmp_path / "m.db"
    with Memory.open(path) as m:
        m.load_rules(GOOD_RULE, name="good")
        with pytest.raises(HGMError):
            m.load_rules(DEEP_RULE, name="bad")
    with Memory.open(path) as m:
        assert m.rules() == {"good": GOOD_RULE} and m.broken() == []
        assert m.store.get_meta("rules:bad") is None


def test_a_constraint_too_deep_to_compile_is_refused_as_an_hgm_error():
    m = Memory()
    with pytest.raises(HGMError) as caught:
        m.add_constraint("deep", f"each fact must {DEEP}")
    assert isinstance(caught.value, ValueError) and caught.value.category
    with pytest.raises(HGMError) as caught:
        m.load_rules(f"constraint deep: each fact must {DEEP}")
    assert caught.value.line == 1
    assert m.constraints() == {} and m.store.constraints() == {}


def test_a_compile_failure_inside_a_condition_is_placed_where_the_condition_is(monkeypatch):
    """A compile error (here the query compiler's limit, injected) of a trigger's condition
    is reported at the condition's line and column in the rule file, in its category."""
    import hgm_engine.rules.compile as rules_compile

    real = rules_compile.QueryCache.get

    def limited(cache, text):
        if "too_costly" in text:
            raise QueryExecutionError.single("limit-exceeded", "the query takes too long to compile")
        return real(cache, text)

    monkeypatch.setattr(rules_compile.QueryCache, "get", limited)
    with pytest.raises(RuleError) as caught:
        Memory().load_rules(f"{GOOD_RULE}\nrule r: on add fact where has(too_costly) then mark self as blocked")
    err = caught.value
    assert (err.category, err.line, err.column) == ("limit-exceeded", 2, 27)
    assert "too long to compile" in err.message and err.source is not None


# -- rule sets, their constraints and the registry in one store transaction --------------------


class _Failing:
    """Makes a store's ``method`` raise a StoreError from its ``after``-th call on."""

    def __init__(self, monkeypatch, store, method: str, after: int = 1):
        real = getattr(store, method)
        self.calls = 0

        def failing(*args):
            self.calls += 1
            if self.calls >= after:
                raise StoreError.single("store", f"injected failure in {method}")
            return real(*args)

        monkeypatch.setattr(store, method, failing)


@pytest.fixture(params=["in-process", "sqlite", "postgres"])
def any_memory(request, tmp_path):
    """A memory on each kind of store: in the process, a SQLite file, a PostgreSQL database."""
    if request.param == "in-process":
        memory = Memory()
    elif request.param == "sqlite":
        memory = Memory.open(tmp_path / "m.db")
    else:
        memory = Memory.open(request.getfixturevalue("postgres_url"))
    yield memory
    memory.close()


def _stored(m: Memory) -> tuple:
    store = m.store
    names = json.loads(store.get_meta("rule_sets") or "[]")
    return names, {n: store.get_meta(f"rules:{n}") for n in names + ["two"]}, store.constraints()


def test_a_store_failure_between_the_writes_of_a_load_leaves_store_and_memory_as_they_were(any_memory, monkeypatch):
    m = any_memory
    m.load_rules("constraint c1: each fact must has(content)\n" + GOOD_RULE, name="one")
    before, rules, constraints = _stored(m), m.rules(), m.constraints()
    _Failing(monkeypatch, m.store, "set_constraint")  # the meta keys are written first
    with pytest.raises(StoreError):
        m.load_rules("constraint c2: each fact must has(content)\npropagate derived_from backward", name="two")
    with pytest.raises(StoreError):  # replacing a set: its old constraint goes, the new one comes
        m.load_rules("constraint c3: each fact must has(content)", name="one")
    assert _stored(m) == before
    assert (m.rules(), m.constraints()) == (rules, constraints)
    monkeypatch.undo()
    assert _fact(m, "f").fired_rules == ("flag",)  # the old set still runs


def test_a_store_failure_between_the_writes_of_a_remove_leaves_everything_as_it_was(any_memory, monkeypatch):
    m = any_memory
    m.load_rules("constraint c1: each fact must has(content)\n" + GOOD_RULE, name="one")
    before = _stored(m)
    _Failing(monkeypatch, m.store, "set_meta")  # the constraints are removed first
    with pytest.raises(StoreError):
        m.remove_rules("one")
    assert _stored(m) == before
    assert set(m.rules()) == {"one"} and set(m.constraints()) == {"c1"}


def test_an_in_process_store_write_that_fails_changes_nothing():
    store = InMemoryStore()
    store.set_meta("kept", "1")
    with pytest.raises(RuntimeError):
        with store.write():
            store.set_meta("kept", None)
            store.set_constraint("c", "each fact must has(content)")
            store.set_snapshot("s", 0)
            with store.write():  # a nested write joins the outer one
                store.set_meta("inner", "x")
            raise RuntimeError("fail")
    assert (store.get_meta("kept"), store.get_meta("inner"), store.constraints(), store.snapshots()) == ("1", None, {}, {})


# -- a bad stored object never stops a memory from opening -------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def location(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "m.db")
    return request.getfixturevalue("postgres_url")


def test_a_memory_with_a_rule_set_that_does_not_compile_opens_with_it_reported_and_inactive(location):
    _store_raw(location, meta={"rule_sets": json.dumps(["good", "bad"]), "rules:good": GOOD_RULE, "rules:bad": DEEP_RULE})
    with Memory.open(location) as m:
        [broken] = m.broken()
        assert (broken.kind, broken.name, broken.text) == ("rule set", "bad", DEEP_RULE)
        assert broken.error.category and broken.error.line == 1
        assert m.rules() == {"good": GOOD_RULE}
        report = _fact(m, "f")
        assert report.fired_rules == ("flag",)  # 'a' would have blocked the fact
        assert m.node("f")["dirty"] == "needs_review"


def test_a_broken_rule_set_can_be_removed_and_is_gone_when_the_memory_reopens(location):
    _store_raw(location, meta={"rule_sets": json.dumps(["bad"]), "rules:bad": "rule a: on add fakt then mark self as blocked"})
    with Memory.open(location) as m:
        [broken] = m.broken()
        assert (broken.error.category, broken.error.line, broken.error.column) == ("unknown-name", 1, 16)
        m.remove_rules("bad")
        assert m.broken() == [] and m.rules() == {}
    with Memory.open(location) as m:
        assert m.broken() == [] and m.store.get_meta("rules:bad") is None


def test_a_broken_rule_set_takes_the_constraints_it_declared_when_removed_or_replaced(tmp_path):
    path = str(tmp_path / "m.db")
    text = f"constraint c: each fact must has(content)\n{DEEP_RULE}"
    _store_raw(path, meta={"rule_sets": '["bad"]', "rules:bad": text}, constraints={"c": "each fact must has(content)"})
    with Memory.open(path) as m:
        assert [b.name for b in m.broken()] == ["bad"]
        assert m.constraints() == {"c": "each fact must has(content)"}  # a constraint that compiles still holds
        m.load_rules(GOOD_RULE, name="bad")  # replacing the broken set under its name
        assert m.broken() == [] and m.rules() == {"bad": GOOD_RULE} and m.constraints() == {}


def test_a_memory_with_a_stored_constraint_that_does_not_parse_opens_and_the_constraint_can_be_removed(location):
    _store_raw(location, constraints={"bad": "each fact must (", "good": "each fact must has(content)"})
    with Memory.open(location) as m:
        [broken] = m.broken()
        assert (broken.kind, broken.name, broken.error.category) == ("constraint", "bad", "syntax")
        assert m.constraints() == {"good": "each fact must has(content)"}
        assert _fact(m, "f").committed
        m.remove_constraint("bad")
        assert m.broken() == []
    with Memory.open(location) as m:
        assert m.broken() == [] and set(m.store.constraints()) == {"good"}


def test_a_stored_constraint_over_the_compile_limit_is_reported_broken_instead_of_raising(tmp_path, monkeypatch):
    """The query compiler bounds compile time (its ``limit-exceeded``, injected here): a stored
    constraint over that bound is a broken object, and it is compiled once, not on every sync."""
    import hgm_engine.rules.constraints as constraints_module

    path = str(tmp_path / "m.db")
    _store_raw(path, constraints={"slow": "each fact must exists(children.where(has(slow)))"})
    real = constraints_module.build
    calls = []

    def limited(plan):
        calls.append(plan)
        if "slow" in repr(plan):
            raise QueryExecutionError.single("limit-exceeded", "the query takes too long to compile")
        return real(plan)

    monkeypatch.setattr(constraints_module, "build", limited)
    with Memory.open(path) as m:
        [broken] = m.broken()
        assert (broken.kind, broken.name, broken.error.category) == ("constraint", "slow", "limit-exceeded")
        compiled = len(calls)
        m.refresh()
        _fact(m, "f")
        assert len(calls) == compiled


def test_a_stored_object_whose_compiler_fails_unexpectedly_is_reported_broken(tmp_path, monkeypatch):
    import hgm_engine.rules.constraints as constraints_module

    path = str(tmp_path / "m.db")
    _store_raw(path, constraints={"c": "each fact must has(content)"})

    def crashing(plan):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(constraints_module, "build", crashing)
    with Memory.open(path) as m:
        [broken] = m.broken()
        assert broken.name == "c" and broken.error.category == "limit-exceeded"
        assert "recursion" in broken.error.message


def test_a_rule_set_list_that_is_not_a_json_list_is_reported_and_loading_a_rule_set_rewrites_it(tmp_path):
    path = str(tmp_path / "m.db")
    _store_raw(path, meta={"rule_sets": "{not json"})
    with Memory.open(path) as m:
        [broken] = m.broken()
        assert (broken.kind, broken.name, broken.error.category) == ("rule-set list", "rule_sets", "store")
        m.load_rules(GOOD_RULE, name="fresh")
        assert m.broken() == [] and m.rules() == {"fresh": GOOD_RULE}
        assert json.loads(m.store.get_meta("rule_sets")) == ["fresh"]


def test_a_broken_rule_set_stored_by_another_process_is_reported_on_refresh_and_commits_go_on(tmp_path):
    path = str(tmp_path / "m.db")
    with Memory.open(path) as first, Memory.open(path) as second:
        first.load_rules(GOOD_RULE, name="good")
        with second.store.write():
            second.store.set_meta("rules:bad", DEEP_RULE)
            second.store.set_meta("rule_sets", json.dumps(["good", "bad"]))
        first.refresh()
        assert [b.name for b in first.broken()] == ["bad"]
        assert _fact(first, "f").fired_rules == ("flag",)
        second.refresh()
        assert [b.name for b in second.broken()] == ["bad"]
        second.remove_rules("bad")
        first.refresh()
        assert first.broken() == [] and first.rules() == {"good": GOOD_RULE}


# -- the cap on rule rounds --------------------------------------------------------------------

CASCADE = "rule spread: on update action where status = 'failed' then set children with status = 'failed'"


def _chain(length: int, **kwargs) -> Memory:
    """A goal with a chain of ``length`` actions, each the parent of the next."""
    m = Memory(**kwargs)
    ops = [{"op": "add_node", "id": "g", "type": "goal"}]
    ops += [
        {"op": "add_node", "id": f"a{i}", "type": "action", "parent": f"a{i - 1}" if i else "g", "status": "pending"}
        for i in range(length)
    ]
    m.apply({"ops": ops})
    m.load_rules(CASCADE)
    return m


def _fail_first(m: Memory):
    return m.apply({"ops": [{"op": "update_node", "id": "a0", "set": {"status": "failed"}}]})


def test_a_finite_cascade_longer_than_the_cap_says_the_cap_was_reached_and_what_fired_last():
    m = _chain(40)
    with pytest.raises(HGMError) as caught:
        _fail_first(m)
    err = caught.value
    assert err.category == "rule-loop"
    assert "cap of 32 rounds" in err.message and "max_rule_rounds" in err.message
    assert "forever" not in err.message and "kept firing" not in err.message
    assert "spread on 'a31'" in err.message  # the last round's rule and the node it fired on
    assert m.t == 1 and m.node("a0")["status"] == "pending"


def test_the_round_cap_is_set_per_memory():
    assert _fail_first(_chain(40, max_rule_rounds=64)).committed
    m = _chain(10, max_rule_rounds=4)
    assert m.max_rule_rounds == 4
    with pytest.raises(HGMError, match="cap of 4 rounds"):
        _fail_first(m)
    m.max_rule_rounds = 20
    assert _fail_first(m).committed and m.node("a9")["status"] == "failed"


def test_the_round_cap_is_kept_by_memory_open(tmp_path):
    with Memory.open(tmp_path / "m.db", max_rule_rounds=3) as m:
        assert m.max_rule_rounds == 3


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10", True])
def test_a_round_cap_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(HGMError) as caught:
        Memory(max_rule_rounds=bad)
    assert caught.value.category == "invalid-argument" and isinstance(caught.value, ValueError)


def test_a_rule_set_name_with_a_lone_surrogate_is_an_invalid_value_not_a_store_error(tmp_path):
    from hgm_engine import HGMError, Memory

    with Memory.open(tmp_path / "m.db") as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        try:
            memory.load_rules("propagate derived_from backward", name="\ud800")
        except HGMError as err:
            assert err.category == "invalid-value", err
        else:
            raise AssertionError("loaded under a name that cannot be stored")
        assert memory.t == 1 and memory.broken() == []
