"""Where memory lives outside the process: graph files now; SQLite and PostgreSQL stores."""

from .graphfile import GRAPH_FORMAT, check_document, graph_from_document, read_graph_file

__all__ = ["GRAPH_FORMAT", "check_document", "graph_from_document", "read_graph_file"]
