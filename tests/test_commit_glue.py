"""The seventh session's cuts in a commit's glue (issue 15): the journal record's first and last
fields written without the encoder, the node index's entries made by their own constructor, the
state's write lock a plain context manager. Each keeps exactly what was there before."""

from __future__ import annotations

import json
import pickle
import threading

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hgm_engine.model import Change, Commit, Node, freeze
from hgm_engine.model.nodeindex.entries import Doc, entries_of
from hgm_engine.model.nodeindex import DEFAULT_FIELDS
from hgm_engine.store.journal import commit_to_record, commit_to_text
from hgm_engine.txn.sync import ReadWriteLock

# -- the journal record's head and tail -----------------------------------------------------------

_texts = st.text(max_size=6)  # lone surrogates too: the encoder writes them as they are
_odd_numbers = st.one_of(
    st.integers(-(10**30), 10**30),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    _texts,
)
_odd_commits = st.builds(
    Commit,
    st.integers(-(10**30), 10**30) | st.booleans(),
    st.none() | _texts | st.integers(),
    st.none() | _texts | st.booleans(),
    _odd_numbers,
    _odd_numbers,
    st.lists(st.builds(Change, st.just("node_added"), st.none(), st.builds(Node, _texts, _texts, st.just(freeze({})), st.integers(0, 9))), max_size=1).map(tuple),
    st.lists(_texts, max_size=2).map(tuple),
    st.lists(st.dictionaries(_texts, st.integers() | _texts, max_size=2).map(freeze), max_size=1).map(tuple),
    st.booleans() | st.integers(0, 2),
    _texts | st.sampled_from(["transaction", "load", "revert", "purge"]),
    st.lists(_texts, max_size=2).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(_odd_commits)
def test_the_record_head_and_tail_are_the_encoders_text_whatever_the_fields_hold(commit):
    # A commit made here has an int t, texts or None, a finite float time and no rules fired;
    # whatever a Commit holds, the text is the record encoded by json as before (NaN,
    # infinities, -0.0, booleans where numbers go, numbers where texts go, big integers).
    expected = json.dumps(commit_to_record(commit), ensure_ascii=False, separators=(",", ":"))
    assert commit_to_text(commit) == expected


@pytest.mark.parametrize("timestamp", [float("inf"), float("-inf"), float("nan"), -0.0, 1e300, 5e-324, 1764633600.123456])
def test_the_record_time_is_written_as_the_encoder_writes_it(timestamp):
    commit = Commit(7, "me", None, 6, timestamp, ())
    expected = json.dumps(commit_to_record(commit), ensure_ascii=False, separators=(",", ":"))
    assert commit_to_text(commit) == expected


# -- the node index's entries ----------------------------------------------------------------------


def test_an_entry_made_by_its_constructor_is_the_frozen_value_attrs_describes():
    values = ({"hotel": 2, "book": 1}, 3, 17, "fact")
    names = [field.name for field in attrs.fields(Doc)]
    made, named = Doc(*values), Doc(**dict(zip(names, values)))
    assert [getattr(made, name) for name in names] == list(values)
    assert made == named and hash(Doc(("a",), 1, 2, "t")) == hash(Doc(("a",), 1, 2, "t"))
    assert made != Doc({"hotel": 2, "book": 1}, 3, 18, "fact") and made != Doc({"hotel": 2, "book": 1}, 3, 17, "goal")
    assert repr(made) == "Doc(terms={'hotel': 2, 'book': 1}, length=3, seq=17, type='fact')"
    assert attrs.evolve(made, seq=4) == Doc(values[0], 3, 4, "fact") and pickle.loads(pickle.dumps(made)) == made
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.seq = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        Doc({"a": 1}, 1, 2)  # type: ignore[call-arg]


def test_a_commits_entries_carry_each_nodes_terms_length_seq_and_type():
    nodes = {"a": Node("a", "fact", freeze({"content": "the hotel, the hotel"}), 9), "b": Node("b", "goal", freeze({"content": "Book it"}), 4)}
    docs = entries_of(nodes, DEFAULT_FIELDS)
    assert docs == {"a": Doc({"hotel": 2}, 2, 9, "fact"), "b": Doc({"book": 1}, 1, 4, "goal")}
    assert (docs["b"].terms, docs["b"].length, docs["b"].seq, docs["b"].type) == ({"book": 1}, 1, 4, "goal")


# -- the state's write lock ------------------------------------------------------------------------


def test_a_write_not_acquired_releases_nothing_and_an_acquired_one_waits_for_readers():
    lock = ReadWriteLock()
    with lock.writing() as held:
        assert held is True
        # another thread's attempt fails at once; leaving its with-block must not free ours
        seen = []
        thread = threading.Thread(target=lambda: seen.append(_try_write(lock)))
        thread.start()
        thread.join()
        assert seen == [False]
        assert lock._writer is True  # still ours
    assert lock._writer is False
    with lock.reading():
        with lock.writing(blocking=False) as acquired:
            assert acquired is False
        assert lock._readers == 1 and lock._writer is False
    # a blocking writer waits until the last reader leaves
    order = []
    reading = lock.reading()
    reading.__enter__()
    writer = threading.Thread(target=lambda: _write(lock, order))
    writer.start()
    writer.join(0.2)
    assert order == [] and writer.is_alive()
    order.append("reader out")
    reading.__exit__(None, None, None)
    writer.join(5)
    assert order == ["reader out", "writer in"] and lock._writer is False


def test_an_error_inside_the_write_side_releases_it():
    lock = ReadWriteLock()
    with pytest.raises(ZeroDivisionError):
        with lock.writing():
            1 / 0
    assert lock._writer is False
    with lock.writing(blocking=False) as acquired:
        assert acquired is True


def _try_write(lock: ReadWriteLock) -> bool:
    with lock.writing(blocking=False) as acquired:
        return acquired


def _write(lock: ReadWriteLock, order: list) -> None:
    with lock.writing() as acquired:
        assert acquired
        order.append("writer in")
