"""The databases a user would pick instead of hgm, loaded with the same generated memory.

Each peer stores the graph document of ``bench/generate.py`` in its own durable form and
answers the twelve benchmark queries (``baselines.QUERIES``) with a query written for it in
its own language: SQLite and DuckDB with SQL (recursive CTEs for the closures, window
functions for "the first subgoal in edge order"), Kùzu with Cypher. Answers are compared to
hgm's as *sets* of ids (or the count): SQL and Cypher give no order unless asked, and asking
for hgm's order would cost them a sort hgm gets from its adjacency.

Every peer has the same four verbs:

- ``build(doc, path)`` — write the store at ``path`` (not timed by the benchmark),
- ``open(path)`` — open it, as a fresh process would (the *reopen* time),
- ``run(name, anchors)`` — answer one query: a list of ids, or an int for a count,
- ``close()``.

Stores, schemas and indexes (what a careful user would set up):

- **SQLite** (the standard library's ``sqlite3``): ``nodes(id TEXT PRIMARY KEY, seq, type,
  status, priority, confidence, ...)`` with an index on ``(type, status)``; ``edges(src, dst,
  type, ord, seq)`` with covering indexes ``(src, type, dst)`` and ``(dst, type, src)``;
  WAL journal, ``synchronous=FULL`` (hgm's own settings); no ``ANALYZE`` (its statistics
  made SQLite's planner slower on every query here).
- **DuckDB**: the same tables and SQL (its joins are hash joins, the indexes are ART
  indexes on the keys); default settings.
- **Kùzu**: one node table ``N`` (every node type, primary key ``id``) and one relationship
  table per edge type; variable-length patterns for the closures (``*1..30``: Kùzu's default
  bound; the generated memories are at most 12 levels deep, and every answer is checked);
  default settings.

>>> doc = {"nodes": [{"id": "g", "type": "goal"}], "edges": []}
>>> sorted(PEERS)
['duckdb', 'kuzu', 'sqlite']
>>> _node_row(doc["nodes"][0], 0)[:3]
('g', 0, 'goal')
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import sqlite3
import tempfile
from typing import Any

__all__ = ["PEERS", "SqlitePeer", "DuckdbPeer", "KuzuPeer", "available"]

# Node columns every peer stores: the id, the creation sequence, the type and the attributes
# the generator writes (lists as JSON text).
_NODE_COLUMNS = (
    ("id", "TEXT"), ("seq", "BIGINT"), ("type", "TEXT"), ("status", "TEXT"), ("priority", "BIGINT"),
    ("confidence", "DOUBLE"), ("content", "TEXT"), ("name", "TEXT"), ("kind", "TEXT"), ("created", "BIGINT"),
    ("cost", "DOUBLE"), ("slot", "TEXT"), ("ok", "BOOLEAN"), ("value", "BIGINT"), ("tags", "TEXT"),
)
_ATTRS = tuple(name for name, _ in _NODE_COLUMNS[3:])


def _node_row(node: dict[str, Any], seq: int) -> tuple:
    row = [node["id"], seq, node["type"]]
    for name in _ATTRS:
        value = node.get(name)
        if isinstance(value, list):
            value = json.dumps(value)
        row.append(value)
    return tuple(row)


def _edge_rows(doc: dict[str, Any]) -> list[tuple]:
    rows = []
    for seq, e in enumerate(doc["edges"]):
        order = e.get("order")
        rows.append((e["from"], e["to"], e["type"], order if type(order) in (int, float) else None, seq))
    return rows


# ---------------------------------------------------------------------------------------------
# SQL (SQLite and DuckDB)
# ---------------------------------------------------------------------------------------------

_ROOTS = (
    "roots AS (SELECT n.id FROM nodes n WHERE n.type = 'goal' AND NOT EXISTS "
    "(SELECT 1 FROM edges p WHERE p.dst = n.id AND p.type = 'parent_of'))"
)

# name -> (SQL, names of the anchors bound to its ? parameters, in order)
SQL: dict[str, tuple[str, tuple[str, ...]]] = {
    "card": (
        "WITH " + _ROOTS + ", firsts AS (SELECT e.dst AS id, ROW_NUMBER() OVER (PARTITION BY e.src "
        "ORDER BY e.ord IS NULL, e.ord, e.seq) AS rn FROM roots r JOIN edges e ON e.src = r.id AND e.type = 'parent_of' "
        "JOIN nodes c ON c.id = e.dst AND c.type = 'goal') "
        "SELECT DISTINCT a.id FROM firsts f JOIN edges e ON e.src = f.id AND e.type = 'parent_of' "
        "JOIN nodes a ON a.id = e.dst WHERE f.rn = 1 AND a.type = 'action' AND a.status = 'pending'",
        (),
    ),
    "project_pending": (
        "WITH RECURSIVE d(id) AS (SELECT dst FROM edges WHERE src = ? AND type = 'parent_of' "
        "UNION SELECT e.dst FROM d JOIN edges e ON e.src = d.id AND e.type = 'parent_of') "
        "SELECT n.id FROM d JOIN nodes n ON n.id = d.id WHERE n.type = 'action' AND n.status = 'pending'",
        ("big_root",),
    ),
    "hub_facts": (
        "SELECT DISTINCT n.id FROM (SELECT dst AS id FROM edges WHERE src = ? AND type = 'related_to' "
        "UNION ALL SELECT src FROM edges WHERE dst = ? AND type = 'related_to') x JOIN nodes n ON n.id = x.id "
        "WHERE n.type = 'fact'",
        ("hub_entity", "hub_entity"),
    ),
    "entity_facts": (
        "SELECT DISTINCT n.id FROM (SELECT dst AS id FROM edges WHERE src = ? AND type = 'related_to' "
        "UNION ALL SELECT src FROM edges WHERE dst = ? AND type = 'related_to') x JOIN nodes n ON n.id = x.id "
        "WHERE n.type = 'fact'",
        ("small_entity", "small_entity"),
    ),
    "fact_count": ("SELECT count(*) FROM nodes WHERE type = 'fact'", ()),
    "failed_urgent": ("SELECT id FROM nodes WHERE type = 'action' AND status = 'failed' AND priority >= 4", ()),
    "grandchildren": (
        "WITH RECURSIVE d(id, depth) AS (SELECT CAST(? AS TEXT), 0 UNION ALL SELECT e.dst, d.depth + 1 FROM d "
        "JOIN edges e ON e.src = d.id AND e.type = 'parent_of' WHERE d.depth < 3) "
        "SELECT DISTINCT id FROM d WHERE depth BETWEEN 2 AND 3",
        ("mid_root",),
    ),
    "derived_chain": (
        "WITH RECURSIVE d(id, depth) AS (SELECT CAST(? AS TEXT), 0 UNION ALL SELECT e.src, d.depth + 1 FROM d "
        "JOIN edges e ON e.dst = d.id AND e.type = 'derived_from' WHERE d.depth < 3) "
        "SELECT DISTINCT id FROM d WHERE depth BETWEEN 1 AND 3",
        ("chain_result",),
    ),
    "lineage": (
        "WITH RECURSIVE d(id) AS (SELECT e2.src FROM edges e1 JOIN edges e2 ON e2.dst = e1.dst AND e2.type = 'derived_from' "
        "WHERE e1.src = ? AND e1.type = 'produces' "
        "UNION SELECT e.src FROM d JOIN edges e ON e.dst = d.id AND e.type = 'derived_from') "
        "SELECT n.id FROM d JOIN nodes n ON n.id = d.id WHERE n.confidence >= 0.5",
        ("chain_action",),
    ),
    "ancestors": (
        "WITH RECURSIVE d(id) AS (SELECT src FROM edges WHERE dst = ? AND type = 'parent_of' "
        "UNION SELECT e.src FROM d JOIN edges e ON e.dst = d.id AND e.type = 'parent_of') SELECT id FROM d",
        ("deep_action",),
    ),
    "following": (
        "WITH RECURSIVE d(id) AS (SELECT dst FROM edges WHERE src = ? AND type = 'before' "
        "UNION SELECT e.dst FROM d JOIN edges e ON e.src = d.id AND e.type = 'before') SELECT id FROM d",
        ("first_action",),
    ),
    "five_steps": (
        "WITH " + _ROOTS + ", "
        "sub AS (SELECT DISTINCT e.dst AS id FROM roots r JOIN edges e ON e.src = r.id AND e.type = 'parent_of' "
        "JOIN nodes n ON n.id = e.dst AND n.type = 'goal'), "
        "done AS (SELECT DISTINCT e.dst AS id FROM sub s JOIN edges e ON e.src = s.id AND e.type = 'parent_of' "
        "JOIN nodes n ON n.id = e.dst AND n.type = 'action' AND n.status = 'done'), "
        "res AS (SELECT DISTINCT e.dst AS id FROM done d JOIN edges e ON e.src = d.id AND e.type = 'produces'), "
        "facts AS (SELECT DISTINCT e.src AS id FROM res r JOIN edges e ON e.dst = r.id AND e.type = 'derived_from' "
        "JOIN nodes n ON n.id = e.src AND n.type = 'fact'), "
        "ents AS (SELECT e.dst AS id FROM facts f JOIN edges e ON e.src = f.id AND e.type = 'related_to' "
        "UNION SELECT e.src FROM facts f JOIN edges e ON e.dst = f.id AND e.type = 'related_to') "
        "SELECT DISTINCT n.id FROM ents x JOIN nodes n ON n.id = x.id WHERE n.type = 'entity'",
        (),
    ),
}


def _sql_answer(name: str, rows: list[tuple]) -> list[str] | int:
    if name == "fact_count":
        return int(rows[0][0])
    return [r[0] for r in rows]


class SqlitePeer:
    """SQLite through ``sqlite3``: two tables, covering indexes, recursive CTEs."""

    name = "sqlite"

    def __init__(self) -> None:
        self.db: sqlite3.Connection | None = None

    @staticmethod
    def build(doc: dict[str, Any], path: str | pathlib.Path) -> None:
        path = pathlib.Path(path)
        for suffix in ("", "-wal", "-shm"):
            pathlib.Path(str(path) + suffix).unlink(missing_ok=True)
        db = sqlite3.connect(path)
        db.execute("PRAGMA journal_mode=WAL")
        columns = ", ".join(f"{n} {'TEXT PRIMARY KEY' if n == 'id' else t}" for n, t in _NODE_COLUMNS)
        db.execute(f"CREATE TABLE nodes ({columns})")
        db.execute("CREATE TABLE edges (src TEXT NOT NULL, dst TEXT NOT NULL, type TEXT NOT NULL, ord REAL, seq INTEGER NOT NULL)")
        marks = ", ".join("?" for _ in _NODE_COLUMNS)
        with db:
            db.executemany(f"INSERT INTO nodes VALUES ({marks})", (_node_row(n, i) for i, n in enumerate(doc["nodes"])))
            db.executemany("INSERT INTO edges VALUES (?, ?, ?, ?, ?)", _edge_rows(doc))
            db.execute("CREATE INDEX nodes_type_status ON nodes(type, status)")
            db.execute("CREATE INDEX edges_out ON edges(src, type, dst)")
            db.execute("CREATE INDEX edges_in ON edges(dst, type, src)")
        # No ANALYZE: with its statistics SQLite 3.40 builds a Bloom filter over every edge in
        # each recursive step (ancestors: 60-90 ms instead of 20 µs at 100k nodes); without
        # them every query here is as fast or faster (the tuning run is in docs/performance.md).
        db.close()

    def open(self, path: str | pathlib.Path) -> None:
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.db.execute("PRAGMA synchronous=FULL")

    def run(self, name: str, anchors: dict[str, str]) -> list[str] | int:
        sql, params = SQL[name]
        return _sql_answer(name, self.db.execute(sql, [anchors[p] for p in params]).fetchall())

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


class DuckdbPeer:
    """DuckDB: the same tables and SQL as SQLite, in DuckDB's columnar store."""

    name = "duckdb"

    def __init__(self) -> None:
        self.db = None

    @staticmethod
    def build(doc: dict[str, Any], path: str | pathlib.Path) -> None:
        import duckdb

        path = pathlib.Path(path)
        for suffix in ("", ".wal"):
            pathlib.Path(str(path) + suffix).unlink(missing_ok=True)
        db = duckdb.connect(str(path))
        columns = ", ".join(f"{n} {'TEXT PRIMARY KEY' if n == 'id' else t}" for n, t in _NODE_COLUMNS)
        db.execute(f"CREATE TABLE nodes ({columns})")
        db.execute("CREATE TABLE edges (src TEXT NOT NULL, dst TEXT NOT NULL, type TEXT NOT NULL, ord DOUBLE, seq BIGINT NOT NULL)")
        # bulk load through CSV files (DuckDB's executemany is row-at-a-time and slow)
        with tempfile.TemporaryDirectory() as tmp:
            nodes_csv, edges_csv = os.path.join(tmp, "nodes.csv"), os.path.join(tmp, "edges.csv")
            _write_csv(nodes_csv, [n for n, _ in _NODE_COLUMNS], (_node_row(n, i) for i, n in enumerate(doc["nodes"])))
            _write_csv(edges_csv, ["src", "dst", "type", "ord", "seq"], _edge_rows(doc))
            db.execute(f"INSERT INTO nodes SELECT * FROM read_csv('{nodes_csv}', header = true, columns = "
                       + _duck_columns(_NODE_COLUMNS) + ")")
            db.execute(f"INSERT INTO edges SELECT * FROM read_csv('{edges_csv}', header = true, columns = "
                       + _duck_columns((("src", "TEXT"), ("dst", "TEXT"), ("type", "TEXT"), ("ord", "DOUBLE"), ("seq", "BIGINT"))) + ")")
        db.execute("CREATE INDEX edges_out ON edges(src, type)")
        db.execute("CREATE INDEX edges_in ON edges(dst, type)")
        db.execute("CHECKPOINT")
        db.close()

    def open(self, path: str | pathlib.Path) -> None:
        import duckdb

        self.db = duckdb.connect(str(path))

    def run(self, name: str, anchors: dict[str, str]) -> list[str] | int:
        sql, params = SQL[name]
        return _sql_answer(name, self.db.execute(sql, [anchors[p] for p in params]).fetchall())

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def _duck_columns(columns) -> str:
    return "{" + ", ".join(f"'{n}': '{'VARCHAR' if t == 'TEXT' else t}'" for n, t in columns) + "}"


def _write_csv(path: str, header: list[str], rows) -> None:
    import csv

    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in rows:
            w.writerow(["" if v is None else v for v in row])


# ---------------------------------------------------------------------------------------------
# Kùzu (Cypher)
# ---------------------------------------------------------------------------------------------

_EDGE_TABLES = {"parent_of": "PARENT_OF", "before": "BEFORE", "derived_from": "DERIVED_FROM",
                "produces": "PRODUCES", "related_to": "RELATED_TO"}
_K_ROOTS = "MATCH (r:N) WHERE r.type = 'goal' AND NOT EXISTS { MATCH (:N)-[:PARENT_OF]->(r) } "
# edge order as one number (exact in a double while |order| < 1e8 and fewer than 1e7 edges)
_K_KEY = "((CASE WHEN {e}.ord IS NULL THEN 1.0e15 ELSE {e}.ord * 1.0e7 END) + {e}.seq)"

CYPHER: dict[str, tuple[str, tuple[str, ...]]] = {
    "card": (
        # the first subgoal in edge order: the smallest key (numeric ``order`` first, then
        # creation); Kùzu refuses ORDER BY in WITH without LIMIT, so the key is one number
        _K_ROOTS + "MATCH (r)-[e:PARENT_OF]->(s:N) WHERE s.type = 'goal' "
        "WITH r, min(" + _K_KEY.format(e="e") + ") AS first "
        "MATCH (r)-[e2:PARENT_OF]->(f:N) WHERE f.type = 'goal' AND " + _K_KEY.format(e="e2") + " = first "
        "MATCH (f)-[:PARENT_OF]->(a:N) WHERE a.type = 'action' AND a.status = 'pending' RETURN DISTINCT a.id",
        (),
    ),
    "project_pending": (
        "MATCH (s:N)-[:PARENT_OF*1..30]->(b:N) WHERE s.id = $big_root AND b.type = 'action' AND b.status = 'pending' "
        "RETURN DISTINCT b.id",
        ("big_root",),
    ),
    "hub_facts": ("MATCH (s:N)-[:RELATED_TO]-(f:N) WHERE s.id = $hub_entity AND f.type = 'fact' RETURN DISTINCT f.id",
                  ("hub_entity",)),
    "entity_facts": ("MATCH (s:N)-[:RELATED_TO]-(f:N) WHERE s.id = $small_entity AND f.type = 'fact' RETURN DISTINCT f.id",
                     ("small_entity",)),
    "fact_count": ("MATCH (n:N) WHERE n.type = 'fact' RETURN count(*)", ()),
    "failed_urgent": ("MATCH (n:N) WHERE n.type = 'action' AND n.status = 'failed' AND n.priority >= 4 RETURN n.id", ()),
    "grandchildren": ("MATCH (s:N)-[:PARENT_OF*2..3]->(b:N) WHERE s.id = $mid_root RETURN DISTINCT b.id", ("mid_root",)),
    "derived_chain": ("MATCH (s:N)<-[:DERIVED_FROM*1..3]-(b:N) WHERE s.id = $chain_result RETURN DISTINCT b.id",
                      ("chain_result",)),
    "lineage": (
        # binding the results first (WITH) lets Kùzu start the closure from them: 30x faster
        # than the one-pattern form, which its planner starts from every fact
        "MATCH (s:N {id: $chain_action})-[:PRODUCES]->(r:N) WITH r "
        "MATCH (r)<-[:DERIVED_FROM*1..30]-(b:N) WHERE b.confidence >= 0.5 RETURN DISTINCT b.id",
        ("chain_action",),
    ),
    "ancestors": ("MATCH (s:N)<-[:PARENT_OF*1..30]-(b:N) WHERE s.id = $deep_action RETURN DISTINCT b.id", ("deep_action",)),
    "following": ("MATCH (s:N)-[:BEFORE*1..30]->(b:N) WHERE s.id = $first_action RETURN DISTINCT b.id", ("first_action",)),
    "five_steps": (
        # one step per WITH DISTINCT: Kùzu's planner takes the one five-hop pattern 10x slower
        _K_ROOTS + "MATCH (r)-[:PARENT_OF]->(s:N) WHERE s.type = 'goal' WITH DISTINCT s "
        "MATCH (s)-[:PARENT_OF]->(a:N) WHERE a.type = 'action' AND a.status = 'done' WITH DISTINCT a "
        "MATCH (a)-[:PRODUCES]->(res:N) WITH DISTINCT res "
        "MATCH (res)<-[:DERIVED_FROM]-(f:N) WHERE f.type = 'fact' WITH DISTINCT f "
        "MATCH (f)-[:RELATED_TO]-(e:N) WHERE e.type = 'entity' RETURN DISTINCT e.id",
        (),
    ),
}


class KuzuPeer:
    """Kùzu: a node table for every node, a relationship table per edge type, Cypher."""

    name = "kuzu"

    def __init__(self) -> None:
        self.db = None
        self.conn = None

    @staticmethod
    def build(doc: dict[str, Any], path: str | pathlib.Path) -> None:
        import kuzu

        path = pathlib.Path(path)
        if path.is_dir():
            shutil.rmtree(path)
        path.unlink(missing_ok=True)
        pathlib.Path(str(path) + ".wal").unlink(missing_ok=True)
        db = kuzu.Database(str(path))
        conn = kuzu.Connection(db)
        types = {"TEXT": "STRING", "BIGINT": "INT64", "DOUBLE": "DOUBLE", "BOOLEAN": "BOOLEAN"}
        columns = ", ".join(f"{n} {types[t]}" for n, t in _NODE_COLUMNS)
        conn.execute(f"CREATE NODE TABLE N({columns}, PRIMARY KEY(id))")
        for table in _EDGE_TABLES.values():
            conn.execute(f"CREATE REL TABLE {table}(FROM N TO N, ord DOUBLE, seq INT64)")
        with tempfile.TemporaryDirectory() as tmp:
            nodes_csv = os.path.join(tmp, "nodes.csv")
            _write_csv(nodes_csv, [n for n, _ in _NODE_COLUMNS], (_node_row(n, i) for i, n in enumerate(doc["nodes"])))
            conn.execute(f"COPY N FROM '{nodes_csv}' (HEADER = true)")
            by_type: dict[str, list[tuple]] = {}
            for src, dst, edge_type, order, seq in _edge_rows(doc):
                by_type.setdefault(edge_type, []).append((src, dst, order, seq))
            for edge_type, rows in by_type.items():
                edges_csv = os.path.join(tmp, f"{edge_type}.csv")
                _write_csv(edges_csv, ["from", "to", "ord", "seq"], rows)
                conn.execute(f"COPY {_EDGE_TABLES[edge_type]} FROM '{edges_csv}' (HEADER = true)")
        conn.close()
        db.close()

    def open(self, path: str | pathlib.Path) -> None:
        import kuzu

        self.db = kuzu.Database(str(path))
        self.conn = kuzu.Connection(self.db)

    def run(self, name: str, anchors: dict[str, str]) -> list[str] | int:
        query, params = CYPHER[name]
        result = self.conn.execute(query, {p: anchors[p] for p in params})
        rows = []
        while result.has_next():
            rows.append(result.get_next())
        return _sql_answer(name, rows)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.db.close()
            self.conn = self.db = None


PEERS = {"sqlite": SqlitePeer, "duckdb": DuckdbPeer, "kuzu": KuzuPeer}


def available() -> list[str]:
    """The peers whose library is installed (``pip install -e '.[bench]'`` installs them all).

    >>> "sqlite" in available()
    True
    """
    out = ["sqlite"]
    for name, module in (("duckdb", "duckdb"), ("kuzu", "kuzu")):
        try:
            __import__(module)
        except ImportError:
            continue
        out.append(name)
    return out
