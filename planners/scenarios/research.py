"""The research scenario: compare three cloud providers' prices, take the user's correction,
and give the corrected path to the next similar request first.

The HTN domain is the method table ``research_domain.json``; the task is kept as a path. The
planner fetches AWS, GCP and Azure prices (compute and bandwidth), compares the totals and
presents them. The user corrects: "compute instances only, no bandwidth fees". The correction
is recorded as a fact; the method table's ``all_fees`` method no longer applies (its
``unless`` reads that fact), and the result path is rewritten as a new version with the
``compute_only`` method — a ``replaces`` edge to the old version, which is superseded. A
later, similar request locates the corrected version first and runs its steps.

The method table and the simulated user on their own (``play`` runs it all;
``tests/test_planners_paths.py`` checks every claim above):

>>> [m.name for m in domain().methods_for("compare_cloud_prices")]
['all_fees', 'compute_only']
>>> tools = make_tools()
>>> tools["ask_user"](summary="compute instances only: GCP 48.92 USD a month")["accepted"]
True
>>> tools["ask_user"](summary="compute and bandwidth: Azure 142.48 USD a month")
Traceback (most recent call last):
...
planners.tools.ToolError: compute instances only, no bandwidth fees
"""

from __future__ import annotations

import importlib.resources
import json
from typing import Any, Callable

from hgm_engine import Memory

from planners.htn import Domain, HTNPlanner
from planners.loop import RunRecord, StepRecord, run
from planners.protocol import Observation
from planners.tools import ToolError, Toolbox

__all__ = ["play", "make_tools", "domain", "requests", "setup", "TITLE", "QUERIES", "PRICES"]

TITLE = "compare three cloud providers' prices; the user corrects the scope; the next request gets the corrected path"

# USD a month for a small service (2 vCPU, 4 GB RAM, 1 TB egress); illustrative, not quotes.
PRICES = {
    "AWS": {"compute": (60.74, "t3.medium, on demand"), "bandwidth": (90.00, "1 TB egress")},
    "GCP": {"compute": (48.92, "e2-medium, on demand"), "bandwidth": (120.00, "1 TB egress, premium tier")},
    "Azure": {"compute": (55.48, "B2s, pay as you go"), "bandwidth": (87.00, "1 TB egress")},
}

QUERIES = (
    ("the user's correction, kept as a fact", "nodes.where(type = 'fact', error_type = 'user-correction')", None),
    ("the corrected path and the version it replaces", "#$v.replaces", {"v": "cloud-1@v2"}),
    ("the comparison each version produced", "nodes.where(type = 'result', kind = 'comparison')", None),
    ("where the second request's plan came from", "nodes.where(has(reused_from))", None),
)


def domain() -> Domain:
    """The research method table (``research_domain.json``, shipped with the package)."""
    text = importlib.resources.files(__package__).joinpath("research_domain.json").read_text(encoding="utf-8")
    return Domain.from_table(json.loads(text))


def make_tools() -> Toolbox:
    """Simulated price lookups, a comparison, and a user who wants compute prices only."""
    tools = Toolbox()

    @tools.register("fetch_prices")
    def fetch_prices(provider: str, scope: str, workload: str) -> dict[str, Any]:
        components = ["compute"] if scope == "compute" else ["compute", "bandwidth"]
        prices = [{"provider": provider, "component": c, "usd_month": PRICES[provider][c][0], "item": PRICES[provider][c][1]}
                  for c in components]
        listed = ", ".join(f"{p['component']} {p['usd_month']:.2f}" for p in prices)
        return {"summary": f"{provider}: {listed} USD a month", "provider": provider, "prices": prices}

    @tools.register("compare_prices")
    def compare_prices(scope: str, prices: list[dict[str, Any]]) -> dict[str, Any]:
        totals: dict[str, float] = {}
        for price in prices:
            totals[price["provider"]] = round(totals.get(price["provider"], 0.0) + float(price["usd_month"]), 2)
        ranked = sorted(totals.items(), key=lambda item: (item[1], item[0]))
        what = "compute and bandwidth" if scope == "all" else "compute instances only"
        listing = ", ".join(f"{name} {total:.2f}" for name, total in ranked)
        return {"summary": f"{what}: {listing} USD a month; cheapest {ranked[0][0]}", "cheapest": ranked[0][0],
                "scope": scope}

    @tools.register("ask_user")
    def ask_user(summary: str) -> dict[str, Any]:
        if "bandwidth" in summary:
            raise ToolError("compute instances only, no bandwidth fees", kind="user-correction")
        return {"summary": "the user accepted the comparison", "accepted": True}

    return tools


def requests() -> list[Observation]:
    return [
        Observation.task("Compare the monthly prices of AWS, GCP and Azure for our small web service",
                         task="compare_cloud_prices", id="cloud-1", parent="research",
                         args={"workload": "a small web service (2 vCPU, 4 GB)"}),
        Observation.task("What would AWS, GCP and Azure charge per month for our API servers?",
                         task="compare_cloud_prices", id="cloud-2", parent="research",
                         args={"workload": "the API servers (2 vCPU, 4 GB)"}),
    ]


def setup(memory: Memory) -> None:
    memory.apply({"author": "setup", "reason": "the research scenario", "ops": [
        {"op": "add_node", "id": "research", "type": "goal", "kind": "scenario", "content": "Research: cloud costs"}]})


def play(memory: Memory, say: Callable[[str], None], *, max_steps: int = 40) -> list[RunRecord]:
    """Run both requests on ``memory`` (empty), printing the step log through ``say``."""
    if not hasattr(memory, "rewrite_path"):
        raise RuntimeError("the research scenario needs Memory.locate/rewrite_path (paths, issue 5)")
    setup(memory)
    say("Setup: scenario goal 'research'. The simulated user accepts compute prices only.")

    def listener(step: StepRecord, mem: Memory) -> None:
        for line in step.lines():
            say(line)

    records = []
    tools = make_tools()
    for number, task in enumerate(requests(), 1):
        say("")
        say(f"Request {number}: {task.text}")
        record = run(HTNPlanner(domain(), name="htn-research"), memory, tools, max_steps=max_steps, task=task,
                     listener=listener)
        say(record.lines()[-1])
        records.append(record)
    return records
