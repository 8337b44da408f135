"""``bench/commit_stages.py`` with the memory's store hooks (the search index's upkeep) emptied
after ``open_copy``: the commit without issue 14's upkeep, for its share (the fifth and sixth
sessions' method). Run under callgrind like commit_stages.py; TREE first:

    PYTHONHASHSEED=0 valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \
        python bench/results/commit-s7/no_upkeep.py TREE --nodes 10000 --commits 50 --reduce --no-gc --graph-dir G
"""

import pathlib
import sys

tree = sys.argv.pop(1)
sys.path.insert(0, tree)
sys.path.insert(1, str(pathlib.Path(__file__).resolve().parents[3]))
from bench import commit_stages  # noqa: E402

_open = commit_stages.open_copy


def open_copy(*args, **kwargs):
    memory = _open(*args, **kwargs)
    memory.store_hooks = []
    return memory


commit_stages.open_copy = open_copy
sys.exit(commit_stages.main())
