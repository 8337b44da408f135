"""LLM-proposed path rewrites (issue 5, item 6), driven through the real ``openai`` client
against a local OpenAI-compatible stub (tests/openai_stub.py) with scripted answers.

Nothing here leaves 127.0.0.1: the stub fixture sets OPENAI_BASE_URL/OPENAI_API_KEY for the
test only.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time

import pytest

pytest.importorskip("openai")

sys.path.insert(0, os.path.dirname(__file__))
from openai_stub import Scripted, openai_stub, stub_vector  # noqa: E402,F401 (openai_stub: the fixture)

from hgm_engine.errors import HGMError, Problem  # noqa: E402
from hgm_engine.llm import (  # noqa: E402
    REWRITE_ANSWER_SCHEMA,
    build_prompt,
    parse_answer,
    preview_steps,
    propose_rewrite,
    retry_message,
    rewrite_with_llm,
)
from hgm_engine.paths import resolve_steps  # noqa: E402
from hgm_engine.errors import RewriteProposalError
from hgm_engine.memory import Memory  # noqa: E402
from hgm_engine.txn import TransactionReport  # noqa: E402

PATH = {
    "id": "order-17",
    "goal": "Check the status of order A1001 and tell the user",
    "steps": [
        {"name": "query_order", "content": "call the order API", "args": {"order_id": "A1001"}},
        {"name": "check_result", "condition": "api_return_ok"},
        {"name": "notify_user"},
    ],
    "version": 1,
    "status": "active",
    "reward": 0.0,
    "result": "failure",
    "tags": ["order", "query"],
}
FEEDBACK = "the order API timed out twice; check the cache first and retry once"
VALID = {
    "kept": [0, 2],
    "changed": [{"index": 1, "step": {"name": "check_result", "condition": "api_return_ok_or_cached"}}],
    "added": [{"after": -1, "step": {"name": "check_cache", "content": "look in the order cache"}}],
    "removed": [],
    "reason": "serve from the cache when the API is slow",
}
MALFORMED = '{"kept": [0, 2], "changed": ['
SCHEMA_VIOLATION = {"kept": [0, 1, 2], "added": [{"after": 0, "step": {"content": "no name"}}], "removed": [],
                    "reason": "r", "extra": True}
WRONG_INDICES = {"kept": [0, 0, 7], "changed": [], "added": [], "removed": [], "reason": "r"}


class FakePathMemory:
    """Just enough of Memory's path API (path, rewrite_path) to test against."""

    def __init__(self, path=PATH):
        self.paths = {path["id"]: copy.deepcopy(path)}
        self.calls = []
        self.t = 1

    def path(self, path_id):
        if path_id not in self.paths:
            raise HGMError([Problem("unknown-path", f"no path {path_id!r}", where=path_id)])
        return copy.deepcopy(self.paths[path_id])

    def rewrite_path(self, path_id, steps_or_ops, reason, *, author=None):
        self.calls.append((path_id, steps_or_ops, reason, author))
        old = self.paths[path_id]
        self.t += 1
        new_id = f"{path_id}@v{old['version'] + 1}"
        self.paths[new_id] = {**old, "id": new_id, "version": old["version"] + 1,
                              "steps": preview_steps(old, steps_or_ops), "lineage": [path_id]}
        old["status"] = "superseded"
        return TransactionReport(committed=True, t=self.t, base_t=None, author=author, reason=reason, created=(new_id,))


def _propose(stub, **kwargs):
    kwargs.setdefault("model", "stub-model")
    kwargs.setdefault("timeout", 5)
    return propose_rewrite(PATH, FEEDBACK, **kwargs)


# -- the prompt ------------------------------------------------------------------------------------


def test_the_prompt_is_a_pure_function_of_the_path_and_the_feedback():
    first = build_prompt(PATH, FEEDBACK)
    reordered = {key: PATH[key] for key in reversed(list(PATH))}
    reordered["steps"] = [dict(reversed(list(step.items()))) for step in PATH["steps"]]
    assert build_prompt(copy.deepcopy(PATH), FEEDBACK) == first
    assert build_prompt(reordered, FEEDBACK) == first
    assert build_prompt(PATH, FEEDBACK + "!") != first


def test_the_prompt_holds_the_schema_the_numbered_steps_and_the_feedback():
    system, user = build_prompt(PATH, FEEDBACK)
    assert json.dumps(REWRITE_ANSWER_SCHEMA, sort_keys=True) in system["content"]
    assert '[0] {"args": {"order_id": "A1001"}, "content": "call the order API", "name": "query_order"}' in user["content"]
    assert '[2] {"name": "notify_user"}' in user["content"]
    assert FEEDBACK in user["content"]


def test_the_request_sent_is_the_pure_prompt_in_json_mode(openai_stub):
    openai_stub.push(Scripted.json(VALID))
    _propose(openai_stub)
    (request,) = openai_stub.chat_requests
    assert request["messages"] == build_prompt(PATH, FEEDBACK)
    assert request["response_format"] == {"type": "json_object"}
    assert request["model"] == "stub-model" and request["temperature"] == 0


# -- answers ---------------------------------------------------------------------------------------


def test_a_valid_first_answer_is_committed_as_a_new_version(openai_stub):
    openai_stub.push(Scripted.json(VALID))
    memory = FakePathMemory()
    report = rewrite_with_llm(memory, "order-17", FEEDBACK, model="stub-model", timeout=5)
    assert report.committed and report.t == 2
    ((path_id, ops, reason, author),) = memory.calls
    assert path_id == "order-17" and author == "llm:stub-model"
    assert ops == [
        {"add": {"name": "check_cache", "content": "look in the order cache"}, "after": -1},
        {"keep": 0},
        {"change": 1, "step": {"name": "check_result", "condition": "api_return_ok_or_cached"}},
        {"keep": 2},
    ]
    assert reason.startswith("serve from the cache when the API is slow") and FEEDBACK in reason
    assert [s["name"] for s in memory.paths["order-17@v2"]["steps"]] == ["check_cache", "query_order", "check_result", "notify_user"]
    assert len(openai_stub.chat_requests) == 1 and openai_stub.unexpected == 0


def test_malformed_then_valid_retries_once_with_the_error_in_the_conversation(openai_stub):
    openai_stub.push(Scripted.text(MALFORMED), Scripted.json(VALID))
    proposal = _propose(openai_stub)
    assert [a.ok for a in proposal.attempts] == [False, True]
    assert proposal.attempts[0].problems[0].startswith("not valid JSON")
    first, second = openai_stub.chat_requests
    prompt = build_prompt(PATH, FEEDBACK)
    assert second["messages"][:2] == prompt
    assert second["messages"][2] == {"role": "assistant", "content": MALFORMED}
    assert second["messages"][3] == retry_message(proposal.attempts[0].problems)
    assert "not valid JSON" in second["messages"][3]["content"]


def test_three_invalid_answers_change_nothing_and_list_every_problem(openai_stub):
    openai_stub.push(Scripted.text(MALFORMED), Scripted.json(SCHEMA_VIOLATION), Scripted.json(WRONG_INDICES))
    memory = FakePathMemory()
    before = copy.deepcopy(memory.paths)
    with pytest.raises(RewriteProposalError) as caught:
        rewrite_with_llm(memory, "order-17", FEEDBACK, model="stub-model", timeout=5)
    err = caught.value
    assert err.category == "invalid-model-answer"
    assert "no valid rewrite after 3 attempts; nothing was changed" in err.message
    assert [p.where for p in err.problems[1:]] == ["attempt 1", "attempt 2", "attempt 3"]
    text = str(err)
    assert "not valid JSON" in text
    assert "Additional properties are not allowed ('extra' was unexpected)" in text
    assert "$.added[0].step: missing 'name' (required)" in text
    assert "step 0 is listed twice in kept" in text and "there is no step 7" in text
    assert "steps 1, 2 not accounted for" in text
    assert memory.calls == [] and memory.paths == before
    assert len(openai_stub.chat_requests) == 3
    # each retry carries the previous answer's problems
    assert "Additional properties" in openai_stub.chat_requests[2]["messages"][-1]["content"]


# -- transport failures: the openai client's own retries, with backoff and Retry-After ---------------
# (these replaced tests that asserted the old behaviour: each timeout or 5xx cost one of our
# attempts and was sent again at once, whatever Retry-After said)


def test_a_slow_answer_is_retried_by_the_client_and_costs_no_attempt(openai_stub):
    openai_stub.push(Scripted.slow(3.0, json.dumps(VALID)), Scripted.json(VALID))
    started = time.monotonic()
    proposal = _propose(openai_stub, timeout=0.5)
    assert time.monotonic() - started < 2.5
    [attempt] = proposal.attempts
    assert attempt.ok
    # the client sent the same request again (nothing to correct)
    assert openai_stub.chat_requests[1]["messages"] == build_prompt(PATH, FEEDBACK)


def test_only_slow_answers_fail_as_model_unavailable_after_the_clients_retries(openai_stub):
    openai_stub.push(*[Scripted.slow(3.0)] * 2)
    with pytest.raises(RewriteProposalError) as caught:
        _propose(openai_stub, timeout=0.3, max_attempts=2, retries=1)
    assert caught.value.category == "model-unavailable"
    assert len(caught.value.problems) == 2  # the summary and the one attempt
    assert "timeout" in caught.value.problems[1].message and "after 1 retry" in caught.value.problems[1].message
    assert len(openai_stub.chat_requests) == 2


def test_a_server_error_is_retried_by_the_client_with_backoff(openai_stub):
    openai_stub.push(Scripted.error(503), Scripted.error(502), Scripted.json(VALID))
    proposal = _propose(openai_stub)
    assert [a.ok for a in proposal.attempts] == [True]
    first, second, third = openai_stub.chat_times
    assert second - first >= 0.3 and third - second >= 0.3  # backed off (0.5 s, then 1 s, less jitter)


def test_a_rate_limit_waits_as_long_as_retry_after_says(openai_stub):
    openai_stub.push(Scripted.error(429, "slow down", retry_after="1.2"), Scripted.json(VALID))
    proposal = _propose(openai_stub)
    assert proposal.attempts[-1].ok and len(proposal.attempts) == 1
    first, second = openai_stub.chat_times
    assert second - first >= 1.15  # more than the client's own first backoff (at most 0.5 s)


def test_a_server_error_fails_at_once_with_no_retries(openai_stub):
    openai_stub.push(Scripted.error(500, "overloaded"), Scripted.json(VALID))
    with pytest.raises(RewriteProposalError) as caught:
        _propose(openai_stub, retries=0)
    assert caught.value.category == "model-unavailable" and "HTTP 500: overloaded" in str(caught.value)
    assert len(openai_stub.chat_requests) == 1


def test_retries_below_zero_are_refused():
    with pytest.raises(RewriteProposalError) as caught:
        _propose(None, retries=-1)
    assert caught.value.category == "invalid-argument" and "retries" in caught.value.message


def test_an_exhausted_rate_limit_says_how_often_it_was_tried(openai_stub):
    openai_stub.push(*[Scripted.error(429, "quota", retry_after="0.1")] * 3)
    with pytest.raises(RewriteProposalError) as caught:
        _propose(openai_stub, retries=2)
    assert "HTTP 429: quota (after 2 retries)" in str(caught.value)
    assert len(openai_stub.chat_requests) == 3


def test_an_authentication_error_stops_at_once(openai_stub):
    openai_stub.push(Scripted.error(401, "bad key"), Scripted.json(VALID))
    with pytest.raises(RewriteProposalError) as caught:
        _propose(openai_stub)
    assert caught.value.category == "model-unavailable" and "HTTP 401" in str(caught.value)
    assert len(openai_stub.chat_requests) == 1


def test_a_server_without_json_mode_is_asked_again_without_it(openai_stub):
    openai_stub.push(Scripted.error(400, "response_format is not supported by this model"), Scripted.json(VALID))
    proposal = _propose(openai_stub)
    assert len(proposal.attempts) == 1
    first, second = openai_stub.chat_requests
    assert "response_format" in first and "response_format" not in second


def test_an_answer_in_a_code_fence_is_accepted(openai_stub):
    openai_stub.push(Scripted.text("```json\n" + json.dumps(VALID) + "\n```"))
    assert _propose(openai_stub).reason == VALID["reason"]


def test_an_answer_that_changes_nothing_is_invalid():
    with pytest.raises(RewriteProposalError, match="changes nothing"):
        parse_answer(json.dumps({"kept": [0, 1, 2], "changed": [], "added": [], "removed": [], "reason": "fine"}), PATH)


def test_an_answer_that_removes_every_step_is_invalid():
    with pytest.raises(RewriteProposalError, match="no steps"):
        parse_answer(json.dumps({"kept": [], "changed": [], "added": [], "removed": [0, 1, 2], "reason": "all"}), PATH)


def test_an_added_step_after_a_missing_index_is_named():
    answer = {"kept": [0, 1], "changed": [], "added": [{"after": 3, "step": {"name": "x"}}], "removed": [2], "reason": "r"}
    with pytest.raises(RewriteProposalError) as caught:
        parse_answer(json.dumps(answer), PATH)
    assert caught.value.problems[0].where == "$.added[0].after"


def test_a_step_listed_in_two_places_is_named():
    answer = {"kept": [0, 1, 2], "changed": [], "added": [], "removed": [1], "reason": "r"}
    with pytest.raises(RewriteProposalError, match="step 1 is listed in both kept and removed"):
        parse_answer(json.dumps(answer), PATH)


def test_ids_and_marks_in_the_answer_are_dropped():
    step = {"id": "a_x", "name": "n", "condition": "c", "dirty": "blocked", "status": "done"}
    answer = {"kept": [0, 2], "changed": [{"index": 1, "step": step}], "added": [], "removed": [], "reason": "r"}
    assert parse_answer(json.dumps(answer), PATH)[1] == {"change": 1, "step": {"name": "n", "condition": "c"}}


def test_a_changed_step_is_complete_so_attributes_it_leaves_out_are_removed():
    answer = {"kept": [1, 2], "changed": [{"index": 0, "step": {"name": "query_order"}}], "added": [], "removed": [], "reason": "r"}
    ops = parse_answer(json.dumps(answer), PATH)
    assert ops[0] == {"change": 0, "step": {"name": "query_order", "content": None, "args": None}}


def test_a_change_to_the_same_step_is_no_change():
    same = {"name": "check_result", "condition": "api_return_ok", "status": "failed"}
    answer = {"kept": [0, 2], "changed": [{"index": 1, "step": same}], "added": [], "removed": [], "reason": "r"}
    with pytest.raises(RewriteProposalError, match="changes nothing"):
        parse_answer(json.dumps(answer), PATH)


# -- the preview is what commits (one interpreter of edit ops) -------------------------------------

OUT_OF_ORDER = [{"add": {"name": "c"}, "after": 0}, {"keep": 0}, {"keep": 1}]


@pytest.mark.parametrize(
    ("ops", "names"),
    [(OUT_OF_ORDER, ["a", "c", "b"]), ([{"keep": 0}], ["a", "b"])],
    ids=["an add listed before the step it follows", "an old step no op names is kept"],
)
def test_the_preview_of_edit_ops_is_what_resolve_steps_makes(ops, names):
    old = [{"name": "a"}, {"name": "b"}]
    assert [s["name"] for s in preview_steps({"steps": old}, ops)] == names
    assert [s["name"] for s in resolve_steps(old, ops)[0]] == names


def test_the_preview_of_out_of_order_ops_is_the_committed_version():
    memory = Memory()
    memory.ingest([{"id": "p", "goal": "g", "steps": ["a", "b"]}])
    preview = preview_steps(memory.path("p"), OUT_OF_ORDER)
    assert memory.rewrite_path("p", OUT_OF_ORDER, "c goes after a").committed
    assert [s["name"] for s in memory.path("p")["steps"]] == [s["name"] for s in preview] == ["a", "c", "b"]


def test_the_example_in_the_prompt_is_a_valid_answer():
    from hgm_engine.llm import EXAMPLE_ANSWER

    three = {"steps": [{"name": "search"}, {"name": "book"}, {"name": "notify"}]}
    assert parse_answer(json.dumps(EXAMPLE_ANSWER), three)
    assert json.dumps(EXAMPLE_ANSWER, sort_keys=True) in build_prompt(PATH, FEEDBACK)[0]["content"]


def test_empty_feedback_is_refused_before_any_request(openai_stub):
    with pytest.raises(RewriteProposalError) as caught:
        propose_rewrite(PATH, "   ", timeout=5)
    assert caught.value.category == "invalid-argument" and openai_stub.requests == []


def test_an_unknown_path_sends_nothing(openai_stub):
    with pytest.raises(HGMError) as caught:
        rewrite_with_llm(FakePathMemory(), "nope", FEEDBACK, timeout=5)
    assert caught.value.category == "unknown-path" and openai_stub.requests == []


def test_no_endpoint_configured_is_model_unavailable(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(RewriteProposalError) as caught:
        propose_rewrite(PATH, FEEDBACK)
    assert caught.value.category == "model-unavailable" and "OPENAI_BASE_URL" in caught.value.message


# -- the stub's embeddings (shared with the embedder tests) ----------------------------------------


def test_the_stub_serves_deterministic_embeddings_to_the_openai_embedder(openai_stub):
    from hgm_engine.paths.localize import OpenAIEmbedder

    embedder = OpenAIEmbedder("stub-embed", timeout=5)
    vectors = embedder.embed_documents(["book a flight", "cancel a hotel", "book a flight"])
    assert vectors[0] == vectors[2] == pytest.approx(stub_vector("book a flight"))
    assert vectors[0] != vectors[1]
    assert openai_stub.embedding_requests[0]["input"] == ["book a flight", "cancel a hotel", "book a flight"]


# -- against the real Memory (its path API) ------------------------------------


TRAJECTORY = {key: PATH[key] for key in ("id", "goal", "steps", "tags", "result", "reward")}


def _memory(location=None):
    memory = Memory.open(location) if location else Memory()
    memory.ingest([TRAJECTORY])
    return memory


def test_real_memory_a_valid_answer_becomes_version_2(openai_stub):
    openai_stub.push(Scripted.json(VALID))
    memory = _memory()
    old = memory.path("order-17")
    report = rewrite_with_llm(memory, "order-17", FEEDBACK, model="stub-model", timeout=5)
    assert report.committed and report.created == ("order-17@v2",)
    path = memory.path("order-17")
    assert path["id"] == "order-17@v2" and path["version"] == 2 and path["lineage"] == ["order-17", "order-17@v2"]
    assert [s["name"] for s in path["steps"]] == ["check_cache", "query_order", "check_result", "notify_user"]
    assert path["steps"][2]["condition"] == "api_return_ok_or_cached"
    assert path["steps"][1]["args"] == {"order_id": "A1001"}  # kept as it was
    assert path["rewrite_reason"].startswith(VALID["reason"])
    assert memory.path("order-17@v1")["status"] == "superseded"
    assert memory.commits()[-1].author == "llm:stub-model"
    # the prompt was built from what Memory.path returned before the rewrite
    assert openai_stub.chat_requests[0]["messages"] == build_prompt(old, FEEDBACK)


def test_real_memory_three_invalid_answers_change_nothing(openai_stub):
    openai_stub.push(Scripted.text(MALFORMED), Scripted.json(SCHEMA_VIOLATION), Scripted.json(WRONG_INDICES))
    memory = _memory()
    t, before = memory.t, memory.export()
    with pytest.raises(RewriteProposalError) as caught:
        rewrite_with_llm(memory, "order-17", FEEDBACK, model="stub-model", timeout=5)
    assert caught.value.category == "invalid-model-answer" and len(caught.value.problems) == 4
    assert memory.t == t and memory.export() == before
    assert memory.path("order-17")["version"] == 1


def test_real_memory_a_guard_refuses_before_the_model_is_asked(openai_stub):
    from hgm_engine.paths import PathGuards

    memory = _memory()
    memory.path_guards = PathGuards(max_rewrites=0)
    with pytest.raises(HGMError) as caught:
        rewrite_with_llm(memory, "order-17", FEEDBACK, model="stub-model", timeout=5)
    assert caught.value.category == "rewrite-cap" and openai_stub.requests == []


def test_real_memory_a_rewrite_that_breaks_a_constraint_is_refused(openai_stub):
    openai_stub.push(Scripted.json(VALID))
    memory = _memory()
    memory.add_constraint("cache_needs_result", "each action where name = 'check_cache' must exists(results)")
    report = rewrite_with_llm(memory, "order-17", FEEDBACK, model="stub-model", timeout=5)
    assert not report.committed and report.violations[0].constraint == "cache_needs_result"
    assert memory.path("order-17")["version"] == 1


# -- the command -----------------------------------------------------------------------------------


def _db(tmp_path):
    location = str(tmp_path / "memory.db")
    _memory(location).close()
    return location


def _t(location):
    with Memory.open(location) as memory:
        return memory.t


def test_cli_rewrite_commits_and_prints_the_report_with_the_proposal(openai_stub, tmp_path, capsys):
    from hgm_engine.cli import main

    db = _db(tmp_path)
    openai_stub.push(Scripted.text(MALFORMED), Scripted.json(VALID))
    code = main(["rewrite", "order-17", "--feedback", FEEDBACK, "--db", db, "--model", "stub-model", "--timeout", "5", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["committed"] and doc["created"] == ["order-17@v2"]
    assert [a["ok"] for a in doc["proposal"]["attempts"]] == [False, True]
    assert [s["name"] for s in doc["proposal"]["steps"]] == ["check_cache", "query_order", "check_result", "notify_user"]
    with Memory.open(db) as memory:
        assert memory.path("order-17")["id"] == "order-17@v2"


def test_cli_rewrite_text_output_for_people(openai_stub, tmp_path, capsys):
    from hgm_engine.cli import main

    db = _db(tmp_path)
    openai_stub.push(Scripted.json(VALID))
    assert main(["rewrite", "order-17", "--feedback", FEEDBACK, "--db", db, "--model", "stub-model"]) == 0
    out = capsys.readouterr().out
    assert "add     before [0]  check_cache: look in the order cache" in out
    assert 'change  [1] check_result: condition "api_return_ok" → "api_return_ok_or_cached"' in out
    assert "reason: serve from the cache when the API is slow" in out
    assert f"committed t={_t(db)}: order-17 rewritten (new nodes: order-17@v2)" in out


def test_cli_dry_run_shows_the_proposal_and_commits_nothing(openai_stub, tmp_path, capsys):
    from hgm_engine.cli import main

    db = _db(tmp_path)
    t = _t(db)
    openai_stub.push(Scripted.json(VALID))
    assert main(["rewrite", "order-17", "--feedback", FEEDBACK, "--db", db, "--model", "stub-model", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "new steps: check_cache" in out and "(dry run: nothing was committed)" in out
    assert _t(db) == t


def test_cli_invalid_answers_exit_1_with_every_reason(openai_stub, tmp_path, capsys):
    from hgm_engine.cli import main

    db = _db(tmp_path)
    t = _t(db)
    openai_stub.push(Scripted.text(MALFORMED), Scripted.json(WRONG_INDICES))
    code = main(["rewrite", "order-17", "--feedback", FEEDBACK, "--db", db, "--model", "stub-model", "--attempts", "2"])
    err = capsys.readouterr().err
    assert code == 1
    assert "no valid rewrite after 2 attempts; nothing was changed" in err
    assert "attempt 1: not valid JSON" in err and "attempt 2: $.kept[1]: step 0 is listed twice" in err
    assert _t(db) == t


def test_cli_failure_with_json_is_one_document(openai_stub, tmp_path, capsys):
    from hgm_engine.cli import main

    db = _db(tmp_path)
    openai_stub.push(Scripted.error(500), Scripted.slow(3.0))
    code = main(["rewrite", "order-17", "--feedback", FEEDBACK, "--db", db, "--model", "stub-model",
                 "--attempts", "2", "--timeout", "0.3", "--retries", "1", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["committed"] is False
    assert doc["error"]["category"] == "model-unavailable" and len(doc["attempts"]) == 1
    assert "timeout" in doc["attempts"][0]["problems"][0] and len(openai_stub.chat_requests) == 2


def test_cli_retries_is_the_clients_retry_count(openai_stub, tmp_path, capsys):
    from hgm_engine.cli import main

    db = _db(tmp_path)
    openai_stub.push(Scripted.error(503, "busy"), Scripted.json(VALID))
    code = main(["rewrite", "order-17", "--feedback", FEEDBACK, "--db", db, "--model", "stub-model",
                 "--retries", "0", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and "HTTP 503: busy" in doc["attempts"][0]["problems"][0]
    assert len(openai_stub.chat_requests) == 1


def test_cli_constraint_refusal_exits_3(openai_stub, tmp_path, capsys):
    from hgm_engine.cli import main

    db = _db(tmp_path)
    with Memory.open(db) as memory:
        memory.add_constraint("cache_needs_result", "each action where name = 'check_cache' must exists(results)")
    openai_stub.push(Scripted.json(VALID))
    assert main(["rewrite", "order-17", "--feedback", FEEDBACK, "--db", db, "--model", "stub-model"]) == 3
    assert "cache_needs_result" in capsys.readouterr().err


def test_cli_unknown_path_exits_1_without_asking(openai_stub, tmp_path, capsys):
    from hgm_engine.cli import main

    db = _db(tmp_path)
    assert main(["rewrite", "nope", "--feedback", FEEDBACK, "--db", db]) == 1
    assert "unknown-path" in capsys.readouterr().err and openai_stub.requests == []


def test_a_model_that_refuses_a_temperature_is_asked_again_without_it(openai_stub):
    openai_stub.push(Scripted.error(400, "Unsupported value: 'temperature' does not support 0"), Scripted.json(VALID))
    proposal = _propose(openai_stub)
    assert len(proposal.attempts) == 1
    assert "temperature" in openai_stub.chat_requests[0] and "temperature" not in openai_stub.chat_requests[1]
    assert openai_stub.chat_requests[1]["response_format"] == {"type": "json_object"}


def test_a_bad_request_that_names_no_option_stops_at_once(openai_stub):
    openai_stub.push(Scripted.error(400, "messages: too long"), Scripted.json(VALID))
    with pytest.raises(RewriteProposalError, match="HTTP 400: messages: too long"):
        _propose(openai_stub)
    assert len(openai_stub.chat_requests) == 1
