"""``python -m hgm_engine``: the ``hgm`` command without the console script.

>>> from hgm_engine.cli import main
>>> main(["--version"])  # doctest: +ELLIPSIS
hgm 0.1...
0
"""

import sys

from hgm_engine.cli import main

if __name__ == "__main__":
    sys.exit(main())
