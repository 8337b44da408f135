"""The picture formats by name: :func:`render` draws a memory in the one asked for.

>>> FORMATS
('mermaid', 'dot', 'html')
"""

from __future__ import annotations

from typing import Any

from hgm_engine.render.dot import to_dot
from hgm_engine.render.html import to_html
from hgm_engine.render.mermaid import to_mermaid
from hgm_engine.render.picture import Drawable

__all__ = ["FORMATS", "render"]

FORMATS = ("mermaid", "dot", "html")


def render(memory: Drawable, fmt: str, **options: Any) -> str:
    """The picture of ``memory`` in format ``fmt`` (``mermaid``, ``dot`` or ``html``); options
    are those of :func:`to_mermaid`, :func:`to_dot` and :func:`to_html` (``title``: HTML only).

    >>> from hgm_engine.cli import sample_document
    >>> from hgm_engine.memory import Memory
    >>> print(render(Memory.from_document(sample_document()), "dot", root="orders").splitlines()[4])
        "orders" [label="orders [goal]\\nactive: Answer the user's order-status questions", fillcolor="#dbeafe", color="#3b82f6", class="goal"];
    >>> render(Memory(), "png")
    Traceback (most recent call last):
    ...
    ValueError: unknown picture format 'png' (known: mermaid, dot, html)
    """
    if fmt == "mermaid":
        options.pop("title", None)
        return to_mermaid(memory, **options)
    if fmt == "dot":
        options.pop("title", None)
        return to_dot(memory, **options)
    if fmt == "html":
        return to_html(memory, **options)
    raise ValueError(f"unknown picture format {fmt!r} (known: {', '.join(FORMATS)})")
