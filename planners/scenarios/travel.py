"""The travel scenario: a three-day Beijing trip with a hotel near Wangfujing.

The HTN planner decomposes the trip with the declarative method table ``travel_domain.json``
(hotel, two days of sights, a Great Wall day trip) and runs it against simulated tools. The
Forbidden City turns out to be closed on Mondays: reserving its tickets fails, the failure is
recorded as a fact, the memory rule ``closure_blocks_visits`` blocks the other Monday visit of
the palace, and the planner re-enters the plan at the failed node and rewrites only the
sightseeing branch — with the days swapped. The hotel constraint is never forgotten: it is a
fact under the trip goal and a memory constraint checked at every commit, and the booking and
the Great Wall pickup are read from memory.

>>> from hgm_engine import Memory
>>> memory = Memory()
>>> record = play(memory, lambda line: None)[0]
>>> record.status, record.outcome
('done', 'success')
>>> memory.query("#sights.descendants.where(type = 'action', status = 'done')").ids
['temple_tickets-r2', 'temple_tour-r2', 'palace_tickets-r2', 'palace_tour-r2']
>>> memory.node("book_hotel-result")["area"], memory.violations()
('Wangfujing', [])
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

__all__ = ["play", "afterwards", "make_tools", "domain", "task", "setup", "RULES", "TITLE", "QUERIES"]

TITLE = "plan a three-day Beijing trip with a hotel near Wangfujing"

RULES = """\
// A closure fact blocks the pending visits of that place on that day.
rule closure_blocks_visits: on add fact where content =~ 'closed on Mondays'
    then mark related_entities.related.where(type = 'action', status = 'pending', day = 'Mon')
         as blocked because 'the place is closed on Mondays'
// What was derived from a changed fact needs review.
propagate derived_from backward depth 3
// The user's hotel constraint, checked at every commit.
constraint hotel_near_wangfujing: each result where kind = 'hotel_booking' must area = 'Wangfujing'
"""

HOTELS = (
    {"name": "Sanlitun Lofts", "area": "Sanlitun", "price": 520},
    {"name": "Jade Courtyard Hotel", "area": "Wangfujing", "price": 780},
    {"name": "Wangfujing Grand", "area": "Wangfujing", "price": 1100},
)

QUERIES = (
    ("the user's constraints, kept under the trip goal", "#trip.children.where(type = 'fact', kind = 'user_constraint')"),
    ("what failed, and what it was about", "nodes.where(type = 'fact', kind = 'failure')"),
    ("Monday's plan after the repair", "#sights.subgoals.where(content =~ 'Monday').actions"),
    ("the hotel the Great Wall car picks up from", "nodes.where(type = 'result', kind = 'hotel_booking')"),
)


def domain() -> Domain:
    """The trip's method table (``travel_domain.json``, shipped with the package)."""
    text = importlib.resources.files(__package__).joinpath("travel_domain.json").read_text(encoding="utf-8")
    return Domain.from_table(json.loads(text))


def _the(place: str) -> str:
    return place if place.startswith("the ") else f"the {place}"


def make_tools() -> Toolbox:
    """Simulated travel tools. The Forbidden City is closed on Mondays."""
    tools = Toolbox()

    @tools.register("search_hotels")
    def search_hotels(area: str, nights: int) -> dict[str, Any]:
        outside = sum(1 for h in HOTELS if h["area"] != area)
        return {"summary": f"{len(HOTELS)} hotels with rooms for {nights} nights ({outside} outside {area})",
                "count": len(HOTELS), "hotels": [dict(h) for h in HOTELS]}

    @tools.register("book_hotel")
    def book_hotel(hotel: str, area: str, nights: int) -> dict[str, Any]:
        found = next(h for h in HOTELS if h["name"] == hotel)
        return {"summary": f"booked {hotel} ({found['area']}), {nights} nights at {found['price']} CNY",
                "hotel": hotel, "area": found["area"], "price": found["price"], "nights": nights, "confirmation": "BJ-4471"}

    @tools.register("reserve_tickets")
    def reserve_tickets(place: str, day: str) -> dict[str, Any]:
        return {"summary": f"2 tickets for {_the(place)} on {day}", "place": place, "day": day}

    @tools.register("book_guide")
    def book_guide(place: str, day: str) -> dict[str, Any]:
        return {"summary": f"English-speaking guide at {_the(place)}, {day} 14:00", "place": place, "day": day}

    @tools.register("book_transfer")
    def book_transfer(place: str, day: str, pickup: str) -> dict[str, Any]:
        return {"summary": f"car from {pickup} to {_the(place)}, {day} 08:00", "place": place, "day": day, "pickup": pickup}

    tools.fail_when("reserve_tickets", lambda a: a["place"] == "Forbidden City" and a["day"] == "Mon",
                    ToolError("The Forbidden City is closed on Mondays", kind="closed"))
    return tools


def task() -> Observation:
    """The user's request."""
    return Observation.task(
        "Plan a three-day Beijing trip (Monday to Wednesday) with a hotel near Wangfujing",
        task="plan_trip",
        id="trip",
        args={"city": "Beijing", "area": "Wangfujing", "nights": 3},
        constraints=[{"id": "c_hotel_area", "content": "The hotel must be near Wangfujing", "area": "Wangfujing"}],
    )


def setup(memory: Memory) -> None:
    """Load the travel rules (closure rule, staleness, the hotel constraint)."""
    memory.load_rules(RULES, name="travel")


def constraint_check(memory: Memory) -> str:
    """One line: is the user's hotel constraint still in memory and does it hold?"""
    kept = memory.query("#trip.children.where(kind = 'user_constraint').exists()").value if memory.node("trip") else False
    bad = [v for v in memory.violations() if v.constraint == "hotel_near_wangfujing"]
    state = "holds" if not bad else f"BROKEN at {', '.join(v.node for v in bad)}"
    return f"  check   hotel near Wangfujing: constraint fact {'kept' if kept else 'not yet recorded'}; hotel_near_wangfujing {state}"


def play(memory: Memory, say: Callable[[str], None], *, max_steps: int = 30) -> list[RunRecord]:
    """Run the scenario on ``memory`` (empty), printing the step log through ``say``."""
    setup(memory)
    say("Setup: rules 'travel' loaded into memory:")
    for line in RULES.splitlines():
        say("  " + line)
    say("The simulated reserve_tickets tool refuses the Forbidden City on Mondays; the planner does not know it yet.")
    say("")

    def listener(step: StepRecord, mem: Memory) -> None:
        for line in step.lines():
            say(line)
        say(constraint_check(mem))

    record = run(HTNPlanner(domain(), name="htn-travel"), memory, make_tools(), max_steps=max_steps, task=task(), listener=listener)
    say(record.lines()[-1])
    return [record]


def afterwards(memory: Memory, say: Callable[[str], None]) -> None:
    """Later: the hotel raises its rate — the old rate is closed, never overwritten (hgm facts)

    The booked rate is recorded as a fact valid from the start of the year; the new rate, from
    2026-06-01, is added and the old one invalidated in the same transaction (``invalidate``:
    ``valid_to``, a ``replaces`` edge, the reason), so both stay in memory and ``valid_at``
    tells them apart (docs/time.md).

    >>> from hgm_engine import Memory
    >>> memory = Memory()
    >>> _ = play(memory, lambda line: None)
    >>> afterwards(memory, lambda line: None)
    >>> memory.facts("e_jade", at="2026-03-01")["holding"], memory.facts("e_jade", at="2026-07-01")["holding"]
    (['rate-780'], ['rate-820'])
    """
    memory.apply({"author": "planner", "reason": "record the booked rate", "ops": [
        {"op": "add_node", "id": "e_jade", "type": "entity", "content": "Jade Courtyard Hotel (Wangfujing)"},
        {"op": "add_node", "id": "rate-780", "type": "fact", "content": "A room at the Jade Courtyard Hotel is 780 CNY a night",
         "valid_from": "2026-01-01"},
        {"op": "add_edge", "from": "e_jade", "to": "rate-780", "type": "related_to"},
    ]})
    report = memory.apply({"author": "planner", "reason": "the hotel announced a new rate from June", "ops": [
        {"op": "add_node", "id": "rate-820", "type": "fact", "content": "A room at the Jade Courtyard Hotel is 820 CNY a night"},
        {"op": "add_edge", "from": "e_jade", "to": "rate-820", "type": "related_to"},
        {"op": "invalidate", "id": "rate-780", "at": "2026-06-01", "by": "rate-820", "reason": "summer rates"},
    ]})
    say(f"t={report.t}: rate-820 added, rate-780 invalidated at 2026-06-01 by rate-820 (nothing deleted)")
    for when in ("2026-03-01", "2026-07-01"):
        doc = memory.facts("e_jade", at=when)
        say(f"  hgm facts e_jade --at {when}: holds {', '.join(doc['holding'])}")
        for fact in doc["facts"]:
            window = f"[{fact['valid_from'] or '…'} → {fact['valid_to'] or '…'})"
            later = f"  superseded by {', '.join(fact['superseded_by'])} ({fact['reason']})" if fact["superseded_by"] else ""
            say(f"    {'holds ' if fact['holds'] else '      '} {fact['id']}  {window}{later}")
