"""The data model: the graph, its overlay for transactions, the schema and its attribute checks.

This layer imports nothing above it (no queries, transactions, rules or stores).
"""
