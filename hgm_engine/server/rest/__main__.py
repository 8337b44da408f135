"""``python -m hgm_engine.server.rest``: ``hgm serve`` without the ``hgm`` command.

>>> from hgm_engine.server.rest import main
>>> callable(main)
True
"""

import sys

from hgm_engine.server.rest.command import main

__all__: list[str] = []

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
