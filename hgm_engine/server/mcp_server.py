"""``python -m hgm_engine.server.mcp_server``: the old name of ``python -m hgm_engine.server.mcp``
(``hgm mcp``), kept so that the MCP clients configured with it keep working. The server's
code is the package :mod:`hgm_engine.server.mcp`; import its names from there.

>>> from hgm_engine.server.mcp import main
>>> callable(main)
True
"""

import sys

from hgm_engine.server.mcp.command import main

__all__: list[str] = []

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
