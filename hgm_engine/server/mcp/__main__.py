"""``python -m hgm_engine.server.mcp``: ``hgm mcp`` without the ``hgm`` command.

>>> from hgm_engine.server.mcp import main
>>> callable(main)
True
"""

import sys

from hgm_engine.server.mcp.command import main

__all__: list[str] = []

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
