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


# -- a browser driven over the DevTools protocol: measuring what is on screen ---------------------


class Browser:
    """Headless Chromium driven over ``--remote-debugging-pipe`` (the DevTools protocol as
    NUL-separated JSON on file descriptors 3 and 4): open a page, wait for its script, and
    evaluate expressions in it, so a test can measure boxes where the browser drew them."""

    def __init__(self, chromium: str, tmp_path: pathlib.Path, width: int, height: int):
        to_browser_read, to_browser_write = os.pipe()
        from_browser_read, from_browser_write = os.pipe()

        def wire() -> None:  # in the child: its fd 3 reads our commands, fd 4 writes its answers
            a, b = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(a, 3)
            os.dup2(b, 4)

        profile = tmp_path / f"cdp-profile-{len(list(tmp_path.iterdir()))}"
        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-extensions",
             "--host-resolver-rules=MAP * ~NOTFOUND", f"--window-size={width},{height}", f"--user-data-dir={profile}",
             "about:blank"],
            preexec_fn=wire, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.commands = os.fdopen(to_browser_write, "wb", buffering=0)
        self.answers = os.fdopen(from_browser_read, "rb", buffering=0)
        self.buffer = b""
        self.next_id = 0
        self.session = None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable")

    def _send(self, method: str, params: dict) -> int:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if self.session is not None:
            message["sessionId"] = self.session
        self.commands.write(json.dumps(message).encode() + b"\0")
        return self.next_id

    def _wait(self, number: int | None = None, event: str | None = None) -> dict:
        import select
        import time

        deadline = time.monotonic() + 60
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                message = json.loads(raw)
                if event is not None and message.get("method") == event:
                    return message
                if number is not None and message.get("id") == number:
                    assert "error" not in message, message["error"]
                    return message["result"]
            left = deadline - time.monotonic()
            assert left > 0, "Chromium did not answer within 60 s"
            ready, _, _ = select.select([self.answers], [], [], left)
            chunk = self.answers.read(1 << 16) if ready else b""
            assert chunk or not ready, "Chromium closed the pipe"
            self.buffer += chunk

    def call(self, method: str, **params) -> dict:
        return self._wait(self._send(method, params))

    def open(self, url: str) -> None:
        for address in ("about:blank", url):  # by way of a blank page: a new fragment alone loads nothing
            self._send("Page.navigate", {"url": address})
            self._wait(event="Page.loadEventFired")
        ready = self.js("new Promise(done => { (function poll() { if (document.body.dataset.ready) done(true);"
                        " else setTimeout(poll, 20); })(); })")
        assert ready, "the page's script did not finish"

    def js(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def rect(self, selector: str) -> dict:
        return self.js(f"JSON.parse(JSON.stringify(document.querySelector({json.dumps(selector)}).getBoundingClientRect()))")

    def close(self) -> None:
        try:
            self._send("Browser.close", {})
            self.process.wait(timeout=30)
        except Exception:
            self.process.kill()
            self.process.wait(timeout=30)
        finally:
            self.commands.close()
            self.answers.close()


@pytest.fixture
def browser(chromium, tmp_path):
    opened: list[Browser] = []

    def open_browser(width: int = 1200, height: int = 700) -> Browser:
        opened.append(Browser(chromium, tmp_path, width, height))
        return opened[-1]

    yield open_browser
    for one in opened:
        one.close()


def inside(inner: dict, outer: dict, slack: float = 0.5) -> bool:
    return (inner["left"] >= outer["left"] - slack and inner["right"] <= outer["right"] + slack
            and inner["top"] >= outer["top"] - slack and inner["bottom"] <= outer["bottom"] + slack)


def rightmost_arc_memory() -> Memory:
    """Facts in the rightmost column joined to each other: their arcs bulge out to the right."""
    nodes = [{"id": "g", "type": "goal", "content": "plan"}, {"id": "a", "type": "action", "status": "pending"},
             {"id": "e", "type": "entity", "content": "place"}]
    edges = [{"from": "g", "to": "a", "type": "parent_of"}, {"from": "a", "to": "e", "type": "related_to"}]
    for i in range(12):
        nodes.append({"id": f"f{i}", "type": "fact", "content": f"fact number {i} about the place"})
        edges.append({"from": "e", "to": f"f{i}", "type": "related_to"})
    for i in range(6):  # f0 - f11, f1 - f10, ...: far apart in one column, the widest arcs
        edges.append({"from": f"f{i}", "to": f"f{11 - i}", "type": "derived_from"})
    return Memory.from_document({"format": "hgm-graph/1", "nodes": nodes, "edges": edges})


@pytest.mark.slow
def test_chromium_keeps_the_rightmost_column_and_its_arcs_inside_the_page(browser, tmp_path):
    page = tmp_path / "arcs.html"
    page.write_text(to_html(rightmost_arc_memory()), encoding="utf-8")
    window = browser(900, 600)
    window.open(page.as_uri())
    svg = window.rect("#graph")
    drawn = window.js("(b => ({x: b.x, y: b.y, width: b.width, height: b.height}))(document.getElementById('graph').getBBox())")
    # everything drawn (boxes, arcs, labels) is inside the picture, margins included
    assert drawn["x"] + drawn["width"] <= svg["width"] and drawn["y"] + drawn["height"] <= svg["height"]
    boxes = window.js("Array.from(document.querySelectorAll('g.node')).map(g => [g.dataset.id, "
                      "JSON.parse(JSON.stringify(g.getBoundingClientRect()))])")
    assert boxes and all(inside(box, svg) for _, box in boxes)
    labels = window.js("Array.from(document.querySelectorAll('.edge-label')).map(t => "
                       "JSON.parse(JSON.stringify(t.getBoundingClientRect())))")
    assert labels and all(inside(label, svg) for label in labels)
    # scrolled all the way right, the rightmost column is on screen, panel open or not
    for url in (page.as_uri(), page.as_uri() + "#select=g"):
        window.open(url)
        window.js("var c = document.getElementById('canvas'); c.scrollLeft = c.scrollWidth; true")
        canvas = window.rect("#canvas")
        rightmost = max((box for _, box in window.js(
            "Array.from(document.querySelectorAll('g.node')).map(g => [g.dataset.id, "
            "JSON.parse(JSON.stringify(g.getBoundingClientRect()))])")), key=lambda box: box["right"])
        assert rightmost["right"] <= canvas["right"] - 10 + 0.5


@pytest.mark.slow
def test_chromium_scrolls_the_highlight_into_view_and_focuses_it(browser, tmp_path):
    page = tmp_path / "far.html"
    page.write_text(to_html(Memory.from_document(sample_document()), highlight="#f_sold_out"), encoding="utf-8")
    window = browser(1000, 600)
    window.open(page.as_uri())
    assert inside(window.rect("#node-f_sold_out"), window.rect("#canvas"))
    assert window.js("document.activeElement.dataset.id") == "f_sold_out"
    # a node asked for with #select= wins the scroll and the focus; the highlight stays marked
    window.open(page.as_uri() + "#select=o_reply")
    assert inside(window.rect("#node-o_reply"), window.rect("#canvas"))
    assert window.js("document.activeElement.dataset.id") == "o_reply"
    assert window.js("document.getElementById('node-f_sold_out').classList.contains('highlight')")


@pytest.mark.slow
def test_chromium_steps_through_the_highlighted_results(browser, tmp_path):
    page = tmp_path / "many.html"
    query = "nodes.where(type = 'fact')"
    memory = Memory.from_document(sample_document())
    page.write_text(to_html(memory, highlight=query), encoding="utf-8")
    window = browser(1000, 600)
    window.open(page.as_uri())
    ids = memory.query(query).ids
    assert window.js("document.activeElement.dataset.id") == ids[0]
    window.js("document.getElementById('query-next').click(); true")
    assert window.js("document.activeElement.dataset.id") == ids[1]
    assert inside(window.rect("#" + dom_id("node-", ids[1])), window.rect("#canvas"))
    window.js("document.getElementById('query-previous').click(); document.getElementById('query-previous').click(); true")
    assert window.js("document.activeElement.dataset.id") == ids[-1]


# -- stale and blocked marks ------------------------------------------------------------------------


MARK_RULES = """
propagate derived_from backward depth 3
rule closed: on add fact where content =~ 'closed' then mark related_entities.related.where(type = 'action', status = 'pending') as blocked because 'closed on Mondays'
"""


@pytest.fixture
def marked_memory() -> Memory:
    """The sample with a_palace blocked (the palace is closed) and r_booking, r_budget stale
    (the room rate they derive from changed)."""
    memory = Memory.from_document(sample_document())
    memory.load_rules(MARK_RULES)
    memory.apply({"ops": [{"op": "update_node", "id": "f_rate", "set": {"content": "the rate is now 900 CNY"}}]})
    memory.apply({"ops": [{"op": "add_node", "id": "f_closed", "type": "fact", "content": "the palace is closed"},
                          {"op": "add_edge", "from": "e_palace", "to": "f_closed", "type": "related_to"}]})
    states = {entry["id"]: entry["state"] for entry in memory.stale()}
    assert states["a_palace"] == "blocked" and states["r_booking"] == "needs_review", states
    return memory


def test_the_tree_shows_stale_and_blocked_marks_with_their_cause(marked_memory):
    from hgm_engine.render import tree_lines

    lines = tree_lines(marked_memory.graph, unicode=False)
    palace = next(line for line in lines if "a_palace [action]" in line)
    assert palace.endswith("! blocked because f_closed: closed on Mondays")
    booking = next(line for line in lines if line.strip().startswith("r_booking [result]"))
    assert "! needs_review because f_rate" in booking
    assert not any("!" in line for line in lines if "a_duck [action]" in line)


def test_show_prints_the_marks_in_the_tree(marked_memory, tmp_path, capsys):
    db = str(tmp_path / "m.db")
    with Memory.open(db) as durable:
        durable.load(marked_memory.export())
    code, out, _ = run_main(capsys, "show", "--db", db, "--root", "d2")
    assert code == 0 and "a_palace [action] pending: Visit the Forbidden City  ! blocked" in out


def test_mermaid_and_dot_draw_the_marks(marked_memory):
    mermaid = to_mermaid(marked_memory)
    names = {line.split("[", 1)[0].strip(): line for line in mermaid.splitlines() if '["' in line}
    palace = next(name for name, line in names.items() if "a_palace [action]" in line)
    assert "#33; blocked because f_closed" in names[palace] or "! blocked because f_closed" in names[palace]
    assert re.search(rf"^    class (\S+,)*{palace}(,\S+)* blocked$", mermaid, re.M)
    assert "classDef blocked " in mermaid and "classDef needs_review " in mermaid
    nodes = dict(dot_statements(to_dot(marked_memory))[0])
    nodes = {node_id: dict(attributes, label=_unescape_label(attributes["label"])) for node_id, attributes in nodes.items()}
    assert "blocked" in nodes["a_palace"]["class"].split() and "! blocked because f_closed" in nodes["a_palace"]["label"]
    assert "needs_review" in nodes["r_booking"]["class"].split()
    assert "needs_review" not in nodes["a_duck"]["class"]


def test_html_data_carries_the_marks(marked_memory):
    data = page_data(to_html(marked_memory))
    by_id = {n["id"]: n for n in data["nodes"]}
    assert by_id["a_palace"]["dirty"] == "blocked" and by_id["r_booking"]["dirty"] == "needs_review"
    assert by_id["a_palace"]["dirty_note"] == "! blocked because f_closed: closed on Mondays"
    assert by_id["a_duck"]["dirty"] is None


@pytest.mark.slow
def test_chromium_draws_stale_and_blocked_marks_and_lists_them_in_the_panel(marked_memory, browser, tmp_path):
    page = tmp_path / "marks.html"
    page.write_text(to_html(marked_memory), encoding="utf-8")
    window = browser(1200, 700)
    window.open(page.as_uri() + "#select=a_palace")
    assert window.js("document.getElementById('node-a_palace').classList.contains('blocked')")
    assert window.js("document.getElementById('node-r_booking').classList.contains('needs_review')")
    assert window.js("document.querySelector('#node-a_palace .dirty-badge').textContent") == "blocked"
    assert window.js("document.querySelector('#node-r_booking .dirty-badge').textContent") == "needs review"
    assert not window.js("document.getElementById('node-a_duck').querySelector('.dirty-badge')")
    legend = window.js("document.getElementById('legend').textContent")
    assert "needs review" in legend and "blocked" in legend
    marks = window.js("Array.from(document.querySelectorAll('#panel-marks li')).map(li => li.textContent)")
    assert len(marks) == 1 and "blocked" in marks[0] and "f_closed" in marks[0] and "closed on Mondays" in marks[0]


# -- a picture too large to draw whole ----------------------------------------------------------------


def wide_graph(goals: int, actions: int) -> MemoryGraph:
    records = [("top", "goal", {"content": "everything"})]
    edges = []
    for g in range(goals):
        records.append((f"g{g}", "goal", {"content": f"goal {g}"}))
        edges.append(("top", f"g{g}", "parent_of", {}))
        for a in range(actions):
            records.append((f"a{g}_{a}", "action", {"status": "failed" if (g, a) == (goals - 1, actions - 1) else "done"}))
            edges.append((f"g{g}", f"a{g}_{a}", "parent_of", {}))
    return MemoryGraph.from_records(records, edges)


def test_a_large_picture_shows_the_neighbourhood_of_the_highlight_and_says_what_was_left_out():
    graph = wide_graph(60, 50)  # 3061 nodes
    data = page_data(to_html(graph, highlight="nodes.where(status = 'failed')"))
    ids = [n["id"] for n in data["nodes"]]
    assert len(ids) == 2000 and {"a59_49", "g59", "top"} <= set(ids)
    assert data["omitted"] == 3061 - 2000 and data["total_nodes"] == 3061
    assert data["note"].startswith("showing 2000 of 3061 nodes (max_nodes 2000): the highlight's 1 result")
    assert "1061 nodes" in data["note"] and "left out" in data["note"]
    assert next(n for n in data["nodes"] if n["id"] == "a59_49")["mark"] == "result"


def test_the_cap_is_configurable_and_centres_on_the_root_without_a_highlight():
    graph = wide_graph(20, 10)
    data = page_data(to_html(graph, root="g7", max_nodes=5))
    assert [n["id"] for n in data["nodes"]][:1] == ["g7"] and len(data["nodes"]) == 5
    assert data["note"].startswith("showing 5 of 11 nodes (max_nodes 5): the root 'g7'")
    g7 = next(n for n in data["nodes"] if n["id"] == "g7")
    assert g7["hidden_children"] == 6  # 10 actions, 4 drawn
    assert len(page_data(to_html(graph, max_nodes=None))["nodes"]) == len(graph)
    with pytest.raises(HGMError, match="max_nodes must be 1 or more"):
        to_html(graph, max_nodes=0)


def test_the_text_formats_take_the_cap_and_say_so():
    graph = wide_graph(20, 10)
    mermaid = to_mermaid(graph, max_nodes=12)
    assert mermaid.count('["') == 12 and "%% showing 12 of 221 nodes" in mermaid
    dot = to_dot(graph, max_nodes=12)
    assert "showing 12 of 221 nodes" in dot and "--max-nodes" in dot


def test_a_100k_node_memory_draws_a_bounded_page_quickly():
    import time

    graph = wide_graph(1000, 100)  # 101,001 nodes
    started = time.thread_time()  # CPU time of this thread: the work, not the machine's load
    page = to_html(graph, highlight="#a999_99")
    seconds = time.thread_time() - started
    assert len(page) < 3_000_000 and len(page_data(page)["nodes"]) == 2000
    assert seconds < 20, f"{seconds:.1f} s"


def test_show_max_nodes_caps_the_picture(capsys, trip_file):
    code, out, _ = run_main(capsys, "show", "--graph", trip_file, "--format", "html", "--max-nodes", "5",
                            "--highlight", "#a_wall_bus")
    data = page_data(out)
    assert code == 0 and len(data["nodes"]) == 5 and "a_wall_bus" in {n["id"] for n in data["nodes"]}
    code, out, _ = run_main(capsys, "show", "--graph", trip_file, "--format", "mermaid", "--max-nodes", "3")
    assert code == 0 and out.count('["') == 3
    code, _, err = run_main(capsys, "show", "--graph", trip_file, "--max-nodes", "0")
    assert code == 1 and "--max-nodes" in err
