"""Hypothesis profiles for hgm's property tests: ``ci`` (the default: sizes that keep a test
suite quick) and ``long`` (fifty times the examples, for a run left alone for a while).

Choose one with the ``HYPOTHESIS_PROFILE`` environment variable; a test asks
:func:`examples` how many examples to run, so one variable scales every property test::

    HYPOTHESIS_PROFILE=long python -m pytest tests/test_differential.py

>>> register_profiles()
>>> examples(40, profile="ci"), examples(40, profile="long")
(40, 2000)
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["register_profiles", "load_profile", "examples", "PROFILES", "PROFILE_ENV"]

PROFILE_ENV = "HYPOTHESIS_PROFILE"
# Each profile's factor on a test's own example count.
PROFILES = {"ci": 1, "long": 50}


def register_profiles() -> None:
    """Register ``ci`` and ``long`` with hypothesis (no deadline: the reference model is slow
    on purpose, and the machines tests run on are shared)."""
    for name, factor in PROFILES.items():
        settings.register_profile(
            name, deadline=None, max_examples=100 * factor, suppress_health_check=[HealthCheck.too_slow]
        )


def load_profile() -> str:
    """Load the profile named by ``$HYPOTHESIS_PROFILE`` (``ci`` when unset); its name."""
    register_profiles()
    name = os.environ.get(PROFILE_ENV, "ci")
    settings.load_profile(name)
    return name


def examples(count: int, *, profile: str | None = None) -> int:
    """How many examples a test that runs ``count`` under ``ci`` runs under the current profile
    (``profile`` names another)."""
    name = profile or os.environ.get(PROFILE_ENV, "ci")
    return count * PROFILES.get(name, 1)
