"""Planners that read and write hgm memory at every step (HTN, LLM, the agent loop)."""
