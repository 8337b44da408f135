"""A long-running memory: hundreds of events over several scenarios, rolled up (docs/time.md).

:func:`build` fills a memory the way months of an assistant's work would: six scenarios
(refunds, hotels, flights, alarms, documents, meetings), each with dozens of stored paths of
3 to 6 steps, generated deterministically from a seed; then every scenario is summarized.
:func:`show` prints the summaries and a coarse-to-fine locate beside the flat one.

>>> from hgm_engine import Memory
>>> memory = Memory()
>>> counts = build(memory)
>>> counts["scenarios"], counts["events"] >= 300
(6, True)
>>> result = memory.locate("my parcel arrived broken, I want my money back", coarse=True, scenarios=1)
>>> result.coarse["chosen"][0]["scenario"], result.matches[0].path.startswith("refunds-")
('refunds', True)
"""

from __future__ import annotations

import random
from typing import Any, Callable

__all__ = ["SCENARIOS", "build", "show"]

# scenario -> (goal templates, the steps its paths are made of)
SCENARIOS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "refunds": (
        ("Refund order {n}: the parcel arrived broken", "Return a damaged {item} and get the money back",
         "Refund a late delivery of order {n}"),
        ("look_up_order", "check_refund_policy", "ask_for_photo", "issue_refund", "notify_customer", "open_ticket"),
    ),
    "hotels": (
        ("Book a hotel near {place} for {k} nights", "Change the hotel booking in {place}",
         "Find a quiet room near {place}"),
        ("search_hotels", "compare_prices", "book_room", "pay_deposit", "send_confirmation", "ask_late_checkin"),
    ),
    "flights": (
        ("Fly to {place} on Friday", "Rebook the cancelled flight to {place}", "Find a cheap flight to {place}"),
        ("search_flights", "compare_fares", "book_seat", "check_in_online", "add_baggage", "send_boarding_pass"),
    ),
    "alarms": (
        ("Wake me up at {k} tomorrow", "Set an alarm if it rains in {place}", "Cancel the {k} o'clock alarm"),
        ("check_weather", "set_alarm", "snooze_alarm", "cancel_alarm", "read_forecast"),
    ),
    "documents": (
        ("Translate the {item} contract", "Summarize the quarterly {item} report", "Sign and send the {item} form"),
        ("open_document", "translate_text", "summarize_text", "request_signature", "send_email", "archive_file"),
    ),
    "meetings": (
        ("Schedule a meeting with the {item} team", "Move the {item} review to Thursday", "Invite {place} office to the call"),
        ("check_calendars", "find_slot", "send_invites", "book_room", "share_agenda", "record_minutes"),
    ),
}
_FILL = {
    "n": [str(1000 + i) for i in range(50)],
    "item": ["mug", "lamp", "chair", "sales", "legal", "design", "kettle", "hiring"],
    "place": ["Wangfujing", "Lisbon", "Osaka", "Berlin", "Nairobi", "Lima"],
    "k": ["2", "3", "6", "7"],
}


def build(memory: Any, *, paths_per_scenario: int = 14, seed: int = 0) -> dict[str, int]:
    """Ingest the scenarios' paths into ``memory`` (one transaction per scenario) and
    summarize each scenario; returns how many scenarios, paths and events there are."""
    rng = random.Random(seed)
    paths = 0
    for scenario, (goals, steps) in SCENARIOS.items():
        trajectories = []
        for number in range(paths_per_scenario):
            goal = rng.choice(goals).format(**{key: rng.choice(values) for key, values in _FILL.items()})
            chosen = rng.sample(steps, rng.randint(3, min(6, len(steps))))
            outcome = "failure" if rng.random() < 0.15 else "success"
            trajectories.append({"id": f"{scenario}-{number}", "goal": goal, "steps": chosen, "result": outcome,
                                 "reward": 0.0 if outcome == "failure" else 1.0})
        memory.ingest(trajectories, scenario=scenario, reason=f"months of {scenario}")
        paths += len(trajectories)
    events = 0
    for scenario in SCENARIOS:
        memory.summarize(scenario, reason=f"roll up {scenario}")
        events += memory.summary_of(scenario)["covers"]
    return {"scenarios": len(SCENARIOS), "paths": paths, "events": events}


def show(memory: Any, say: Callable[[str], None] = print, request: str = "my parcel arrived broken, I want my money back") -> None:
    """Print each scenario's summary, then the coarse-to-fine locate of ``request`` (each
    step) beside the flat one."""
    for scenario in SCENARIOS:
        summary = memory.summary_of(scenario)
        say(f"{summary['id']}: {summary['content'][:160]}…")
    coarse = memory.locate(request, k=3, coarse=True, scenarios=1)
    flat = memory.locate(request, k=3)
    chosen = coarse.coarse["chosen"]
    say(f"request: {request}")
    say(f"coarse: read {coarse.coarse['summaries']} summaries, chose "
        + ", ".join(f"{c['scenario']} ({c['score']:.3f})" for c in chosen))
    say(f"fine:   ranked {coarse.coarse['fine']['paths']} paths -> {', '.join(coarse.paths)}")
    say(f"flat:   ranked every path -> {', '.join(flat.paths)}")


if __name__ == "__main__":  # python -m planners.longrun
    from hgm_engine import Memory

    demo_memory = Memory()
    print(build(demo_memory))
    show(demo_memory)
