"""A simulated tool environment for the agent evaluation: generated tasks, injected failures,
user corrections. Deterministic for a seed.

Four task families, drawn at random for each task of a sequence:

- ``refund`` (a path task): check the refund policy, refund, tell the customer. The policy
  service is **down** for the middle 40 % of the sequence (every check times out); the
  methods are ``standard`` and ``cached_policy`` (a fallback that never needs the service).
- ``status`` (a path task): look the order up, tell the customer; method ``look_up``.
- ``cloud`` (a path task): fetch three providers' prices, compare, present. The user of the
  sequence wants compute prices only (with probability 0.7 for a seed) and **corrects** any
  comparison with bandwidth fees (the present step fails with the correction); methods
  ``all_fees`` and ``compute_only``.

Every compound task also has a ``retry`` method (at most twice per task) that applies only
after a timeout: the same steps again. A closed museum or a user's correction is not retried.
- ``trip`` (a hierarchical task, not a path): hotel (search, book), two days of sights (each
  tickets and a tour), a transfer. With probability 0.5 the first day's sight is **closed**
  that day; the ``sights`` goal has a second method with the days swapped.

Every tool call also fails **transiently** with probability ``transient`` (a timeout). Whether a
call fails is a hash of (seed, task number, tool, arguments, attempt number): the same call
fails the same way under every planner, so conditions differ only by what they do.

Request texts come from several phrasings per family, so that finding a stored path that fits
needs more than an exact match.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, Callable

import attrs

from planners import Domain, Observation, ToolError, Toolbox, ToolTimeout

__all__ = ["Task", "Environment", "FAMILIES", "build_domain", "generate_tasks"]

FAMILIES = ("refund", "status", "cloud", "trip")
WEIGHTS = (0.3, 0.2, 0.25, 0.25)

PHRASES = {
    "refund": ("Please refund order {order}, it arrived damaged",
               "I want my money back for order {order}",
               "Refund order {order}: the item is broken",
               "Can you refund order {order}? The box was crushed"),
    "status": ("Where is my order {order}?",
               "What is the status of order {order}?",
               "Has order {order} shipped yet?"),
    "cloud": ("Compare the monthly prices of AWS, GCP and Azure for {workload}",
              "What would AWS, GCP and Azure charge per month for {workload}?",
              "Cheapest cloud among AWS, GCP and Azure for {workload}?"),
    "trip": ("Plan a three-day trip to {city} with a hotel near {area}",
             "Three days in {city}: hotel near {area} and the main sights"),
}
CITIES = (("Beijing", "Wangfujing", ("Forbidden City", "Temple of Heaven")),
          ("Paris", "Le Marais", ("Louvre", "Orsay Museum")),
          ("Rome", "Trastevere", ("Vatican Museums", "Colosseum")),
          ("Kyoto", "Gion", ("Kinkaku-ji", "Fushimi Inari")))
WORKLOADS = ("our small web service", "the API servers", "a staging cluster", "the batch workers")
PRICES = {"AWS": (60.74, 90.0), "GCP": (48.92, 120.0), "Azure": (55.48, 87.0)}


@attrs.frozen
class Task:
    """One generated task: its number in the sequence, family and request."""

    number: int
    family: str
    observation: Observation
    closed: str | None = None  # trip: the sight closed on Monday, if any


# A retry applies only after a timeout (a closed museum or a user's correction is not retried).
AFTER_TIMEOUT = "focus.descendants.where(type = 'action', status = 'failed', error_type = 'timeout').exists()"


def _same_steps(ctx) -> list[dict[str, Any]]:
    """A retry: the steps of the version being repaired again (its first step says which
    attempt this is, so the new version differs from the old one)."""
    if ctx.node is None:
        return []
    actions = ctx.view.nodes("#$g.actions", params={"g": ctx.node["id"]})
    specs = [dict(a["spec"]) for a in actions if isinstance(a.get("spec"), dict) and a.get("status") != "cancelled"]
    if specs:
        attempt = int(ctx.node.get("version") or 1) + 1
        specs[0] = dict(specs[0], content=f"{specs[0].get('content') or specs[0]['task']} (attempt {attempt})")
    return specs


def build_domain() -> Domain:
    """The HTN domain of all four families (methods are Python callables). Every compound
    task has a ``retry`` method that applies after a timeout, besides its real alternatives."""
    d = Domain()
    d.path("refund", tags=["order", "refund"], reuse=True)
    d.path("order_status", tags=["order", "status"], reuse=True)
    d.path("compare_cloud_prices", tags=["cloud", "pricing"], reuse=True)

    def refund_steps(first: dict[str, Any]) -> list[dict[str, Any]]:
        return [first, {"task": "issue_refund", "content": "Refund order {order}"},
                {"task": "notify_user", "content": "Tell the customer about order {order}"}]

    @d.method("refund", "retry", repeat=2, precondition=AFTER_TIMEOUT)
    def retry(ctx):
        return _same_steps(ctx)

    @d.method("refund", "standard")
    def standard(ctx):
        return refund_steps({"task": "check_refund_policy", "content": "Check the refund policy for order {order}"})

    @d.method("refund", "cached_policy")
    def cached(ctx):
        return refund_steps({"task": "lookup_cached_policy", "content": "Read the cached refund policy"})

    @d.method("order_status", "look_up")
    def look_up(ctx):
        return [{"task": "query_order", "content": "Look up order {order}"},
                {"task": "notify_user", "content": "Tell the customer about order {order}"}]

    @d.method("order_status", "retry", repeat=2, precondition=AFTER_TIMEOUT)
    def look_up_again(ctx):
        attempt = int((ctx.node or {}).get("version") or 1) + 1
        return [{"task": "query_order", "content": f"Look up order {{order}} (attempt {attempt})", "args": {"attempt": attempt}},
                {"task": "notify_user", "content": "Tell the customer about order {order}"}]

    def cloud_steps(scope: str) -> list[dict[str, Any]]:
        steps = [{"task": "fetch_prices", "content": f"{p} prices ({scope})", "args": {"provider": p, "scope": scope}}
                 for p in ("AWS", "GCP", "Azure")]
        return steps + [{"task": "compare", "content": f"Compare the totals ({scope})", "args": {"scope": scope}},
                        {"task": "present", "content": "Present the comparison", "args": {"scope": scope}}]

    # first: after a timeout, the same comparison again; otherwise the two scopes in order
    @d.method("compare_cloud_prices", "retry", repeat=2, precondition=AFTER_TIMEOUT)
    def retry_cloud(ctx):
        return _same_steps(ctx)

    @d.method("compare_cloud_prices", "all_fees")
    def all_fees(ctx):
        return cloud_steps("all")

    @d.method("compare_cloud_prices", "compute_only")
    def compute_only(ctx):
        return cloud_steps("compute")


    @d.method("plan_trip", "stay_then_sights")
    def trip(ctx):
        return [{"task": "arrange_stay", "id": "hotel", "content": "Stay near {area}", "args": {"area": "{area}"}},
                {"task": "see_sights", "id": "sights", "content": "Two days of sights", "args": {"a": "{a}", "b": "{b}"}},
                {"task": "day_trip", "id": "daytrip", "content": "Day trip", "args": {"day": "Wed"}}]

    @d.method("arrange_stay", "search_then_book")
    def stay(ctx):
        return [{"task": "search_hotels", "id": "search"}, {"task": "book_hotel", "id": "book"}]

    @d.method("arrange_stay", "retry", repeat=2, precondition=AFTER_TIMEOUT)
    def stay_again(ctx):
        return stay(ctx)

    @d.method("day_trip", "transfer")
    def day_trip(ctx):
        return [{"task": "book_transfer", "id": "transfer", "args": {"day": "{day}"}}]

    @d.method("day_trip", "retry", repeat=2, precondition=AFTER_TIMEOUT)
    def day_trip_again(ctx):
        return day_trip(ctx)

    @d.method("see_sights", "as_listed")
    def as_listed(ctx):
        return [{"task": "visit_day", "id": "mon", "args": {"place": "{a}", "day": "Mon"}},
                {"task": "visit_day", "id": "tue", "args": {"place": "{b}", "day": "Tue"}}]

    @d.method("see_sights", "swapped")
    def swapped(ctx):
        return [{"task": "visit_day", "id": "mon", "args": {"place": "{b}", "day": "Mon"}},
                {"task": "visit_day", "id": "tue", "args": {"place": "{a}", "day": "Tue"}}]

    @d.method("visit_day", "tickets_and_tour")
    def visit(ctx):
        return [{"task": "reserve_tickets", "id": "tickets", "args": {"place": "{place}", "day": "{day}"}},
                {"task": "guided_tour", "id": "tour", "args": {"place": "{place}", "day": "{day}"}}]

    @d.method("visit_day", "retry", repeat=2, precondition=AFTER_TIMEOUT)
    def visit_again(ctx):
        return visit(ctx)

    @d.method("see_sights", "retry", repeat=2, precondition=AFTER_TIMEOUT)
    def sights_again(ctx):
        return as_listed(ctx) if (ctx.node or {}).get("method") != "swapped" else swapped(ctx)

    for task, args in {
        "check_refund_policy": {"order": "{order}", "timeout_s": "{timeout_s}"},
        "lookup_cached_policy": {"order": "{order}"},
        "issue_refund": {"order": "{order}"},
        "notify_user": {"order": "{order}"},
        "query_order": {"order": "{order}", "attempt": "{attempt}"},
        "fetch_prices": {"provider": "{provider}", "scope": "{scope}"},
        "compare": {"scope": "{scope}"},
        "present": {"scope": "{scope}"},
        "search_hotels": {"area": "{area}"},
        "book_hotel": {"area": "{area}"},
        "reserve_tickets": {"place": "{place}", "day": "{day}"},
        "guided_tour": {"place": "{place}", "day": "{day}"},
        "book_transfer": {"day": "{day}"},
    }.items():
        d.operator(task, args=args)
    return d


def _unit(*parts: Any) -> float:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class Environment:
    """The world the tools act on, for one sequence (seed): outage window, the user's
    preference, transient failures. ``tools_for(task)`` gives the toolbox of one task."""

    def __init__(self, seed: int, n_tasks: int, *, transient: float = 0.05):
        self.seed = seed
        self.n_tasks = n_tasks
        self.transient = transient
        self.outage = (int(0.3 * n_tasks), int(0.7 * n_tasks))
        self.prefers_compute = _unit(seed, "user") < 0.7

    def tools_for(self, task: Task) -> Toolbox:
        tools = Toolbox()
        attempts: dict[tuple, int] = {}
        number = task.number

        def flaky(name: str, fn: Callable[..., Any]) -> None:
            def call(**args: Any) -> Any:
                key = (name, tuple(sorted((k, str(v)) for k, v in args.items())))
                attempts[key] = attempts.get(key, 0) + 1
                if _unit(self.seed, number, key, attempts[key]) < self.transient:
                    raise ToolTimeout(f"{name} timed out")
                return fn(**args)

            tools.register(name, call)

        down = self.outage[0] <= number < self.outage[1]

        def check_refund_policy(order: str, timeout_s: Any = None) -> dict[str, Any]:
            if down:
                raise ToolTimeout("the refund-policy service is not answering")
            return {"summary": f"order {order} is refundable"}

        flaky("check_refund_policy", check_refund_policy)
        flaky("lookup_cached_policy", lambda order: {"summary": "cached policy: refundable"})
        flaky("issue_refund", lambda order: {"summary": f"refunded order {order}"})
        flaky("notify_user", lambda order: {"summary": "customer told"})
        flaky("query_order", lambda order, attempt=None: {"summary": f"order {order} is on its way"})
        flaky("fetch_prices", lambda provider, scope: {"summary": f"{provider} prices ({scope})"})
        flaky("compare", lambda scope: {"summary": f"comparison ({scope})", "scope": scope})

        def present(scope: str) -> dict[str, Any]:
            if self.prefers_compute and scope != "compute":
                raise ToolError("compute instances only, no bandwidth fees", kind="user-correction")
            return {"summary": "the user accepted the comparison"}

        flaky("present", present)
        flaky("search_hotels", lambda area: {"summary": f"3 hotels near {area}"})
        flaky("book_hotel", lambda area: {"summary": f"booked a hotel near {area}"})

        def reserve_tickets(place: str, day: str) -> dict[str, Any]:
            if place == task.closed and day == "Mon":
                raise ToolError(f"{place} is closed on Mondays", kind="closed")
            return {"summary": f"tickets for {place} on {day}"}

        flaky("reserve_tickets", reserve_tickets)
        flaky("guided_tour", lambda place, day: {"summary": f"guide at {place} on {day}"})
        flaky("book_transfer", lambda day: {"summary": f"transfer on {day}"})
        return tools


def generate_tasks(n: int, seed: int) -> list[Task]:
    """``n`` tasks of the four families, with their requests (deterministic for ``seed``).

    >>> [t.family for t in generate_tasks(6, 0)] == [t.family for t in generate_tasks(6, 0)]
    True
    """
    rng = random.Random(seed)
    tasks = []
    for number in range(n):
        family = rng.choices(FAMILIES, WEIGHTS)[0]
        phrase = rng.choice(PHRASES[family])
        root = f"t{number:04d}"
        closed = None
        if family in ("refund", "status"):
            order = f"{rng.choice('ABCDEFGH')}{rng.randint(100, 9999)}"
            task = "refund" if family == "refund" else "order_status"
            args = {"order": order, "timeout_s": 10} if family == "refund" else {"order": order, "attempt": 1}
            obs = Observation.task(phrase.format(order=order), task=task, id=root, args=args)
        elif family == "cloud":
            workload = rng.choice(WORKLOADS)
            obs = Observation.task(phrase.format(workload=workload), task="compare_cloud_prices", id=root,
                                   args={"workload": workload})
        else:
            city, area, (a, b) = rng.choice(CITIES)
            closed = a if rng.random() < 0.5 else None
            obs = Observation.task(phrase.format(city=city, area=area), task="plan_trip", id=root,
                                   args={"city": city, "area": area, "a": a, "b": b})
        tasks.append(Task(number, family, obs, closed))
    return tasks
