"""UltraTool tool retrieval with hgm's node index (issue 14, item 5): see docs/retrieval.md."""
