"""Pictures of a memory: terminal text, Mermaid, Graphviz DOT and one self-contained HTML page.

Every function here is pure: a memory (or a bare :class:`~hgm_engine.model.MemoryGraph`) in,
text out. What is drawn is the same in every format — :func:`picture` decides it (the
``parent_of`` hierarchy with the nodes in no hierarchy beside it, cut by ``root``/``depth``, at
``as_of``, marked by ``highlight``) and each format only draws that :class:`Picture`:

- :mod:`~hgm_engine.render.picture`: the picture model and what a picture shows;
- :mod:`~hgm_engine.render.labels`: the captions, counts and colours every format shares;
- :mod:`~hgm_engine.render.mermaid`, :mod:`~hgm_engine.render.dot`: the text formats;
- :mod:`~hgm_engine.render.html`: the page's layout and data; the page itself (HTML, CSS,
  script) is package data in ``assets/``;
- :mod:`~hgm_engine.render.formats`: the formats by name and :func:`render`;
- :mod:`~hgm_engine.render.text`: lines for a terminal (the tree, query results, changes),
  which the CLI and the planner scenarios print.

>>> from hgm_engine import Memory
>>> m = Memory.from_document({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []})
>>> render(m, "mermaid").splitlines()[0]
'flowchart TD'
"""

from hgm_engine.render.dot import to_dot
from hgm_engine.render.formats import FORMATS, render
from hgm_engine.render.html import MAX_NODES, to_html
from hgm_engine.render.mermaid import to_mermaid
from hgm_engine.render.picture import Highlight, Picture, dirty_state, picture
from hgm_engine.render.text import change_lines, result_lines, tree_lines

__all__ = [
    "FORMATS",
    "MAX_NODES",
    "Picture",
    "Highlight",
    "picture",
    "dirty_state",
    "render",
    "to_mermaid",
    "to_dot",
    "to_html",
    "tree_lines",
    "result_lines",
    "change_lines",
]
