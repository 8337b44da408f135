"""search(TEXT), .rank(TEXT) and the node index (docs/language.md §8): the language's rules
beyond the spec's cases, the index kept by commits and read back by a reopened memory, its
views of earlier states and of transactions, and bad input."""

from __future__ import annotations

import random
import sqlite3

import pytest

from hgm_engine import HGMError, Memory, QueryAnalysisError, TransactionRefused
from hgm_engine.errors import RuleError, SearchError, StoreError
from hgm_engine.model import MemoryGraph
from hgm_engine.model import nodeindex
from hgm_engine.model.nodeindex import LexicalIndex, index_for, query_terms
from hgm_engine.model.text import analyze
from hgm_engine.query import Limits
from hgm_engine.retrieval import keeper as keeper_module


def travel(path=None) -> Memory:
    memory = Memory() if path is None else Memory.open(path)
    memory.apply({"ops": [
        {"op": "add_node", "id": "trip", "type": "goal", "content": "Plan a Beijing trip", "tags": ["travel"]},
        {"op": "add_node", "id": "hotel", "type": "action", "parent": "trip", "content": "Book a hotel near Wangfujing"},
        {"op": "add_node", "id": "pay", "type": "action", "parent": "trip", "content": "Pay the hotel deposit"},
        {"op": "add_node", "id": "price", "type": "fact", "content": "Beijing Hotel costs 800 CNY per night"},
        {"op": "add_node", "id": "closed", "type": "fact", "content": "The Forbidden City is closed on Mondays"},
        {"op": "add_node", "id": "e_hotel", "type": "entity", "name": "Beijing Hotel", "tags": ["hotel"]},
        {"op": "add_edge", "from": "price", "to": "e_hotel", "type": "related_to"},
    ]})
    return memory


def fresh_hits(view, text: str) -> list[str]:
    """What a newly built index of ``view`` answers (the reference for a kept index)."""
    return [hit.id for hit in nodeindex.IndexView(LexicalIndex.build(view)).hits(query_terms(text))]


# -- the language ------------------------------------------------------------------------------


def test_search_composes_with_filters_limits_unions_and_finals():
    memory = travel()
    assert memory.query("search('hotel').where(type = 'fact')").ids == ["price"]
    assert memory.query("search($q).where(type = 'action').limit(1)", params={"q": "hotel deposit"}).ids == ["pay"]
    assert memory.query("(search('deposit')).parent").ids == ["trip"]
    assert memory.query("search('Mondays') | search('Wangfujing')").ids == ["closed", "hotel"]
    assert memory.query("search('museum').exists()").value is False
    assert memory.query("search('hotel').count()").value == 4
    assert memory.query("nodes.where(exists(related.where(type = 'entity'))).rank('cost')").ids == ["price"]
    assert memory.query("search('deposit').paths()").value == [["pay"]]
    assert memory.query("search('deposit').parent.paths()").value == [["pay", "trip"]]


def test_a_limit_after_search_gives_the_first_of_the_whole_ranking():
    memory = travel()
    full = memory.query("search('Beijing hotel night')").ids
    for k in range(len(full) + 2):
        assert memory.query(f"search('Beijing hotel night').limit({k})").ids == full[:k]
        assert memory.query(f"search('Beijing hotel night')[0:{k}]").ids == full[:k]
    assert memory.query("search('Beijing hotel night').first()").ids == full[:1]
    typed = [i for i in full if memory.node(i)["type"] == "action"]
    assert memory.query("search('Beijing hotel night').where(type = 'action').limit(1)").ids == typed[:1]


def test_explain_names_the_rules_and_the_index():
    text = travel().explain("search($q).where(type = 'fact').limit(5)")
    assert "rules applied: search_type, search_top" in text
    assert "search the node index for $q of type 'fact', most relevant first, the first 5 only" in text
    assert text.splitlines()[-1].startswith("index: lexical node index (BM25")


def test_every_word_ranks_before_some_words_at_equal_length():
    memory = Memory()
    memory.apply({"ops": [
        {"op": "add_node", "id": "some", "type": "fact", "content": "hotel hotel hotel museum"},
        {"op": "add_node", "id": "every", "type": "fact", "content": "hotel ticket museum entry"},
    ]})
    # "some" has the rarer word three times; "every" has both words of the query once.
    assert memory.query("search('hotel ticket')").ids == ["every", "some"]


def test_equal_scores_come_in_creation_order_and_rank_keeps_list_order():
    memory = Memory()
    ops = [{"op": "add_node", "id": f"n{i}", "type": "fact", "content": "the same hotel"} for i in (3, 1, 2)]
    memory.apply({"ops": ops})
    assert memory.query("search('hotel')").ids == ["n3", "n1", "n2"]
    assert memory.query("search('hotel').limit(2)").ids == ["n3", "n1"]
    assert memory.query("(#n2 | #n1 | #n3).rank('hotel')").ids == ["n2", "n1", "n3"]


def test_stems_stop_words_camel_case_and_case():
    memory = Memory()
    memory.apply({"ops": [
        {"op": "add_node", "id": "q", "type": "fact", "content": "Queried the ORDER status"},
        {"op": "add_node", "id": "t", "type": "entity", "content": "call GetMovieCredit"},
        {"op": "add_node", "id": "c", "type": "fact", "content": "北京饭店"},
    ]})
    assert memory.query("search('queries')").ids == ["q"]
    assert memory.query("search('order')").ids == ["q"]
    assert memory.query("search('movie credits')").ids == ["t"]
    assert memory.query("search('getmoviecredit')").ids == ["t"]
    assert memory.query("search('北京')").ids == ["c"]
    assert analyze("queries") == analyze("query") == ["queri"]


@pytest.mark.parametrize(
    "expr, params, category, column",
    [
        ("search('the of and')", None, "invalid-argument", 8),
        ("search('')", None, "invalid-argument", 8),
        ("search(hotel)", None, "invalid-argument", 8),
        ("search(['hotel'])", None, "invalid-argument", 8),
        ("search()", None, "invalid-argument", 1),
        ("search('a', 'b')", None, "invalid-argument", 1),
        ("search($q)", {"q": ["hotel"]}, "invalid-argument", 8),
        ("search($q)", {"q": None}, "invalid-argument", 8),
        ("search($q)", {"q": "   "}, "invalid-argument", 8),
        ("nodes.rank($q)", {"q": 3}, "invalid-argument", 12),
        ("nodes.rank()", None, "invalid-argument", 7),
        ("serch('hotel')", None, "unknown-name", 1),
        ("nodes.search('hotel')", None, "unknown-name", 7),
        ("nodes.rank", None, "unknown-name", 7),
        ("limit('hotel')", None, "unknown-name", 1),
    ],
)
def test_bad_search_text_is_an_error_before_anything_runs(expr, params, category, column):
    memory = travel()
    with pytest.raises(HGMError) as caught:
        memory.query(expr, params=params)
    assert caught.value.category == category, caught.value.render()
    assert caught.value.column == column, caught.value.render()


def test_unknown_start_function_suggests_search():
    with pytest.raises(QueryAnalysisError) as caught:
        Memory().query("serch('x')")
    assert "did you mean 'search'" in caught.value.message


def test_search_text_is_bounded_by_limits():
    memory = Memory(limits=Limits(max_search_length=20))
    with pytest.raises(QueryAnalysisError) as caught:
        memory.query("search('" + "hotel " * 10 + "')")
    assert caught.value.category == "limit-exceeded" and "Limits.max_search_length" in caught.value.message
    with pytest.raises(QueryAnalysisError) as caught:
        memory.query("search($q)", params={"q": "hotel " * 10})
    assert caught.value.category == "limit-exceeded"
    assert memory.query("search($q)", params={"q": "hotel"}).ids == []


def test_search_work_counts_against_max_work():
    memory = Memory(limits=Limits(max_work=50))
    memory.apply({"ops": [{"op": "add_node", "id": f"n{i}", "type": "fact", "content": "hotel"} for i in range(40)]})
    with pytest.raises(HGMError) as caught:
        memory.query("search('hotel')")
    assert caught.value.category == "limit-exceeded"


def test_constraints_and_rules_may_not_rank():
    memory = travel()
    with pytest.raises(QueryAnalysisError) as caught:
        memory.add_constraint("ranked", "each goal must exists(children.rank('hotel')[0].where(type = 'action'))")
    assert caught.value.category == "invalid-argument" and "cannot use .rank()" in caught.value.message
    with pytest.raises((QueryAnalysisError, RuleError)) as caught:
        memory.load_rules("rule r: on add fact then mark related.rank('hotel') as needs_review", "r")
    assert "cannot use .rank()" in caught.value.render()
    assert memory.constraints() == {} or "ranked" not in memory.constraints()


# -- the index kept by commits -----------------------------------------------------------------

WORDS = "hotel museum ticket night price closed monday city wall great visit book pay deposit queries order".split()


def random_ops(rng: random.Random, ids: list[str], counter: list[int]) -> list[dict]:
    ops = []
    for _ in range(rng.randint(1, 6)):
        roll = rng.random()
        if roll < 0.45 or not ids:
            counter[0] += 1
            node_id = f"n{counter[0]}"
            attrs = {"content": " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))}
            if rng.random() < 0.3:
                attrs["tags"] = rng.sample(WORDS, 2)
            ops.append({"op": "add_node", "id": node_id, "type": rng.choice(["fact", "entity"]), **attrs})
            ids.append(node_id)
        elif roll < 0.8:
            node_id = rng.choice(ids)
            if rng.random() < 0.2:
                ops.append({"op": "update_node", "id": node_id, "set": {"content": "of the"}})  # no term any more
            else:
                ops.append({"op": "update_node", "id": node_id, "set": {"content": " ".join(rng.choices(WORDS, k=3))}})
        else:
            node_id = ids.pop(rng.randrange(len(ids)))
            ops.append({"op": "delete_node", "id": node_id})
        if ops[-1]["op"] != "add_node" and sum(1 for op in ops if op.get("id") == ops[-1]["id"]) > 1:
            ops.pop()  # one op per node per transaction keeps the documents valid
    return ops


@pytest.mark.parametrize("durable", [False, True])
def test_the_kept_index_answers_as_a_fresh_index_of_the_same_state(tmp_path, monkeypatch, durable):
    monkeypatch.setattr(keeper_module, "COMPACT_MIN", 8)  # fold changes into segments often
    memory = Memory.open(tmp_path / "m.db") if durable else Memory()
    rng = random.Random(7)
    ids: list[str] = []
    counter = [0]
    queries = ["hotel", "museum ticket", "queries order", "great wall visit", "deposit price night"]
    for step in range(40):
        ops = random_ops(rng, ids, counter)
        if not ops:
            continue
        assert memory.apply({"ops": ops}).committed
        if step % 3 == 0:
            for text in queries:
                assert memory.query("search($q)", params={"q": text}).ids == fresh_hits(memory.graph, text), (step, text)
    for t in range(0, memory.t + 1, 5):  # earlier states: their own text and statistics
        with memory.reading():
            view = memory.state.view_at(t)
            for text in queries:
                assert memory.query("search($q)", params={"q": text}, as_of=t).ids == fresh_hits(view, text), (t, text)
    if durable:
        memory.close()
        reopened = Memory.open(tmp_path / "m.db")
        for text in queries:
            assert reopened.query("search($q)", params={"q": text}).ids == fresh_hits(reopened.graph, text)
        assert reopened.search_status()["source"] == "stored"
        reopened.close()


def test_a_transaction_searches_its_own_uncommitted_text():
    memory = travel()
    with memory.transaction() as tx:
        tx.update_node("closed", set={"content": "The museum is open every day"})
        tx.add_node("fact", id="new", content="museum tickets cost 60 CNY")
        assert tx.query("search('museum')").ids == ["closed", "new"]
        assert tx.query("search('Forbidden')").ids == []
        assert memory.query("search('museum')").ids == []  # readers see the committed state
    assert memory.query("search('museum')").ids == ["closed", "new"]


def test_search_as_of_sees_that_states_text(tmp_path):
    memory = travel(tmp_path / "m.db")
    memory.apply({"ops": [{"op": "update_node", "id": "closed", "set": {"content": "The museum opens at nine"}}]})
    memory.apply({"ops": [{"op": "delete_node", "id": "pay"}]})
    assert memory.query("search('Forbidden')").ids == []
    assert memory.query("search('Forbidden')", as_of=1).ids == ["closed"]
    assert memory.query("search('deposit')", as_of=2).ids == ["pay"]
    assert memory.query("search('deposit')").ids == []
    assert [hit["id"] for hit in memory.search("museum", as_of=2)] == ["closed"]
    assert memory.as_of(1).query("search('museum').count()").value == 0


def test_a_reopened_memory_reads_its_index_without_analysing_text(tmp_path, monkeypatch):
    memory = travel(tmp_path / "m.db")
    memory.apply({"ops": [{"op": "add_node", "id": "x", "type": "fact", "content": "A museum night"}]})
    expected = memory.query("search('Beijing hotel night')").ids
    memory.close()

    def no_analysis(text):
        raise AssertionError(f"text analysed on reopen: {text!r}")

    monkeypatch.setattr(nodeindex.entries, "_terms_of", no_analysis)  # where entries are analysed
    reopened = Memory.open(tmp_path / "m.db")
    assert reopened.query("search('Beijing hotel night')").ids == expected
    status = reopened.search_status()
    assert status["source"] == "stored" and status["t"] == 2 and status["nodes"] == 7


def test_segments_are_saved_when_the_changes_grow(tmp_path, monkeypatch):
    monkeypatch.setattr(keeper_module, "COMPACT_MIN", 3)
    memory = travel(tmp_path / "m.db")
    for i in range(6):
        memory.apply({"ops": [{"op": "add_node", "id": f"m{i}", "type": "fact", "content": f"museum {i}"}]})
    db = sqlite3.connect(tmp_path / "m.db")
    rows = dict(db.execute("SELECT name, t FROM node_index").fetchall())
    changes = db.execute("SELECT COUNT(*) FROM node_index_changes").fetchone()[0]
    db.close()
    assert rows["t"] == memory.t and rows["segment"] > 1 and changes <= 3
    expected = memory.query("search('museum')").ids
    memory.close()
    reopened = Memory.open(tmp_path / "m.db")
    assert reopened.query("search('museum')").ids == expected == [f"m{i}" for i in range(6)]


def test_an_index_behind_its_store_is_rebuilt_and_saved_whole(tmp_path):
    memory = travel(tmp_path / "m.db")
    memory.close()
    db = sqlite3.connect(tmp_path / "m.db")
    # As an hgm from before the node index would leave it: commits without index rows.
    db.execute("DROP TABLE node_index")
    db.execute("DROP TABLE node_index_changes")
    db.commit()
    db.close()
    older = Memory.open(tmp_path / "m.db")
    assert older.query("search('deposit')").ids == ["pay"]
    assert older.search_status()["source"] == "built"
    older.apply({"ops": [{"op": "add_node", "id": "x", "type": "fact", "content": "deposit returned"}]})
    older.close()
    again = Memory.open(tmp_path / "m.db")
    assert again.query("search('deposit')").ids == ["x", "pay"]
    assert again.search_status()["source"] == "stored"


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE node_index_changes SET terms = '{\"zebra\":1}'",  # a row that does not match its checksum
        "UPDATE node_index SET data = zeroblob(length(data)) WHERE name = 'segment'",
        "UPDATE node_index SET t = 99, crc = NULL WHERE name = 't'",
    ],
)
def test_a_damaged_saved_index_is_rebuilt_from_the_state(tmp_path, damage):
    memory = travel(tmp_path / "m.db")
    memory.apply({"ops": [{"op": "add_node", "id": "m", "type": "fact", "content": "museum"}]})
    memory.close()
    db = sqlite3.connect(tmp_path / "m.db")
    assert db.execute(damage).rowcount >= 1
    db.commit()
    db.close()
    reopened = Memory.open(tmp_path / "m.db")
    assert reopened.query("search('zebra')").ids == []
    assert reopened.query("search('deposit')").ids == ["pay"]
    assert reopened.search_status()["source"] == "built"
    reopened.apply({"ops": [{"op": "add_node", "id": "n", "type": "fact", "content": "museum"}]})  # saved whole again
    reopened.close()
    again = Memory.open(tmp_path / "m.db")
    assert again.query("search('museum')").ids == ["m", "n"] and again.search_status()["source"] == "stored"


def test_another_process_commits_are_followed(tmp_path):
    first = travel(tmp_path / "m.db")
    second = Memory.open(tmp_path / "m.db")
    assert second.query("search('museum')").ids == []
    first.apply({"ops": [{"op": "add_node", "id": "m", "type": "fact", "content": "museum"}]})
    second.refresh()
    assert second.query("search('museum')").ids == ["m"]
    second.apply({"ops": [{"op": "update_node", "id": "m", "set": {"content": "museum tickets"}}]})
    first.refresh()
    assert first.query("search('tickets')").ids == ["m"]
    first.close()
    second.close()
    assert Memory.open(tmp_path / "m.db").query("search('tickets')").ids == ["m"]


def test_a_store_hook_that_fails_fails_the_whole_commit(tmp_path):
    memory = travel(tmp_path / "m.db")

    def refuse(commit, view):
        raise SearchError.single("embedder", "the endpoint is down")

    memory.store_hooks.append(refuse)
    with pytest.raises(SearchError):
        memory.apply({"ops": [{"op": "add_node", "id": "m", "type": "fact", "content": "museum"}]})
    memory.store_hooks.remove(refuse)
    assert memory.t == 1 and memory.query("search('museum')").ids == []
    memory.close()
    reopened = Memory.open(tmp_path / "m.db")
    assert reopened.t == 1 and reopened.query("search('museum')").ids == []
    assert reopened.search_status()["source"] == "stored"


def test_a_load_writes_the_whole_index_with_the_genesis(tmp_path):
    memory = Memory.open(tmp_path / "m.db")
    memory.load({"format": "hgm-graph/1", "nodes": [
        {"id": "a", "type": "fact", "content": "museum"}, {"id": "b", "type": "fact", "content": "hotel"}], "edges": []})
    memory.close()
    reopened = Memory.open(tmp_path / "m.db")
    assert reopened.query("search('hotel')").ids == ["b"] and reopened.search_status()["source"] == "stored"


def test_a_refused_commit_leaves_the_index_as_it_was():
    memory = travel()
    memory.add_constraint("no_museums", "each fact must not (content contains 'museum')")
    with pytest.raises(TransactionRefused):
        report = memory.apply({"ops": [{"op": "add_node", "id": "m", "type": "fact", "content": "museum"}]})
        if not report.committed:
            raise TransactionRefused(report)
    assert memory.query("search('museum')").ids == []


# -- Memory.search -------------------------------------------------------------------------


def test_memory_search_gives_scores_and_matched_words():
    hits = travel().search("Hotels in Beijing", limit=3)
    assert [hit["id"] for hit in hits] == ["e_hotel", "price", "trip"]
    assert hits[0]["matched"] == ["hotels", "beijing"] and hits[2]["matched"] == ["beijing"]
    assert hits[0]["score"] > hits[1]["score"] > hits[2]["score"] > 0
    assert hits[0]["node"] == {"id": "e_hotel", "type": "entity", "name": "Beijing Hotel", "tags": ["hotel"]}


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"text": ""}, "not an empty string"),
        ({"text": 3}, "needs a string"),
        ({"text": "the"}, "has none"),
        ({"text": "hotel", "limit": -1}, "limit must be"),
        ({"text": "hotel", "limit": True}, "limit must be"),
        ({"text": "hotel", "type": "fakt"}, "did you mean 'fact'"),
    ],
)
def test_memory_search_refuses_bad_input(kwargs, words):
    with pytest.raises(SearchError) as caught:
        travel().search(**kwargs)
    assert caught.value.category == "invalid-argument" and words in caught.value.message


def test_index_for_a_bare_graph_is_built_and_rebuilt_after_changes():
    graph = MemoryGraph.from_records([("a", "fact", {"content": "hotel"})], [])
    assert [h.id for h in index_for(graph).hits(("hotel",))] == ["a"]
    graph.add_node("b", "fact", {"content": "hotel"})
    assert [h.id for h in index_for(graph).hits(("hotel",))] == ["a", "b"]


def test_postgres_memory_keeps_and_reads_its_index(postgres_url):
    memory = travel(postgres_url)
    memory.apply({"ops": [{"op": "update_node", "id": "closed", "set": {"content": "museum"}}]})
    expected = memory.query("search('museum hotel')").ids
    memory.close()
    reopened = Memory.open(postgres_url)
    assert reopened.query("search('museum hotel')").ids == expected
    assert reopened.search_status()["source"] == "stored"
    assert reopened.query("search('Forbidden')", as_of=1).ids == ["closed"]
    reopened.close()


def test_store_index_tables_are_created_for_a_store_made_before_them(tmp_path):
    memory = travel(tmp_path / "m.db")
    memory.close()
    db = sqlite3.connect(tmp_path / "m.db")
    for table in ("node_index", "node_index_changes", "node_vectors"):
        db.execute(f"DROP TABLE {table}")
    db.commit()
    db.close()
    reopened = Memory.open(tmp_path / "m.db")
    reopened.apply({"ops": [{"op": "add_node", "id": "z", "type": "fact", "content": "zebra"}]})
    reopened.close()
    db = sqlite3.connect(tmp_path / "m.db")
    assert db.execute("SELECT t FROM node_index WHERE name = 't'").fetchone()[0] == 2
    db.close()


def test_store_errors_while_reading_the_index_are_not_fatal(tmp_path, monkeypatch):
    memory = travel(tmp_path / "m.db")
    memory.close()
    reopened = Memory.open(tmp_path / "m.db")

    def broken():
        raise StoreError.single("store", "disk on fire")

    monkeypatch.setattr(reopened.store, "read_node_index", broken)
    assert reopened.query("search('deposit')").ids == ["pay"]
    assert "disk on fire" in reopened.search_status()["last_problem"]


def test_an_index_counts_its_changed_entries_as_a_recount_does():
    from hgm_engine.model import Node

    graph = MemoryGraph.from_records([(f"n{i}", "fact", {"content": f"hotel {i}"}) for i in range(20)], [])
    index = LexicalIndex.build(graph)
    rng = random.Random(3)
    for step in range(300):
        node_id = f"n{rng.randrange(40)}"
        node = None if rng.random() < 0.3 else Node(node_id, "fact", {"content": f"museum {step}"}, 100 + step)
        index.update(node_id, node)
        if step % 50 == 0:
            index = index.copy()
        recount = len(index.dead) + sum(1 for i in index.docs if i not in index.segment.ord_of)
        assert index.n_changed == recount
