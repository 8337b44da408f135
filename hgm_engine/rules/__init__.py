"""Memory rules: constraints, rule files (triggers, propagation) and the engine that runs them in a commit.
"""
