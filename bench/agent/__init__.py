"""The agent evaluation of issue 6: full hgm against ablations on generated tasks (run.py)."""
