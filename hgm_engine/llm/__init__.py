"""LLM calls: proposing a path rewrite through any OpenAI-compatible endpoint.
"""
