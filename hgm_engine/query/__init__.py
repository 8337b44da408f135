"""The query pipeline: text -> syntax -> analysis -> logical plan -> optimizer -> executor.

``pipeline`` strings the stages together (``compile``); each stage is one module with one verb.
"""
