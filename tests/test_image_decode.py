"""Decoding a stored image cheaply (issue 15, a 1M-node memory reopened in ≤ 3 s): what a
graph read from its image leaves for later, and that it answers exactly as a graph built
from the same payloads, before and after changes."""

from __future__ import annotations

import pytest

from hgm_engine.model import Edge, MemoryGraph, Node, freeze
from hgm_engine.store.image import decode_image, encode_image


def _built() -> MemoryGraph:
    nodes = [
        ("trip", "goal", {"status": "active"}),
        ("book", "action", {"status": "done"}),
        ("pay", "action", {"status": "failed"}),
        ("lyon", "entity", {"name": "Lyon"}),
        ("hotel", "fact", {"content": "the hotel is near the station"}),
        ("call", "action", {}),
    ]
    edges = [
        ("trip", "book", "parent_of", {"order": 1}),
        ("trip", "pay", "parent_of", {"order": 0}),
        ("trip", "call", "parent_of", {}),
        ("hotel", "lyon", "related_to", {}),
    ]
    return MemoryGraph.from_records(nodes, edges)


def _by_type(graph: MemoryGraph) -> dict:
    return {t: (list(graph.ids_of_type(t)), [n.seq for n in graph.nodes_of_type(t)], graph.count_of_type(t))
            for t in ("goal", "action", "entity", "fact", "result")}


def _read(graph: MemoryGraph) -> MemoryGraph:
    return decode_image(encode_image(graph, 1, 0)).graph


def test_a_graph_read_from_its_image_builds_no_per_type_index_until_one_is_read():
    graph = _read(_built())
    assert graph._by_type == {}
    assert graph.count_of_type("action") == 3 and graph._by_type == {}  # counted from the positions
    assert list(graph.ids_of_type("action")) == ["book", "pay", "call"]
    assert set(graph._by_type) == {"action"}


def test_the_per_type_index_read_from_an_image_is_the_built_one():
    assert _by_type(_read(_built())) == _by_type(_built())


def test_changes_before_any_per_type_read_keep_the_index_right():
    built, read = _built(), _read(_built())
    for graph in (built, read):
        graph.remove_node("pay")
        graph.add_node("visit", "action", {"status": "pending"})
        graph.set_node_attrs("book", {"status": "failed"})
        graph.put_node(Node("lyon", "entity", freeze({"name": "Lyon, France"}), graph.node("lyon").seq))
        graph.add_node("more", "goal", {})
    assert _by_type(read) == _by_type(built)
    assert [n.attrs for n in read.nodes_of_type("action")] == [n.attrs for n in built.nodes_of_type("action")]
    assert read.roots() == built.roots()


def test_a_node_restored_into_a_graph_read_from_its_image_is_in_its_type():
    read = _read(_built())
    removed = read.node("call")
    read.remove_node("call")
    read.restore_node(removed)
    assert list(read.ids_of_type("action")) == ["book", "pay", "call"]
    assert read.last_node_seq == 6


def test_the_last_creation_number_read_from_an_image_is_the_highest_node_seq():
    graph = MemoryGraph.from_payloads([Node("b", "goal", freeze({}), 9), Node("a", "goal", freeze({}), 4)], [])
    read = _read(graph)
    assert read.last_node_seq == 9
    assert read.add_node("c", "goal", {}).seq == 10


def test_an_edge_read_from_an_image_is_the_edge_written():
    read = _read(_built())
    assert read.edge("trip", "pay", "parent_of") == Edge("trip", "pay", "parent_of", freeze({"order": 0}), 2)


@pytest.mark.parametrize("edge_count", [40, 400])  # sparse: most nodes have one edge each way
def test_edge_columns_give_every_node_the_adjacency_its_payloads_give(edge_count):
    import random

    from hgm_engine.model import Adjacency, EdgeColumns

    rng = random.Random(7)
    ids = [f"n{i}" for i in range(60)]
    nodes = [("n%d" % i, rng.choice(["goal", "action", "fact"]), {}) for i in range(60)]
    edges, seen = [], set()
    while len(edges) < edge_count:
        key = (rng.choice(ids), rng.choice(ids), rng.choice(["parent_of", "before", "related_to"]))
        if key in seen:
            continue
        seen.add(key)
        order = rng.choice([None, 0, 1, 2, 2, -1, 1.5, "x", True])
        edges.append((*key, {} if order is None else {"order": order}))
    graph = MemoryGraph.from_records(nodes, edges)
    payloads = list(graph.nodes())
    columns = EdgeColumns.of_edges(payloads, graph.edges())
    for position, node_id in enumerate(ids):
        for outgoing, found in ((True, graph.out_edges(node_id)), (False, graph.in_edges(node_id))):
            read, built = columns.adjacency(position, outgoing), Adjacency(list(found), outgoing)
            assert (read.pairs, read.by_type) == (built.pairs, built.by_type)


def test_a_graph_read_from_its_image_finds_positions_without_an_id_index_until_a_node_changes():
    read = _read(_built())
    assert read._index is None
    assert read.out_ids("trip", "parent_of") == ("pay", "book", "call")
    assert [e.key for e in read.edges_of("lyon")] == [("hotel", "lyon", "related_to")]
    assert read.out_edges("missing") == [] and read.in_adjacency("missing").pairs == ()
    read.add_edge("book", "lyon", "related_to")  # an edge changes no node's position
    assert read._index is None and read.in_ids("lyon", "related_to") == ("hotel", "book")
    read.remove_node("pay")
    assert read._index is not None and "pay" not in read._index
    assert read.out_ids("trip", "parent_of") == ("book", "call")


def test_a_graph_whose_seqs_do_not_ascend_reads_back_with_its_id_index():
    payloads = [Node("b", "goal", freeze({}), 9), Node("a", "action", freeze({}), 4)]
    read = _read(MemoryGraph.from_payloads(payloads, [Edge("b", "a", "parent_of", freeze({}), 1)]))
    assert read._index == {"b": 0, "a": 1}
    assert read.out_ids("b", "parent_of") == ("a",) and read.in_ids("a", "parent_of") == ("b",)


def test_cycles_are_found_in_a_graph_read_from_its_image():
    graph = MemoryGraph.from_records([("a", "goal", {}), ("b", "goal", {})], [("a", "b", "parent_of", {}), ("b", "a", "parent_of", {})])
    assert sorted(_read(graph).find_cycles(["parent_of"])["parent_of"]) == ["a", "b"]


def test_a_query_that_looks_up_many_nodes_builds_the_id_index_once_and_answers_the_same():
    # seqs with gaps (nodes deleted before the image): a position is found by bisection
    nodes = [Node(f"g{i}", "goal", freeze({}), 2 * i + 1) for i in range(3000)]
    edges = [Edge(f"g{i}", f"g{i + 1}", "parent_of", freeze({}), i + 1) for i in range(2999)]
    built = MemoryGraph.from_payloads(nodes, edges)
    read = _read(built)
    answers = [read.out_ids(f"g{i}", "parent_of") + read.in_ids(f"g{i}", "parent_of") for i in range(3000)]
    assert read._index is not None  # built after the first thousand lookups by seq
    assert answers == [built.out_ids(f"g{i}", "parent_of") + built.in_ids(f"g{i}", "parent_of") for i in range(3000)]


def test_consecutive_seqs_give_positions_without_an_id_index_and_the_same_answers():
    nodes = [(f"g{i}", "goal", {}) for i in range(3000)]
    edges = [(f"g{i}", f"g{i + 1}", "parent_of", {}) for i in range(2999)]
    built = MemoryGraph.from_records(nodes, edges)
    read = _read(built)
    answers = [read.out_ids(f"g{i}", "parent_of") + read.in_ids(f"g{i}", "parent_of") for i in range(3000)]
    assert read._index is None  # a position is seq - the first seq: nothing to build
    assert answers == [built.out_ids(f"g{i}", "parent_of") + built.in_ids(f"g{i}", "parent_of") for i in range(3000)]


# -- number indexes: the filter's exact answers, whatever kinds of value the nodes hold ---------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SCORE = st.one_of(
    st.integers(-3, 6), st.sampled_from([0.0, -0.0, 2.5, 4.0, 1e20, -1e300]), st.booleans(), st.none(),
    st.sampled_from(["4", "x", "missing"]), st.just([4]),
)
_LITERAL = st.one_of(st.integers(-4, 7), st.sampled_from([0.0, 2.5, 4.0, 3.999, 1e20, -1e301]))


_PROGRAMS: dict = {}  # text -> program: the literals repeat between examples


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["action", "fact"]), st.sampled_from(["done", "failed"]), _SCORE), min_size=1, max_size=40),
    st.data(),
)
def test_number_filters_on_a_graph_read_from_its_image_answer_as_the_filter_does(specs, data):
    from hgm_engine.query.pipeline import compile_uncached

    records = []
    for i, (node_type, status, score) in enumerate(specs):
        attrs = {"status": status}
        if score != "missing":
            attrs["score"] = score
        records.append((f"n{i}", node_type, attrs))
    graph = MemoryGraph.from_records(records, [])
    read = _read(graph)
    present = [score for _, _, score in specs if type(score) in (int, float)]
    literal = data.draw(st.sampled_from(present) | _LITERAL if present else _LITERAL)  # often a value some node holds
    for op in ("<", "<=", ">", ">=", "=", "=="):
        for test in (f"score {op} {literal!r}", f"{literal!r} {op} score"):
            for text in (f"nodes.where(type = 'action', status = 'failed', {test})", f"nodes.where(type = 'action', {test})",
                         f"nodes.where(type = 'fact', status = 'done', {test}, status != 'x')"):
                program = _PROGRAMS.get(text) or _PROGRAMS.setdefault(text, compile_uncached(text).program)
                assert program.run(read) == program.run(graph), text


class _Reader:
    """A file-like image (what sqlite3.Blob offers: read(n), len()) that records each read."""

    def __init__(self, data: bytes):
        self.data, self.at, self.reads = data, 0, []

    def __len__(self) -> int:
        return len(self.data)

    def read(self, n: int) -> bytes:
        self.reads.append(n)
        piece = self.data[self.at : self.at + n]
        self.at += n
        return piece


def _state(graph: MemoryGraph) -> tuple:
    return (
        [(n.id, n.type, dict(n.attrs), n.seq) for n in graph.nodes()],
        sorted((e.source, e.target, e.type, dict(e.attrs), e.seq) for e in graph.edges()),
        graph.roots(), _by_type(graph), graph.last_node_seq,
    )


@pytest.mark.parametrize("gap", [False, True], ids=["consecutive-seqs", "seqs-with-a-gap"])
def test_an_image_read_a_section_at_a_time_is_the_graph_it_was_made_of(monkeypatch, gap):
    # Sections (the node columns, each edge column, the attributes in chunks) are read one by
    # one from a file-like image (SQLiteStore reads an sqlite3.Blob so): never the whole blob.
    from hgm_engine.store import image as image_module

    monkeypatch.setattr(image_module, "NODES_PER_CHUNK", 2)
    graph = _built()
    if gap:  # seqs 1, 2, 4, ...: kept as a list, not as their first one
        graph.remove_node("pay")
    data = encode_image(graph, 3, 0)
    reader = _Reader(data)
    read = decode_image(reader).graph
    assert _state(read) == _state(graph) == _state(decode_image(data).graph)
    assert sum(reader.reads) == len(data) and len(reader.reads) > 3 + 8 + 2
    assert max(reader.reads) < len(data) / 2
    assert (read._seq_base is not None) is (not gap)
    assert read.node("book").seq == graph.node("book").seq and read.node("call").seq == graph.node("call").seq
    monkeypatch.undo()  # a reader whose chunk size differs reads the chunks the writer made
    assert _state(decode_image(data).graph) == _state(graph)


def test_an_image_cut_short_in_a_section_is_refused_when_read_a_piece_at_a_time():
    from hgm_engine.store.image import ImageMismatch

    data = encode_image(_built(), 3, 0)

    class Short(_Reader):  # says it is whole, then runs out (a blob changed under the reader)
        def __len__(self) -> int:
            return len(data)

    with pytest.raises(ImageMismatch, match="too short"):
        decode_image(Short(data[:-5]))
