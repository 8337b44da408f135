"""The ``hgm`` command."""

from hgm_engine.cli.app import main

__all__ = ["main"]
