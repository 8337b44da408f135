"""The ``hgm`` command: query, explain, validate and show a memory graph from a terminal, and
keep a durable memory in a SQLite file (``--db``) changed only through transactions.

::

    hgm query "root.subgoals[0].actions.where(status='pending')" --graph trip.json
    hgm query "#a_hotel.results" --graph trip.json --json
    hgm explain "root.descendants.where(status='failed').paths()"
    hgm validate trip.json
    hgm show --graph trip.json --root d1 --depth 2
    hgm demo

    hgm load trip.json --db memory.db              # the initial load: t=1
    hgm apply change.json --db memory.db [--dry-run] [--json]   # FILE may be - (stdin)
    hgm query "root.actions" --db memory.db --as-of 1
    hgm export --db memory.db [--as-of T] [--compact] > trip.json
    hgm history --db memory.db [NODE_ID]
    hgm diff 1 before-change --db memory.db
    hgm revert 2 --db memory.db
    hgm snapshot before-change --db memory.db ; hgm snapshots --db memory.db
    hgm constraint add NAME "each action where status = 'done' must exists(results)" --db memory.db
    hgm constraint list --db memory.db ; hgm constraint remove NAME --db memory.db

``query`` and ``show`` read a graph file (``--graph``) or a memory (``--db``); ``--as-of T``
(a commit number or a snapshot name) needs ``--db``. ``load``, ``apply`` and ``constraint add``
create the SQLite file when it does not exist; every other ``--db`` command refuses a missing
file (exit 1) rather than quietly starting an empty memory. ``hgm --help`` lists the commands
and ``hgm COMMAND --help`` explains one, with examples.

Exit codes (the same for every command):

- ``0`` success. A query that finds nothing succeeds too (an empty list, 0 or false).
- ``1`` a file that cannot be read, is not JSON or breaks the schema (``hgm validate`` finding
  problems included, a graph file ``hgm load`` refuses included), a malformed transaction, a
  conflict with ``base_t`` or a revert of something changed since, an unknown ``--root``,
  node, snapshot or ``t``, a ``--db`` that cannot be opened, a malformed command line, or any
  other failure.
- ``2`` a query error: any :class:`~hgm_engine.errors.HGMError` raised while compiling,
  binding or running a query (``syntax``, ``unknown-name``, ``invalid-argument``,
  ``misplaced``, ``invalid-regex``, ``missing-parameter``, ``missing-focus``). A ``--params``
  value that is not a JSON object is an ``invalid-argument`` query error as well, and so is a
  constraint text that does not compile (``hgm constraint add``).
- ``3`` refused by constraints: ``hgm apply`` or ``hgm revert`` whose result breaks one, or
  ``hgm constraint add`` of a constraint the memory already breaks. Every violation is listed.

With ``--json``, once the command line has been parsed, standard output carries exactly one
JSON document whatever happens: the result, or ``{"error": {"category", "message", "line",
"column", ...}}`` (docs/formats.md). ``hgm apply --json`` and ``hgm revert --json`` always
print a transaction report (formats.md): refused ones with ``"committed": false``, ``"t":
null`` and the violations, failed ones with an ``"error"`` as well. Without ``--json``,
results go to standard output for people and errors (and refusals) to standard error with
their category, position and a caret under the place. ``hgm export`` always writes the graph
file format.

The modules, one per command group, each adding its commands and their arguments to the parser
(``register(commands)``):

- :mod:`~hgm_engine.cli.query` — ``query``, ``explain``, ``validate``
- :mod:`~hgm_engine.cli.show` — ``show``
- :mod:`~hgm_engine.cli.store` — ``load``, ``export``, ``apply``, ``history``, ``diff``,
  ``revert``, ``snapshot``, ``snapshots``
- :mod:`~hgm_engine.cli.constraints` — ``constraint add|list|remove``
- :mod:`~hgm_engine.cli.demo` — ``demo`` (scenarios come from the ``hgm.demos`` entry points)
- :mod:`~hgm_engine.cli.rules` — ``rules`` and the planner views (``frontier``, ``stale``, ...)
- :mod:`~hgm_engine.cli.paths` — stored paths (``ingest``, ``locate``, ``paths``, ...)
- :mod:`~hgm_engine.cli.llm` — ``rewrite``
- :mod:`~hgm_engine.cli.servers` — ``serve`` and ``mcp``

What they share lives in :mod:`~hgm_engine.cli.common` (output, exit codes, errors, files,
opening a memory, reports), :mod:`~hgm_engine.cli.arguments` (parser building blocks) and
:mod:`~hgm_engine.cli.progress` (the progress display of long commands, on a terminal only);
:mod:`~hgm_engine.cli.app` builds the parser and runs :func:`main`. The text pictures
(tables, trees, changes) are :mod:`hgm_engine.render.text`.

>>> main(["--version"])  # doctest: +ELLIPSIS
hgm 0.1...
0
"""

from hgm_engine.cli.app import build_parser, main
from hgm_engine.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_QUERY_ERROR, EXIT_REFUSED
from hgm_engine.cli.demo import sample_document

__all__ = [
    "main",
    "build_parser",
    "sample_document",
    "EXIT_OK",
    "EXIT_FAILURE",
    "EXIT_QUERY_ERROR",
    "EXIT_REFUSED",
]
