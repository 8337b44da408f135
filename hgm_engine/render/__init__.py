"""Pictures of a memory: Mermaid, DOT and a self-contained HTML page.

>>> from hgm_engine import Memory
>>> m = Memory.from_document({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []})
>>> render(m, "mermaid").splitlines()[0]
'flowchart TD'
"""

from hgm_engine.render.pictures import FORMATS, Highlight, Picture, picture, render, to_dot, to_html, to_mermaid

__all__ = ["FORMATS", "Picture", "Highlight", "picture", "render", "to_mermaid", "to_dot", "to_html"]
