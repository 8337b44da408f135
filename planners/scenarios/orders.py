"""The orders scenario: an order-status question, a refund whose policy check times out, a
request that keeps failing, and a later refund that finds the path that worked.

The HTN domain is written with Python callables (the travel one is a JSON table). Every
request's plan is kept as a *path* (a goal with ``kind = 'path'`` under the ``orders``
scenario), so it is indexed, located and rewritten as versions:

1. "Where is my order A1001?" — nothing stored fits; the plan runs and is recorded a success.
2. "Refund order A1001" — the policy check times out; the failed path is rewritten (v2:
   retry the check), times out again, and is rewritten again (v3: fall back to the cached
   policy), which works.
3. "Change the delivery address of order B7" — the carrier refuses every time; each failure
   is recorded and the path rewritten (retry), until the rewrite-storm guard
   (``max_failed_rewrites = 2``) turns the lineage ``needs_human`` and the engine refuses the
   next rewrite; the planner stops and hands the request to a person.
4. "I'd like a refund for order C3" — ``locate`` ranks the working refund path (v3) first and
   the planner runs its steps: no timeout, no rewrite.

The domain and the tools on their own (``play`` runs it all; ``tests/test_planners_paths.py``
checks every claim above):

>>> [m.name for m in domain().methods_for("refund")], domain().path_spec("refund").tags
(['standard', 'retry', 'cached_policy'], ('order', 'refund'))
>>> tools = make_tools()
>>> for attempt in range(3):
...     try:
...         print(tools["check_refund_policy"](order="A1001")["summary"])
...     except ToolError as err:
...         print(err.kind)
timeout
timeout
order A1001 is refundable
"""

from __future__ import annotations

from typing import Any, Callable

from hgm_engine import Memory

from planners.htn import Domain, HTNPlanner
from planners.loop import RunRecord, StepRecord, run
from planners.protocol import Observation
from planners.tools import ToolError, Toolbox

__all__ = ["play", "make_tools", "domain", "requests", "setup", "TITLE", "QUERIES", "MAX_FAILED_REWRITES"]

TITLE = "an order question, a refund that times out, a request that keeps failing, a refund that finds the working path"
MAX_FAILED_REWRITES = 2

QUERIES = (
    ("every version of the refund path, newest first", "#$p.versions", {"p": "refund-a1001@v3"}),
    ("what the working version does", "#$p.actions", {"p": "refund-a1001@v3"}),
    ("the request handed to a person", "nodes.where(kind = 'path', needs_human = true)", None),
    ("why the refund path was rewritten", "nodes.where(kind = 'path', has(rewrite_reason))", None),
)

ORDERS = {
    "A1001": {"status": "shipped", "city": "Shanghai", "eta": "Friday", "amount": "39.90 EUR"},
    "B7": {"status": "in transit", "city": "Lyon", "eta": "Monday", "amount": "120.00 EUR"},
    "C3": {"status": "delivered", "city": "Hangzhou", "eta": "delivered", "amount": "18.50 EUR"},
}


def domain() -> Domain:
    """Order tasks, each kept as a path; methods are Python functions."""
    d = Domain()
    d.path("order_status", tags=["order", "status"], reuse=True)
    d.path("refund", tags=["order", "refund"], reuse=True)
    d.path("change_address", tags=["order", "address"], reuse=True)

    @d.method("order_status", "look_up_and_tell")
    def look_up_and_tell(ctx):
        return [{"task": "query_order", "content": "Look up order {order}"},
                {"task": "notify_user", "content": "Tell the customer where order {order} is"}]

    @d.method("refund", "standard")
    def standard_refund(ctx):
        return [{"task": "check_refund_policy", "content": "Check the refund policy for order {order}"},
                {"task": "issue_refund", "content": "Refund order {order}"},
                {"task": "notify_user", "content": "Tell the customer the refund is on its way"}]

    @d.method("refund", "retry")
    def retry_refund(ctx):
        return [{"task": "check_refund_policy", "content": "Check the refund policy for order {order} (retry, 30 s)",
                 "args": {"timeout_s": 30}},
                {"task": "issue_refund", "content": "Refund order {order}"},
                {"task": "notify_user", "content": "Tell the customer the refund is on its way"}]

    @d.method("refund", "cached_policy")
    def cached_policy_refund(ctx):
        return [{"task": "lookup_cached_policy", "content": "Read the cached refund policy (fallback)"},
                {"task": "issue_refund", "content": "Refund order {order}"},
                {"task": "notify_user", "content": "Tell the customer the refund is on its way"}]

    @d.method("change_address", "standard")
    def change_address(ctx):
        return [{"task": "query_order", "content": "Look up order {order}"},
                {"task": "update_address", "content": "Ask the carrier to deliver order {order} to {address}"},
                {"task": "notify_user", "content": "Tell the customer the new address is set"}]

    @d.method("change_address", "retry", repeat=3)
    def retry_address(ctx):
        attempt = int((ctx.node or {}).get("version") or 1) + 1  # the version this plan will be
        return [{"task": "query_order", "content": "Look up order {order}"},
                {"task": "update_address", "content": f"Ask the carrier again to deliver order {{order}} to {{address}} "
                 f"(attempt {attempt})", "args": {"attempt": attempt}},
                {"task": "notify_user", "content": "Tell the customer the new address is set"}]

    d.operator("query_order", args={"order": "{order}"})
    d.operator("check_refund_policy", args={"order": "{order}", "timeout_s": "{timeout_s}"})
    d.operator("lookup_cached_policy", args={"order": "{order}"})
    d.operator("issue_refund", args={"order": "{order}"}, result_attrs={"kind": "refund"})
    d.operator("update_address", args={"order": "{order}", "address": "{address}"})
    d.operator("notify_user", args={"order": "{order}"})
    return d


def make_tools() -> Toolbox:
    """Simulated shop tools: the policy service times out twice, the carrier never changes B7."""
    tools = Toolbox()

    @tools.register("query_order")
    def query_order(order: str) -> dict[str, Any]:
        o = ORDERS[order]
        return {"summary": f"order {order}: {o['status']}, in {o['city']}, arrives {o['eta']}", "order_id": order, **o}

    @tools.register("check_refund_policy")
    def check_refund_policy(order: str, timeout_s: Any = 10) -> dict[str, Any]:
        return {"summary": f"order {order} is refundable", "refundable": True}

    @tools.register("lookup_cached_policy")
    def lookup_cached_policy(order: str) -> dict[str, Any]:
        return {"summary": f"cached policy 2024-05: damaged goods are refundable within 30 days (order {order})",
                "refundable": True}

    @tools.register("issue_refund")
    def issue_refund(order: str) -> dict[str, Any]:
        return {"summary": f"refunded {ORDERS[order]['amount']} for order {order}", "order_id": order,
                "amount": ORDERS[order]["amount"]}

    @tools.register("update_address")
    def update_address(order: str, address: str) -> dict[str, Any]:
        return {"summary": f"order {order} now goes to {address}"}

    @tools.register("notify_user")
    def notify_user(order: str) -> dict[str, Any]:
        return {"summary": f"message sent to the customer of order {order}"}

    tools.script("check_refund_policy", ["timeout", "timeout"])
    tools.fail_when("update_address", lambda a: a["order"] == "B7",
                    ToolError("the carrier refuses address changes for B7 (parcel already at the depot)", kind="refused"))
    return tools


def requests() -> list[Observation]:
    """The four customer requests, in order."""
    return [
        Observation.task("Where is my order A1001?", task="order_status", id="status-a1001", parent="orders",
                         args={"order": "A1001"}),
        Observation.task("Please refund order A1001, it arrived damaged", task="refund", id="refund-a1001",
                         parent="orders", args={"order": "A1001", "timeout_s": 10}),
        Observation.task("Change the delivery address of order B7 to 12 Rue Cler, Paris", task="change_address",
                         id="address-b7", parent="orders", args={"order": "B7", "address": "12 Rue Cler, Paris"}),
        Observation.task("I would like a refund for order C3, the box was crushed", task="refund", id="refund-c3",
                         parent="orders", args={"order": "C3", "timeout_s": 10}),
    ]


def setup(memory: Memory) -> None:
    """The ``orders`` scenario goal and the rewrite-storm guard used here."""
    from hgm_engine.paths import PathGuards

    memory.path_guards = PathGuards(max_failed_rewrites=MAX_FAILED_REWRITES)
    memory.apply({"author": "setup", "reason": "the orders scenario", "ops": [
        {"op": "add_node", "id": "orders", "type": "goal", "kind": "scenario", "content": "Customer service: orders"}]})


def play(memory: Memory, say: Callable[[str], None], *, max_steps: int = 40) -> list[RunRecord]:
    """Run the four requests on ``memory`` (empty), printing the step log through ``say``."""
    if not hasattr(memory, "rewrite_path"):
        raise RuntimeError("the orders scenario needs Memory.locate/rewrite_path (paths, issue 5)")
    setup(memory)
    say(f"Setup: scenario goal 'orders'; rewrite-storm guard max_failed_rewrites={MAX_FAILED_REWRITES}.")
    say("Simulated tools: the refund-policy service times out twice; the carrier refuses every address change for B7.")

    def listener(step: StepRecord, mem: Memory) -> None:
        for line in step.lines():
            say(line)

    records = []
    tools = make_tools()
    for number, task in enumerate(requests(), 1):
        say("")
        say(f"Request {number}: {task.text}")
        record = run(HTNPlanner(domain(), name="htn-orders"), memory, tools, max_steps=max_steps, task=task, listener=listener)
        say(record.lines()[-1])
        records.append(record)
    metrics = memory.path_metrics()
    say("")
    say(f"path metrics: {metrics['paths']} paths, {metrics['versions']} versions, {metrics['rewrites']} rewrites; "
        f"versions per lineage {metrics['versions_per_lineage']}; needs a person: {metrics['needs_human']}; "
        f"guard refusals: {metrics['refusals']}")
    return records
