"""Pictures of a memory (hgm_engine.render): Mermaid, DOT and the self-contained HTML page.

The HTML page is checked twice: as text (self-contained, its JSON round-trips, hostile text
cannot escape) and as a page a real browser draws — Debian's headless Chromium renders it and
the DOM after the page's script ran is read back (``--dump-dom``), with ``#select=ID`` standing
in for a click on a node.
"""

from __future__ import annotations

import html.parser
import importlib.resources
import json
import os
import pathlib
import re
import shutil
import subprocess
import urllib.parse

import pytest

from hgm_engine import HGMError, Memory
from hgm_engine.cli import sample_document
from hgm_engine.errors import QuerySyntaxError
from hgm_engine.model.graph import MemoryGraph
from hgm_engine.render import FORMATS, picture, render, to_dot, to_html, to_mermaid
from hgm_engine.render.html import dom_id

HOSTILE = [
    '"]; drop',
    "</script><script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "a\\b",
    "line\nbreak",
    "end",
    "#35;",
    "%%{init: {}}%%",
    "`md` & <b>bold</b>",
    "a b.c",
]


@pytest.fixture(scope="module")
def sample() -> Memory:
    return Memory.from_document(sample_document())


@pytest.fixture(scope="module")
def hostile() -> Memory:
    nodes = [{"id": "top", "type": "goal", "content": "hostile labels"}]
    nodes += [{"id": h, "type": "action", "status": "pending", "content": h, "note": h} for h in HOSTILE]
    edges = [{"from": "top", "to": h, "type": "parent_of"} for h in HOSTILE]
    edges.append({"from": HOSTILE[0], "to": HOSTILE[1], "type": "before"})
    nodes.append({"id": "</script>", "type": "entity", "content": "</script><!--"})
    edges.append({"from": "</script>", "to": HOSTILE[2], "type": "related_to"})
    return Memory.from_document({"format": "hgm-graph/1", "nodes": nodes, "edges": edges})


def page_data(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="hgm-data">(.*?)</script>', page, re.S)
    assert match, "the page embeds its data"
    return json.loads(match.group(1))


# -- what is drawn -----------------------------------------------------------------------------


def test_picture_draws_the_hierarchy_depth_first_then_the_rest(sample):
    p = picture(sample)
    ids = [n.id for n in p.nodes]
    assert ids[:4] == ["trip", "d1", "a_arrive", "a_hotel"]
    assert set(ids) == set(sample.graph.node_ids())
    assert p.hierarchy == {n.id for n in p.nodes if n.type in ("goal", "action")}
    assert len(p.edges) == sample.graph.edge_count


def test_picture_with_root_and_depth_draws_that_part_and_counts_what_is_hidden(sample):
    p = picture(sample, root="trip", depth=1)
    assert [n.id for n in p.nodes if n.id in p.hierarchy] == ["trip", "d1", "d2", "d3"]
    assert dict(p.hidden) == {"d1": 4, "d2": 3, "d3": 3}
    assert [n.id for n in p.nodes if n.id not in p.hierarchy] == []
    # With a root, the non-hierarchy nodes joined to it come along (through each other too).
    p = picture(sample, root="d1")
    assert {n.id for n in p.nodes if n.id not in p.hierarchy} == {
        "e_hotel", "e_wangfujing", "f_rate", "r_booking", "r_budget"
    }


def test_picture_refuses_an_unknown_root_and_a_negative_depth(sample):
    with pytest.raises(HGMError, match="no node 'nope'"):
        picture(sample, root="nope")
    with pytest.raises(HGMError, match="depth"):
        picture(sample, depth=-1)


def test_highlight_marks_results_walks_and_their_edges(sample):
    p = picture(sample, highlight="#f_rate.derived{1,}")
    assert p.highlight.ids == ("r_booking", "r_budget")
    assert p.highlight.paths == (("f_rate", "r_booking"), ("f_rate", "r_booking", "r_budget"))
    assert dict(p.marked) == {"f_rate": "path", "r_booking": "result", "r_budget": "result"}
    assert p.marked_edges == {("r_booking", "f_rate", "derived_from"), ("r_budget", "r_booking", "derived_from")}


def test_highlight_of_a_union_still_finds_the_walks(sample):
    p = picture(sample, highlight="#d3.actions.where(status = 'failed') | #f_rate.derived")
    assert p.highlight.paths == (("d3", "a_wall_bus"), ("f_rate", "r_booking"))
    assert ("d3", "a_wall_bus", "parent_of") in p.marked_edges


def test_highlight_of_a_paths_query_uses_its_walks(sample):
    p = picture(sample, highlight="root.descendants.where(status = 'failed').paths()")
    assert p.highlight.paths == (("trip", "d3", "a_wall_bus"),)
    assert p.marked_edges == {("trip", "d3", "parent_of"), ("d3", "a_wall_bus", "parent_of")}


@pytest.mark.parametrize("query, kind", [("root.count()", "count"), ("#d1.exists()", "exists")])
def test_a_count_or_exists_highlight_marks_nothing_and_says_so(sample, query, kind):
    p = picture(sample, highlight=query)
    assert p.highlight.kind == kind and not p.marked and not p.marked_edges
    assert "marks no nodes" in p.highlight.note
    assert "marks no nodes" in to_mermaid(sample, highlight=query)
    assert page_data(to_html(sample, highlight=query))["highlight"]["note"] == p.highlight.note


def test_highlight_errors_are_the_engines_errors(sample):
    with pytest.raises(QuerySyntaxError) as caught:
        to_html(sample, highlight="root.subgoals[")
    assert caught.value.source == "root.subgoals["  # about the text as written, not a rewrite
    with pytest.raises(HGMError) as caught:
        to_mermaid(sample, highlight="current_goal.actions")
    assert caught.value.category == "missing-focus"
    assert picture(sample, highlight="current_goal.actions", focus="a_palace").highlight.ids == (
        "a_palace", "a_jingshan", "a_duck"
    )


def test_results_outside_the_drawing_are_counted_in_a_note(sample):
    p = picture(sample, root="d3", highlight="nodes.where(status = 'failed') | #a_arrive")
    assert p.highlight.count == 2 and dict(p.marked) == {"a_wall_bus": "result"}
    assert p.highlight.note == "1 result outside the part drawn"


def test_a_bare_graph_can_be_drawn_without_history(sample):
    graph = MemoryGraph.from_records([("g", "goal", {}), ("a", "action", {})], [("g", "a", "parent_of", {})])
    p = picture(graph, highlight="root.actions")
    assert p.histories is None and dict(p.marked) == {"a": "result", "g": "path"}
    assert page_data(to_html(graph))["nodes"][0]["history"] is None
    with pytest.raises(HGMError, match="as_of needs a memory"):
        picture(graph, as_of=1)


def test_as_of_draws_the_earlier_state_with_the_history_up_to_it(tmp_path):
    memory = Memory.open(tmp_path / "m.db")
    memory.load(sample_document())
    with memory.transaction(author="planner", reason="the bus is back") as tx:
        tx.update_node("a_wall_bus", set={"status": "pending"})
    memory.snapshot("fixed")
    with memory.transaction(author="planner", reason="a new day") as tx:
        tx.add_node("goal", id="d4", parent="trip", content="Day 4")
    now = page_data(to_html(memory))
    assert now["t"] == 3 and "d4" in {n["id"] for n in now["nodes"]}
    then = page_data(to_html(memory, as_of="fixed", highlight="nodes.where(status = 'failed')"))
    assert then["t"] == 2 and "d4" not in {n["id"] for n in then["nodes"]}
    assert then["highlight"]["ids"] == []
    bus = next(n for n in then["nodes"] if n["id"] == "a_wall_bus")
    assert [e["t"] for e in bus["history"]] == [1, 2]
    first = page_data(to_html(memory, as_of=1, highlight="nodes.where(status = 'failed')"))
    assert first["highlight"]["ids"] == ["a_wall_bus"]
    with pytest.raises(HGMError):
        to_html(memory, as_of=9)
    memory.close()


def test_embedded_history_is_what_memory_history_says(tmp_path):
    memory = Memory()
    memory.load(sample_document())
    with memory.transaction(author="me", reason="done") as tx:
        tx.update_node("a_alipay", set={"status": "done"})
        tx.add_edge("a_alipay", "e_hotel", "related_to")
    with memory.transaction(author="me", reason="gone") as tx:
        tx.delete_edge("a_alipay", "e_hotel", "related_to")
    data = page_data(to_html(memory))
    for node in data["nodes"]:
        assert node["history"] == json.loads(json.dumps(memory.history(node["id"]))), node["id"]
    alipay = next(n for n in data["nodes"] if n["id"] == "a_alipay")
    assert [entry["t"] for entry in alipay["history"]] == [1, 2, 3]


# -- Mermaid -----------------------------------------------------------------------------------


def test_mermaid_draws_parent_of_solid_in_edge_order_and_other_edges_dashed(sample):
    text = to_mermaid(sample)
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    names = dict(re.findall(r'^\s+(n\d+)\["([^ ]+) ', text, re.M))
    solid = [(names[a], names[b]) for a, b in re.findall(r"^\s+(n\d+) --> (n\d+)$", text, re.M)]
    assert solid[:3] == [("trip", "d1"), ("trip", "d2"), ("trip", "d3")]
    assert solid[3:7] == [("d1", "a_arrive"), ("d1", "a_hotel"), ("d1", "a_alipay"), ("d1", "a_snacks")]
    dashed = re.findall(r"^\s+(n\d+) -\.->\|(\w+)\| (n\d+)$", text, re.M)
    assert len(solid) + len(dashed) == sample.graph.edge_count
    assert ("r_booking", "derived_from", "f_rate") in [(names[a], t, names[b]) for a, t, b in dashed]
    assert 'subgraph outside["not in the hierarchy"]' in text


def test_mermaid_highlight_styles_results_walk_nodes_and_walk_links(sample):
    text = to_mermaid(sample, highlight="#f_rate.derived{1,}")
    names = dict(re.findall(r'^\s+(n\d+)\["([^ ]+) ', text, re.M))
    ids = {v: k for k, v in names.items()}
    assert f"class {ids['r_booking']},{ids['r_budget']} highlight" in text
    assert f"class {ids['f_rate']} onpath" in text
    links = [line.strip() for line in text.splitlines() if re.match(r"\s+n\d+ -", line)]
    styled = re.search(r"linkStyle ([\d,]+) ", text).group(1).split(",")
    assert sorted(links[int(i)] for i in styled) == sorted(
        [f"{ids['r_booking']} -.->|derived_from| {ids['f_rate']}", f"{ids['r_budget']} -.->|derived_from| {ids['r_booking']}"]
    )


def test_mermaid_labels_cannot_break_out(hostile):
    text = to_mermaid(hostile, highlight="root.actions")
    declarations = [line for line in text.splitlines() if re.match(r'\s+n\d+\["', line)]
    assert len(declarations) == len(HOSTILE) + 2
    for line in declarations:
        assert re.fullmatch(r'\s+n\d+\["[^"]*"\]', line), line
        label = re.fullmatch(r'\s+n\d+\["([^"]*)"\]', line).group(1).replace("<br/>", "")
        assert not set(label) & set('<>&;"`%{}#\n') - {"#", ";"}, label
        assert not re.search(r"#(?!\d+;)", label), label  # every '#' starts an entity code
    assert '#34;]#59; drop' in text and "#60;/script#62;" in text
    # Every line is one statement: nothing a label holds started a new one.
    statement = re.compile(r"(flowchart TD|\s+%%.*|\s+n\d+\[.*\]|\s+subgraph .*|\s+end|\s+n\d+ (-->|-\.->\|\w+\|) n\d+|\s+classDef .*|\s+class [n\d,]+ \w+|\s+linkStyle .*)")
    for line in text.splitlines():
        assert statement.fullmatch(line), line


# -- DOT ---------------------------------------------------------------------------------------

_DOT_TOKEN = re.compile(r'"((?:\\"|\\\\|\\\n|[^"\\]|\\)*)"|([A-Za-z_][\w.]*|-?\d+(?:\.\d+)?)|(->|[{}\[\];,=])|(\s+)', re.S)


def dot_tokens(text: str) -> list[tuple[str, str]]:
    """Graphviz's lexer for what to_dot writes: quoted strings (``\\"`` is a quote), names,
    numbers and punctuation; anything else fails the test."""
    tokens, position = [], 0
    while position < len(text):
        match = _DOT_TOKEN.match(text, position)
        assert match, f"cannot read DOT at {text[position:position + 30]!r}"
        position = match.end()
        if match.group(1) is not None:
            tokens.append(("string", match.group(1).replace('\\"', '"')))
        elif match.group(2) is not None:
            tokens.append(("name", match.group(2)))
        elif match.group(3) is not None:
            tokens.append(("punct", match.group(3)))
    return tokens


def dot_statements(text: str) -> tuple[list[str], list[tuple[str, str, dict]]]:
    """The node ids declared and the edges (from, to, attributes) of a to_dot digraph."""
    tokens = dot_tokens(text)
    nodes, edges = [], []
    index = 0
    while index < len(tokens):
        kind, value = tokens[index]
        if kind == "string" and index + 1 < len(tokens):
            following = tokens[index + 1]
            if following == ("punct", "->"):
                target = tokens[index + 2]
                assert target[0] == "string"
                attributes, index = _dot_attributes(tokens, index + 3)
                edges.append((value, target[1], attributes))
                continue
            if following == ("punct", "["):
                attributes, index = _dot_attributes(tokens, index + 1)
                nodes.append((value, attributes))
                continue
        index += 1
    return nodes, edges


def _dot_attributes(tokens, index):
    attributes = {}
    if tokens[index] == ("punct", "["):
        index += 1
        while tokens[index] != ("punct", "]"):
            if tokens[index] == ("punct", ","):
                index += 1
                continue
            key, equals, value = tokens[index], tokens[index + 1], tokens[index + 2]
            assert equals == ("punct", "=")
            attributes[key[1]] = value[1]
            index += 3
        index += 1
    assert tokens[index] == ("punct", ";"), tokens[index]
    return attributes, index + 1


def _unescape_label(text: str) -> str:
    """Graphviz's escString for labels: ``\\n`` is a newline, ``\\\\`` a backslash."""
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def test_dot_has_every_node_and_edge_with_quoted_ids(sample):
    nodes, edges = dot_statements(to_dot(sample))
    assert [n for n, _ in nodes] == [n.id for n in picture(sample).nodes]
    assert len(edges) == sample.graph.edge_count
    parent_of = [(a, b) for a, b, attrs in edges if "style" not in attrs]
    assert parent_of[:3] == [("trip", "d1"), ("trip", "d2"), ("trip", "d3")]
    assert ("r_booking", "f_rate", {"style": "dashed", "label": "derived_from"}) in edges


def test_dot_escapes_hostile_ids_and_labels(hostile):
    text = to_dot(hostile, highlight="root.actions")
    nodes, edges = dot_statements(text)
    # What Graphviz reads back: quotes unescaped; backslashes stay doubled in ids (its lexer
    # keeps "\\\\" as two characters) and become single again in labels.
    expected = [n.id.replace("\\", "\\\\").replace("\n", "\\n") for n in picture(hostile).nodes]
    assert [n for n, _ in nodes] == expected and len(set(expected)) == len(HOSTILE) + 2
    for node, (_, attributes) in zip(picture(hostile).nodes, nodes):
        assert _unescape_label(attributes["label"]).startswith(f"{node.id} [{node.type}]")
    marked = [n for n, attributes in nodes if "highlight" in attributes["class"].split()]
    assert len(marked) == len(HOSTILE)
    assert ('"]; drop', "</script><script>alert(1)</script>", {"style": "dashed", "label": "before", "constraint": "false"}) in edges
    assert ("</script>", "<img src=x onerror=alert(1)>", {"style": "dashed", "label": "related_to", "constraint": "false"}) in edges


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed; DOT is checked by our reader only")
def test_graphviz_reads_the_dot_output(hostile, sample):
    for memory in (hostile, sample):
        text = to_dot(memory, highlight="root.actions")
        run = subprocess.run(["dot", "-Tjson"], input=text, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        graph = json.loads(run.stdout)
        drawn = [o for o in graph["objects"] if "nodes" not in o]
        assert len(drawn) == len(picture(memory).nodes)
        assert len(graph["edges"]) == memory.graph.edge_count


# -- HTML as text ------------------------------------------------------------------------------


def test_html_is_one_self_contained_page(sample):
    page = to_html(sample, highlight="#f_rate.derived{1,}")
    assert page.startswith("<!DOCTYPE html>")
    lowered = page.lower()
    for needle in ("http://", "https://", "//cdn", "@import", "<link", "<iframe", "<img", "fetch(", "xmlhttprequest"):
        assert needle not in lowered, needle
    assert not re.search(r"<[^>]*\ssrc\s*=", page)
    assert not re.search(r"url\((?!#)", page)  # only the page's own markers
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert page.count("<style>") == 1


def test_embedded_json_round_trips(sample):
    page = to_html(sample, highlight="#f_rate.derived{1,}", title="the sample")
    data = page_data(page)
    assert data["format"] == "hgm-picture/1" and data["title"] == "the sample"
    by_id = {n["id"]: n for n in data["nodes"]}
    assert set(by_id) == set(sample.graph.node_ids())
    for node in sample.export()["nodes"]:
        drawn = by_id[node["id"]]
        assert drawn["type"] == node["type"]
        assert drawn["attrs"] == {k: v for k, v in node.items() if k not in ("id", "type")}
        assert drawn["dom_id"] == dom_id("node-", node["id"])
    assert sorted((e["from"], e["to"], e["type"]) for e in data["edges"]) == sorted(
        (e["from"], e["to"], e["type"]) for e in sample.export()["edges"]
    )
    assert data["highlight"]["ids"] == ["r_booking", "r_budget"] and data["highlight"]["count"] == 2
    assert {n["id"]: n["mark"] for n in data["nodes"] if n["mark"]} == {
        "f_rate": "path", "r_booking": "result", "r_budget": "result"
    }


def test_hostile_text_stays_data(hostile):
    page = to_html(hostile, highlight="root.actions", title='</title><script>alert("t")</script>')
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "<img" not in page and "<!--" not in page and "<b>" not in page
    assert "<title>hgm — &lt;/title&gt;&lt;script&gt;" in page
    data = page_data(page)
    by_id = {n["id"]: n for n in data["nodes"]}
    for text in HOSTILE:
        assert by_id[text]["attrs"]["note"] == text
    assert by_id["</script>"]["attrs"]["content"] == "</script><!--"


def test_layout_puts_every_box_in_its_own_place(sample):
    data = page_data(to_html(sample))
    w, h = data["node_width"], data["node_height"]
    boxes = [(n["x"], n["y"]) for n in data["nodes"]]
    for i, (x1, y1) in enumerate(boxes):
        for x2, y2 in boxes[i + 1:]:
            assert abs(x1 - x2) >= w or abs(y1 - y2) >= h, "boxes overlap"
        assert 0 <= x1 <= data["width"] - w and 0 <= y1 <= data["height"] - h
    by_id = {n["id"]: n for n in data["nodes"]}
    # A tree growing to the right: children one column right of their parent, in edge order.
    assert by_id["d1"]["x"] > by_id["trip"]["x"]
    assert by_id["d1"]["y"] < by_id["d2"]["y"] < by_id["d3"]["y"]
    assert by_id["e_hotel"]["x"] > max(n["x"] for n in data["nodes"] if n["hierarchy"])


def test_the_page_inlines_its_assets_as_they_are(sample):
    assets = importlib.resources.files("hgm_engine.render") / "assets"
    skeleton = (assets / "page.html").read_text(encoding="utf-8")
    page = to_html(sample, title="the sample")
    before_title, _, rest = skeleton.partition("@TITLE@")
    assert page.startswith(before_title + "hgm — the sample</title>")
    assert page.endswith(skeleton.rpartition("@SCRIPT@")[2])
    for name in ("style.css", "script.js"):
        text = (assets / name).read_text(encoding="utf-8")
        assert page.count(text) == 1, name
    assert "@STYLE@" not in page and "@SCRIPT@" not in page and "@DATA@" not in page


def test_render_picks_the_format(sample):
    assert set(FORMATS) == {"mermaid", "dot", "html"}
    assert render(sample, "mermaid", root="orders").startswith("flowchart TD")
    assert render(sample, "dot", title="ignored").startswith("digraph hgm {")
    assert page_data(render(sample, "html", title="T", depth=0))["title"] == "T"
    with pytest.raises(ValueError, match="unknown picture format"):
        render(sample, "svg")


# -- HTML in a real browser ---------------------------------------------------------------------


def _find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium; installed here when missing and this process may (root, apt-get)."""
    found = _find_chromium()
    if found is None and shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        install = "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium"
        try:
            subprocess.run(["sh", "-c", install], capture_output=True, timeout=1200)
        except (OSError, subprocess.TimeoutExpired):
            pass
        found = _find_chromium()
    if found is None:
        pytest.skip("Chromium is not installed and could not be installed (apt-get install chromium)")
    return found


def run_chromium(chromium: str, tmp_path: pathlib.Path, url: str, *extra: str) -> str:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={profile}",
        *extra,
        url,
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


class _Element:
    def __init__(self, tag: str, attrs: dict[str, str], parent: "_Element | None"):
        self.tag, self.attrs, self.parent, self.children, self.text = tag, attrs, parent, [], []

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text_content(self) -> str:
        return "".join(part if isinstance(part, str) else part.text_content() for part in self.text)

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()


class _DomReader(html.parser.HTMLParser):
    """Enough of a DOM from Chromium's serialization to find elements and read their text."""

    VOID = {"meta", "link", "br", "img", "input", "hr", "area", "base", "col", "embed", "source", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = _Element("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        element = _Element(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(element)
        self.current.text.append(element)
        if tag not in self.VOID:
            self.current = element

    def handle_startendtag(self, tag, attrs):
        element = _Element(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(element)
        self.current.text.append(element)

    def handle_endtag(self, tag):
        node = self.current
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is not self.root:
            self.current = node.parent

    def handle_data(self, data):
        self.current.text.append(data)


def read_dom(text: str) -> _Element:
    reader = _DomReader()
    reader.feed(text)
    reader.close()
    return reader.root


def by_dom_id(root: _Element, element_id: str) -> _Element:
    for element in root.walk():
        if element.attrs.get("id") == element_id:
            return element
    raise AssertionError(f"no element #{element_id}")


@pytest.mark.slow
def test_chromium_draws_the_page_highlights_and_opens_the_panel(chromium, tmp_path):
    sample = Memory.from_document(sample_document())
    with sample.transaction(author="tester", reason="ticket bought <online>") as tx:
        tx.update_node("a_palace", set={"status": "done", "ticket": "PM-7"})
    page = tmp_path / "sample.html"
    page.write_text(to_html(sample, highlight="root.descendants.where(status = 'failed')"), encoding="utf-8")
    dom = read_dom(run_chromium(chromium, tmp_path, page.as_uri() + "#select=a_palace", "--dump-dom"))
    body = next(e for e in dom.walk() if e.tag == "body")
    assert body.attrs.get("data-ready") == "1", by_dom_id(dom, "error").text_content()
    assert "hidden" in by_dom_id(dom, "error").attrs

    drawn = {e.attrs["data-id"]: e for e in dom.walk() if e.tag == "g" and "node" in e.classes}
    assert set(drawn) == set(sample.graph.node_ids())
    for node_id, element in drawn.items():
        assert element.attrs["id"] == dom_id("node-", node_id)
        assert [c.tag for c in element.children if c.tag == "rect"][:1] == ["rect"]
        assert node_id in element.text_content()
    assert {i for i, e in drawn.items() if "highlight" in e.classes} == {"a_wall_bus"}
    assert {i for i, e in drawn.items() if "onpath" in e.classes} == {"trip", "d3"}
    assert "selected" in drawn["a_palace"].classes

    edges = [e for e in dom.walk() if e.tag == "path" and "edge" in e.classes]
    assert len(edges) == sample.graph.edge_count
    marked = {(e.attrs["data-from"], e.attrs["data-to"]) for e in edges if "highlight" in e.classes}
    assert marked == {("trip", "d3"), ("d3", "a_wall_bus")}
    assert all(e.attrs["d"].startswith("M") for e in edges)

    query = by_dom_id(dom, "query")
    assert "hidden" not in query.attrs and "highlight" in query.classes
    assert by_dom_id(dom, "query-text").text_content() == "root.descendants.where(status = 'failed')"
    assert by_dom_id(dom, "query-count").text_content() == "1 result"

    panel = by_dom_id(dom, "panel")
    assert "hidden" not in panel.attrs and panel.attrs["data-id"] == "a_palace"
    assert by_dom_id(dom, "panel-title").text_content() == "a_palace"
    rows = {
        row.attrs["data-key"]: row.children[1].text_content()
        for row in by_dom_id(dom, "panel-attrs").children
        if row.tag == "tr"
    }
    assert rows["id"] == "a_palace" and rows["type"] == "action"
    assert rows["status"] == "done" and rows["ticket"] == "PM-7" and rows["content"] == "Visit the Forbidden City"
    commits = [li for li in by_dom_id(dom, "panel-history").children if li.tag == "li"]
    assert [li.attrs["data-t"] for li in commits] == ["1", "2"]
    assert "load" in commits[0].text_content()
    assert "ticket bought <online>" in commits[1].text_content() and "tester" in commits[1].text_content()
    assert '"status":"done"' in commits[1].text_content().replace(" ", "")
    edge_lines = [li.text_content() for li in by_dom_id(dom, "panel-edges").children if li.tag == "li"]
    assert "d2 → parent_of" in edge_lines and "before → a_jingshan" in edge_lines
    assert "related_to → e_palace" in edge_lines or "e_palace → related_to" in edge_lines


@pytest.mark.slow
def test_chromium_shows_hostile_text_as_text(chromium, tmp_path, hostile):
    target = HOSTILE[1]
    page = tmp_path / "hostile.html"
    page.write_text(to_html(hostile, highlight="root.actions"), encoding="utf-8")
    url = page.as_uri() + "#select=" + urllib.parse.quote(target, safe="")
    dom = read_dom(run_chromium(chromium, tmp_path, url, "--dump-dom"))
    body = next(e for e in dom.walk() if e.tag == "body")
    assert body.attrs.get("data-ready") == "1", by_dom_id(dom, "error").text_content()
    tags = [e.tag for e in dom.walk()]
    assert "img" not in tags and "b" not in tags and tags.count("script") == 2
    drawn = {e.attrs["data-id"]: e for e in dom.walk() if e.tag == "g" and "node" in e.classes}
    assert set(drawn) == {n.id for n in picture(hostile).nodes}
    assert {i for i, e in drawn.items() if "highlight" in e.classes} == set(HOSTILE)
    assert by_dom_id(dom, "panel-title").text_content() == target
    notes = [r for r in by_dom_id(dom, "panel-attrs").children if r.tag == "tr" and r.attrs["data-key"] == "note"]
    assert notes[0].children[1].text_content() == target


@pytest.mark.slow
def test_chromium_screenshot_of_the_spec_travel_graph(chromium, tmp_path, travel_graph_path):
    memory = Memory.from_file(travel_graph_path)
    page = tmp_path / "travel.html"
    page.write_text(to_html(memory, highlight="nodes.where(status = 'failed')", title=travel_graph_path.name), encoding="utf-8")
    shot = tmp_path / "travel.png"
    run_chromium(chromium, tmp_path, page.as_uri(), "--window-size=1400,900", f"--screenshot={shot}")
    header = shot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(header[16:20], "big") == 1400 and int.from_bytes(header[20:24], "big") == 900
    assert shot.stat().st_size > 20_000  # a drawing, not a blank page


# -- hgm show --format / --highlight -------------------------------------------------------------


@pytest.fixture
def trip_file(tmp_path) -> str:
    path = tmp_path / "trip.json"
    path.write_text(json.dumps(sample_document()), encoding="utf-8")
    return str(path)


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    from hgm_engine.cli import main

    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("fmt, start", [("mermaid", "flowchart TD"), ("dot", "digraph hgm {"), ("html", "<!DOCTYPE html>")])
def test_show_prints_each_format(capsys, trip_file, fmt, start):
    code, out, err = run_main(capsys, "show", "--graph", trip_file, "--format", fmt, "--root", "d1", "--highlight", "#a_hotel.children")
    assert code == 0 and out.startswith(start), err
    memory = Memory.from_document(json.loads(pathlib.Path(trip_file).read_text(encoding="utf-8")))
    expected = render(memory, fmt, root="d1", highlight="#a_hotel.children", title=trip_file)
    if fmt == "html":  # the load's timestamp differs between the two loads

        def timeless(page):
            data = page_data(page)
            for node in data["nodes"]:
                for entry in node["history"]:
                    entry["timestamp"] = 0
            return data

        assert timeless(out) == timeless(expected)
        assert page_data(out)["highlight"]["ids"] == ["a_compare", "a_deposit"]
    else:
        assert out.rstrip("\n") == expected


def test_show_tree_marks_the_highlight(capsys, trip_file):
    code, out, _ = run_main(capsys, "show", "--graph", trip_file, "--root", "d1", "--highlight", "#f_rate.derived{1,}")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("highlight: #f_rate.derived{1,}  (2 results")
    assert not any(line.endswith(("◀", "◁", "<==", "<..")) for line in lines[1:])  # results are outside d1's tree
    code, out, _ = run_main(capsys, "show", "--graph", trip_file, "--highlight", "#f_rate.derived{1,}")
    marked = [line.split()[0] for line in out.splitlines()[1:] if line.endswith(("◀", "◁"))]
    assert marked == ["f_rate", "r_booking", "r_budget"]
    code, out, _ = run_main(capsys, "show", "--graph", trip_file, "--root", "d3", "--highlight", "root.descendants.where(status = 'failed')")
    assert [line for line in out.splitlines() if line.endswith("◀")] == [
        "├── a_wall_bus [action] failed: Join the group bus tour to Badaling  ◀"
    ]
    assert out.splitlines()[1] == "d3 [goal] pending: Day 3: the Great Wall  ◁"


def test_show_highlight_errors_exit_2_and_bad_states_exit_1(capsys, trip_file, tmp_path):
    code, _, err = run_main(capsys, "show", "--graph", trip_file, "--format", "html", "--highlight", "root.subgoals[")
    assert code == 2 and "syntax" in err
    code, _, err = run_main(capsys, "show", "--graph", trip_file, "--highlight", "root.nope")
    assert code == 2 and "unknown-name" in err
    db = str(tmp_path / "m.db")
    assert run_main(capsys, "load", trip_file, "--db", db)[0] == 0
    code, _, err = run_main(capsys, "show", "--db", db, "--format", "dot", "--as-of", "no-such-snapshot")
    assert code == 1 and "no-such-snapshot" in err
    code, out, _ = run_main(capsys, "show", "--db", db, "--format", "html", "--as-of", "1", "--highlight", "root")
    assert code == 0 and page_data(out)["t"] == 1 and page_data(out)["highlight"]["ids"] == ["trip", "orders"]


def test_show_writes_pictures_as_utf8_whatever_the_terminal(trip_file):
    import sys

    environment = {**os.environ, "PYTHONIOENCODING": "ascii"}
    run = subprocess.run(
        [sys.executable, "-m", "hgm_engine", "show", "--graph", trip_file, "--format", "html"],
        capture_output=True, env=environment, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "hgm — " in run.stdout.decode("utf-8")
