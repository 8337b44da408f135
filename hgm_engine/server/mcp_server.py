"""``hgm mcp``: memories as Model Context Protocol tools, over stdio or streamable HTTP (the
official SDK).

:data:`TOOLS` defines each tool (name, description written for an LLM, JSON Schema of its
input, and the operation of :class:`~hgm_engine.server.service.MemoryService` it runs);
:func:`call_tool` validates the arguments and runs one on the memory its ``memory`` argument
names (else the server's default), within the grant of the request's token
(:mod:`hgm_engine.server.tokens`), returning the result document or an ``{"error": ...}``
document (an error result, ``is_error``). :func:`build_server` makes the SDK's low-level
``Server`` with those tools over a :class:`~hgm_engine.server.registry.MemoryRegistry`;
:func:`main` serves it on stdin/stdout, or with ``--transport streamable-http`` over HTTP
(:func:`http_app`, behind :class:`TokenCheck` with ``--token-file``)::

    python -m hgm_engine.server.mcp_server --db memory.db
    python -m hgm_engine.server.mcp_server --db memory.db --transport streamable-http --port 8766 --token-file tokens.txt

Configure a client (e.g. a desktop host) with that command. The protocol uses stdout; logs
go to stderr. Every line the client sends gets an answer: one that is not JSON gets the
JSON-RPC parse error (-32700, id null), JSON that is no JSON-RPC message gets invalid request
(-32600, with the message's id when it has a usable one), and the server reads on
(:func:`line_error`); the SDK alone would drop such a line without a word, and the client
would wait for ever.

>>> from hgm_engine import Memory
>>> from hgm_engine.server.service import MemoryService
>>> service = MemoryService(Memory())
>>> sorted(t.name for t in TOOLS)[:4]
['add_constraint', 'changes', 'commits', 'confirm']
>>> call_tool(service, "transact", {"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})[0]["t"]
1
>>> doc, failed = call_tool(service, "query", {"expr": "root.subgoal"})
>>> failed, doc["error"]["category"]
(True, 'unknown-name')
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import sys
from typing import Any, Callable, Mapping

import attrs

from hgm_engine import __version__
from hgm_engine.errors import HGMError
from hgm_engine.memory import Memory
from hgm_engine.model import value_problem
from hgm_engine.errors import Problem, ServiceError
from hgm_engine.server.service import MemoryService, ServerLimits, add_llm_arguments, error_document, llm_endpoint
from hgm_engine.server.tokens import OPEN_ACCESS, Grant, TokenFile, TokenScopes
from hgm_engine.store import DEFAULT_MEMORY, check_memory_name, check_memory_prefix, unknown_memory

__all__ = [
    "TOOLS",
    "SEARCH_TOOLS",
    "MORE_TOOLS",
    "MEMORY_TOOLS",
    "STORE_TOOLS",
    "MEMORY_ARGUMENT",
    "Access",
    "memories_of",
    "RESOURCES",
    "PROMPTS",
    "read_resource",
    "get_prompt",
    "Tool",
    "call_tool",
    "line_error",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "Resource",
    "RESOURCE_TEMPLATES",
    "GLOBAL_RESOURCES",
    "MEMORY_RESOURCE_TEMPLATES",
    "MEMORY_URI",
    "language_reference",
    "memory_language",
    "Prompt",
    "build_server",
    "request_grant",
    "serve",
    "http_app",
    "serve_http",
    "TokenCheck",
    "main",
    "add_parser",
    "add_arguments",
    "run",
]

logger = logging.getLogger("hgm.mcp")

# anyOf, not "type": [...]: some function-calling APIs refuse a list of types.
_AS_OF = {
    "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1}],
    "description": "Read the memory as it was at this t (a commit number), at a snapshot name, or at an ISO 8601 time (the last commit at or before it, e.g. 2026-03-01T09:30:00Z); omit for now.",
}


def _t_or_name(description: str) -> dict[str, Any]:
    return {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1}], "description": description}

_OP = {
    "type": "object",
    "description": (
        "One operation. op is one of: "
        "add_node {id?, type, parent?, order?, ...attributes}; "
        "update_node {id, set?: {attr: value}, unset?: [attr]}; "
        "delete_node {id, cascade?: bool}; "
        "add_edge {from, to, type, ...attributes}; "
        "update_edge {from, to, type, set?, unset?}; "
        "delete_edge {from, to, type}; "
        "replace_branch {id, with: [nested plan nodes {id?, type, children?: [...], ...attributes}], set?}; "
        "confirm {id} (clear a node's staleness marks); "
        "invalidate {id, at, by?, reason?} (close a fact's valid time at the ISO 8601 time at instead of "
        "deleting it; by is the newer fact that supersedes it)."
    ),
    "properties": {
        "op": {
            "type": "string",
            "enum": [
                "add_node",
                "update_node",
                "delete_node",
                "add_edge",
                "update_edge",
                "delete_edge",
                "replace_branch",
                "confirm",
                "invalidate",
            ],
        }
    },
    "required": ["op"],
}


@attrs.frozen
class Tool:
    """One MCP tool: what the model reads (name, description, input schema) and what runs.

    ``run`` takes the :class:`MemoryService` of the memory the call names (its ``memory``
    argument, else the server's default) and the other arguments; a tool with
    ``per_memory=False`` (``list_memories``, ``create_memory``) takes the :class:`Access` of
    the call instead. ``read_only`` says whether a read token may call it; ``reads_only``, when
    given, says so per call (``transact`` with ``dry_run`` commits nothing).
    """

    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    run: Callable[[Any, dict[str, Any]], dict[str, Any]]
    read_only: bool = True
    per_memory: bool = True
    reads_only: Callable[[Mapping[str, Any]], bool] | None = None

    def writes(self, arguments: Mapping[str, Any]) -> bool:
        """Whether this call changes its memory (a read token may not make it).

        >>> tool = next(t for t in TOOLS if t.name == "transact")
        >>> tool.writes({"ops": []}), tool.writes({"ops": [], "dry_run": True})
        (True, False)
        """
        if self.read_only:
            return False
        return not (self.reads_only is not None and self.reads_only(arguments))


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


TOOLS: tuple[Tool, ...] = (
    Tool(
        "query",
        "Query the memory",
        "Read the task memory with a path expression; returns the matching nodes (ids and attributes), "
        "a count, a boolean or paths, plus t (the state read; pass it as base_t to transact). "
        "Starts: root (top-level goals), nodes (all), #ID (one node), focus, $param, search($text) (nodes whose "
        "text matches, most relevant first; see the search tool). "
        "Steps: .children .parent .subgoals .actions .descendants .ancestors .siblings .next .prev "
        ".following .preceding .related .related_facts .related_entities .results .sources .derived "
        ".out(edge_type) .in(edge_type); repetition {m,n} after a one-hop step; "
        ".where(cond) with = != < <= > >= in contains =~ and or not exists(rel) count(rel) has(attr); "
        "[i] [a:b] .first() .last() .limit(n) .sort_by(attr, 'desc') .rank($text) (most relevant first); "
        "finals .count() .exists() .paths(). "
        "Examples: \"root.actions.where(status = 'pending')\", \"#trip.descendants.where(type = 'action').count()\", "
        "\"nodes.where(content =~ $pattern)\" with params {\"pattern\": \"hotel\"}. "
        "Put values in params rather than pasting them into expr. Errors name the category "
        "(syntax, unknown-name with a suggestion, missing-parameter, limit-exceeded) and the position.",
        _schema(
            {
                "expr": {"type": "string", "description": "The path expression."},
                "params": {"type": "object", "description": "Values for the $names used in expr (JSON values)."},
                "focus": {"type": "string", "description": "Node id that `focus` and `current_goal` refer to."},
                "as_of": _AS_OF,
                "nodes": {"type": "boolean", "description": "Include node attributes (default true); false returns ids only."},
            },
            ["expr"],
        ),
        lambda s, a: s.query(a["expr"], a.get("focus"), a.get("params"), a.get("as_of"), nodes=a.get("nodes", True)),
    ),
    Tool(
        "explain",
        "Explain a query",
        "Show how a path expression would run: its result kind, the parameters it needs, whether it "
        "uses the focus, and the optimized plan. Nothing is read or changed. Use it to check a query "
        "before running it or to understand an error.",
        _schema(
            {
                "expr": {"type": "string", "description": "The path expression."},
                "physical": {"type": "boolean", "description": "Also say how each step runs."},
            },
            ["expr"],
        ),
        lambda s, a: s.explain(a["expr"], physical=a.get("physical", False)),
    ),
    Tool(
        "transact",
        "Change the memory",
        "Apply a list of operations as ONE transaction: all of them or none. Ops apply in order and "
        "each sees the ones before (add a node, then an edge to it). Returns the report: committed, "
        "t, the changes, rules that fired and nodes marked stale. Refused transactions change "
        "nothing and say why: constraint-violation (every violation listed), conflict (something "
        "you read changed after base_t: query again and retry), unknown-node, duplicate-id. "
        "Use dry_run to check without committing. Node types of the default schema: goal, action, entity, "
        "fact, result; edge types: parent_of, before, related_to, derived_from, produces, replaces, causes "
        "(a memory may have a schema of its own: get_schema). "
        "Example ops: [{\"op\": \"add_node\", \"id\": \"a9\", \"type\": \"action\", \"parent\": \"day1\", "
        "\"content\": \"Visit the Summer Palace\", \"status\": \"pending\"}, "
        "{\"op\": \"update_node\", \"id\": \"a3\", \"set\": {\"status\": \"done\"}}].",
        _schema(
            {
                "ops": {"type": "array", "items": _OP, "minItems": 1, "description": "The operations, in order."},
                "author": {"type": "string", "description": "Who makes the change (recorded in the history)."},
                "reason": {"type": "string", "description": "Why (recorded in the history)."},
                "base_t": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "The t your reads were made at; refuse as a conflict if what this touches changed since.",
                },
                "dry_run": {"type": "boolean", "description": "Check everything, commit nothing."},
            },
            ["ops"],
        ),
        lambda s, a: s.transact({k: v for k, v in a.items() if k != "dry_run"}, dry_run=a.get("dry_run", False)),
        read_only=False,
    ),
    Tool(
        "locate",
        "Find stored decision paths",
        "Find the stored decision paths (past trajectories: a goal and its ordered steps) that best "
        "fit what you are about to do, best first, each with a score and the breakdown of the score. "
        "Reuse a good match's steps, or rewrite it with rewrite_path when the user corrects it.",
        _schema(
            {
                "text": {"type": "string", "minLength": 1, "description": "The task or question, in natural language."},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags that matching paths should carry."},
                "k": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many matches (default 5)."},
                "coarse": {"type": "boolean", "description": "Read the scenario summaries first (summarize), then rank only their paths."},
                "scenarios": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "With coarse: scenarios to keep (default 3; 1 with fuse)."},
                "fuse": {"type": "boolean", "description": "With coarse: leave no path out; re-rank the flat matches with the chosen scenarios' ranks."},
            },
            ["text"],
        ),
        lambda s, a: s.locate(a["text"], a.get("tags"), a.get("k", 5), coarse=a.get("coarse", False), scenarios=a.get("scenarios"),
                              fuse=a.get("fuse", False)),
    ),
    Tool(
        "rewrite_path",
        "Rewrite a stored path",
        "Record a corrected version of a stored decision path (found with locate): the old version "
        "is kept and marked superseded, the new one becomes current. steps is either the full new "
        "list of steps or edit ops ({\"keep\": i}, {\"change\": i, ...}, {\"add\": {...}, \"after\": i}, "
        "{\"remove\": i}). Give the reason (e.g. the user's correction).",
        _schema(
            {
                "path_id": {"type": "string", "minLength": 1, "description": "The path (trajectory) id."},
                "steps": {"type": "array", "minItems": 1, "description": "The new steps, or edit ops."},
                "reason": {"type": "string", "minLength": 1, "description": "Why the path changes."},
            },
            ["path_id", "steps", "reason"],
        ),
        lambda s, a: s.rewrite_path(a["path_id"], a["steps"], a["reason"]),
        read_only=False,
    ),
    Tool(
        "stale",
        "List stale nodes",
        "List the nodes that rules marked needs_review or blocked after something they depend on "
        "changed, with each mark's rule, cause and t. Re-check them; clear a mark with "
        "transact [{\"op\": \"confirm\", \"id\": ...}] or update the node.",
        _schema({"as_of": _AS_OF}, []),
        lambda s, a: s.stale(a.get("as_of")),
    ),
    Tool(
        "frontier",
        "Next actions of a goal",
        "The pending actions under a goal that can run now: every action that must come before "
        "them (before edges) is done, and they are neither blocked nor marked stale. Use it to "
        "pick what to do next.",
        _schema({"goal": {"type": "string", "minLength": 1, "description": "The goal's node id."}, "as_of": _AS_OF}, ["goal"]),
        lambda s, a: s.frontier(a["goal"], a.get("as_of")),
    ),
    Tool(
        "facts",
        "What holds about an entity",
        "The facts about an entity (related_to) with their valid time [valid_from, valid_to), "
        "whether each holds at the ISO 8601 time at (default: now) and what superseded what "
        "(invalidate links the newer fact). Use it to read the current price, rule or state of "
        "something without older facts competing.",
        _schema(
            {
                "id": {"type": "string", "minLength": 1, "description": "The entity's node id."},
                "at": {"type": "string", "description": "The valid time, ISO 8601 (2026-03-01 or 2026-03-01T09:30:00Z); omit for now."},
                "as_of": _AS_OF,
            },
            ["id"],
        ),
        lambda s, a: s.facts(a["id"], a.get("at"), a.get("as_of")),
    ),
    Tool(
        "summarize",
        "Summarize a scenario",
        "Roll a scenario's events (or any subtree) up into one summary node (kind 'summary', "
        "linked by 'summarizes' edges to each node it covers): counts, salient steps, entities, "
        "outcomes. Read summaries first (query #ID.summaries) and descend into the events they "
        "cover. Summarizing again refreshes it; it is marked needs_review when what it covers changes.",
        _schema(
            {
                "id": {"type": "string", "minLength": 1, "description": "The scenario (or any node) to summarize."},
                "max_items": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Steps, entities and outcomes named (default 8)."},
                "author": {"type": "string"},
                "reason": {"type": "string"},
            },
            ["id"],
        ),
        lambda s, a: s.summarize(a["id"], a.get("author"), a.get("reason"), a.get("max_items")),
    ),
    Tool(
        "get_node",
        "Read one node",
        "One node with all its attributes (now, or as_of an earlier t or snapshot).",
        _schema({"id": {"type": "string", "minLength": 1, "description": "The node id."}, "as_of": _AS_OF}, ["id"]),
        lambda s, a: s.node(a["id"], a.get("as_of")),
    ),
    Tool(
        "history",
        "History of a node",
        "Every commit that touched a node (its attributes or its edges), oldest first: t, author, "
        "reason, time and the changes.",
        _schema({"node": {"type": "string", "minLength": 1, "description": "The node id."}}, ["node"]),
        lambda s, a: s.history(a["node"]),
    ),
)

# -- search: the node index (hgm_engine.retrieval) ----------------------------------------------

SEARCH_TOOLS: tuple[Tool, ...] = (
    Tool(
        "search",
        "Search the memory by text",
        "Find the nodes whose text (content, name, title, description, tags) is about something, "
        "most relevant first, with a score and the words that matched. Use it when you know what "
        "a node is ABOUT but not where it is or what it is called: 'what do we know about the hotel "
        "price?' -> text 'hotel price'. Write a path expression with query instead when you can "
        "name the place (#trip.subgoals, root.actions.where(status = 'pending')) or need exact "
        "conditions, counts or structure. The two combine: query \"search($q).where(type = 'fact')\" "
        "or \"(search($q)).ancestors.where(type = 'goal')\" with params {\"q\": \"hotel price\"}, and "
        "\".rank($q)\" reorders any list by relevance. Words match without case and by stem "
        "(hotels = hotel); very common words are ignored, so a text made only of them is refused. "
        "With an embedder set, nodes also match by meaning (then each hit has a similarity).",
        _schema(
            {
                "text": {"type": "string", "minLength": 1, "description": "What to look for, in words."},
                "type": {
                    "type": "string",
                    "description": "Only nodes of this type: goal, action, entity, fact or result.",
                },
                "limit": {"type": "integer", "minimum": 0, "maximum": 1000, "description": "How many nodes at most (default 10)."},
                "as_of": _AS_OF,
                "coarse": {"type": "boolean", "description": "Read the summaries first (summarize), then rank only the nodes the best of them cover."},
                "summaries": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "With coarse: summaries to keep (default 3)."},
            },
            ["text"],
        ),
        lambda s, a: s.search(a["text"], a.get("type"), a.get("limit", 10), a.get("as_of"),
                              a.get("coarse", False), a.get("summaries", 3)),
    ),
    Tool(
        "index_status",
        "What the search index holds",
        "The node index behind search: how many nodes have text, its terms, the fields it reads and "
        "the memory's embedder (none: words only). Use it to see whether search can match by meaning.",
        _schema({}, []),
        lambda s, a: s.search_status(),
    ),
    Tool(
        "set_embedder",
        "Set the memory's embedder",
        "Choose how search matches by meaning, for this memory: embedder 'minilm' (in this process, when "
        "installed), 'openai' or 'openai:MODEL' (an OpenAI-compatible endpoint at base_url, else the "
        "server's OPENAI_BASE_URL), or null for words only. Every node's text is embedded now; an unknown "
        "embedder or one that fails changes nothing. Then every commit embeds the text it adds, and fails "
        "whole when the embedder fails: set it only when asked to.",
        _schema(
            {
                "embedder": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}],
                             "description": "minilm, openai, openai:MODEL, or null for words only."},
                "base_url": {"type": "string", "description": "The OpenAI-compatible endpoint (http:// or https://)."},
                "min_similarity": {"type": "number", "minimum": -1, "maximum": 1,
                                   "description": "The cosine a text needs to match by meaning (default 0.35)."},
            },
            ["embedder"],
        ),
        lambda s, a: s.configure_search(a["embedder"], a.get("base_url"), a.get("min_similarity")),
        read_only=False,
    ),
)

TOOLS = TOOLS + SEARCH_TOOLS

# -- every other capability (issue 16): history, rules, paths, the LLM -------------------------
# One tool per MemoryService operation; docs/server.md has the table (Memory method, route, tool).

_TEXT = {"type": "string", "minLength": 1}
_WHO = {"author": {"type": "string", "description": "Who makes the change (recorded in the history)."},
        "reason": {"type": "string", "description": "Why (recorded in the history)."}}

MORE_TOOLS: tuple[Tool, ...] = (
    Tool(
        "focus_path",
        "Path from a root to a node",
        "The ids from a root goal down to a node, following first parents: where a node sits in the "
        "plan. Use it to see the context of an action before changing it.",
        _schema({"node": {**_TEXT, "description": "The node id."}, "as_of": _AS_OF}, ["node"]),
        lambda s, a: s.focus_path(a["node"], a.get("as_of")),
    ),
    Tool(
        "diff",
        "What changed between two states",
        "The changes (nodes and edges added, updated, deleted, with before and after) from state "
        "'from' to state 'to' (default: now). States are t values or snapshot names.",
        _schema({"from": _t_or_name("The earlier state: a t or a snapshot name."),
                 "to": _t_or_name("The later state (default: now).")}, ["from"]),
        lambda s, a: s.diff(a["from"], a.get("to")),
    ),
    Tool(
        "changes",
        "What happened since a t",
        "The commits after a t or snapshot (who, why, which rules fired) and the net changes since. "
        "Use it to catch up after other agents wrote to the memory.",
        _schema({"since": _t_or_name("A t or a snapshot name.")}, ["since"]),
        lambda s, a: s.changes_since(a["since"]),
    ),
    Tool(
        "commits",
        "List commits",
        "The commits after a t or snapshot, oldest first, at most 'limit' (default 100): t, author, "
        "reason, time, kind, how many changes, the rules that fired; 'more' says whether later ones were left out.",
        _schema({"since": _t_or_name("A t or a snapshot name (default 0)."),
                 "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "At most this many."}}, []),
        lambda s, a: s.commits(a.get("since", 0), a.get("limit", 100)),
    ),
    Tool(
        "snapshots",
        "List snapshots",
        "The named states of the memory (snapshot name -> t). Any tool taking as_of, from, to or "
        "since also takes a snapshot name.",
        _schema({}, []),
        lambda s, a: s.snapshots(),
    ),
    Tool(
        "snapshot",
        "Name a state",
        "Give the current state (or the state at t) a name, to read it later with as_of or diff "
        "against it. A name is any text that is not a number; naming again moves the name.",
        _schema({"name": {**_TEXT, "maxLength": 200, "description": "The snapshot name."},
                 "t": {"type": "integer", "minimum": 0, "description": "The state to name (default: now)."}}, ["name"]),
        lambda s, a: s.snapshot(a["name"], a.get("t")),
        read_only=False,
    ),
    Tool(
        "confirm",
        "Clear a node's staleness marks",
        "After re-checking a node that rules marked needs_review or blocked (see stale), clear its "
        "marks; recorded as a commit. Returns the transaction report.",
        _schema({"id": {**_TEXT, "description": "The node id."}, **_WHO}, ["id"]),
        lambda s, a: s.confirm(a["id"], a.get("author"), a.get("reason")),
        read_only=False,
    ),
    Tool(
        "revert",
        "Undo a commit",
        "Undo commit t with a new commit (history is never rewritten). Refused as a conflict when a "
        "later commit changed the same things. Returns the transaction report.",
        _schema({"t": {"type": "integer", "minimum": 1, "description": "The commit to undo."}, **_WHO}, ["t"]),
        lambda s, a: s.revert(a["t"], a.get("author"), a.get("reason")),
        read_only=False,
    ),
    Tool(
        "constraints",
        "List constraints",
        "The user constraints in force (name, text: 'each TYPE [where COND] must COND') and the broken, "
        "inactive ones with their error. Every transaction must keep them all true.",
        _schema({}, []),
        lambda s, a: s.constraints(),
    ),
    Tool(
        "add_constraint",
        "Add a constraint",
        "Add or replace a user constraint, e.g. name 'done_has_result', text \"each action where status = 'done' "
        "must exists(results)\". It must hold now, else it is refused with every violation.",
        _schema({"name": {**_TEXT, "description": "The constraint's name."},
                 "text": {**_TEXT, "description": "each TYPE [where COND] must COND."},
                 "check_existing": {"type": "boolean", "description": "Refuse unless it holds now (default true)."}},
                ["name", "text"]),
        lambda s, a: s.add_constraint(a["name"], a["text"], check_existing=a.get("check_existing", True)),
        read_only=False,
    ),
    Tool(
        "remove_constraint",
        "Remove a constraint",
        "Remove the user constraint of that name (a broken one too). One a rule set declared goes "
        "with its rule set (remove_rules).",
        _schema({"name": {**_TEXT, "description": "The constraint's name."}}, ["name"]),
        lambda s, a: s.remove_constraint(a["name"]),
        read_only=False,
    ),
    Tool(
        "violations",
        "Constraint violations now",
        "Every constraint that does not hold in the current state, with the node it fails on "
        "(normally none: commits are checked).",
        _schema({}, []),
        lambda s, a: s.violations(),
    ),
    Tool(
        "rules",
        "List rule sets",
        "The loaded rule sets (name and text: constraints, triggers, propagation) and the broken, "
        "inactive ones with their error.",
        _schema({}, []),
        lambda s, a: s.rules(),
    ),
    Tool(
        "load_rules",
        "Load a rule set",
        "Load a rule file under a name (a set of that name is replaced): constraints, triggers "
        "('on update of action where ... mark ...') and propagation ('propagate derived_from "
        "backward depth 2'). Its constraints must hold now. Syntax errors name line and column.",
        _schema({"text": {**_TEXT, "description": "The rule file's text."},
                 "name": {**_TEXT, "description": "The rule set's name (default 'default')."}}, ["text"]),
        lambda s, a: s.load_rules(a["text"], a.get("name", "default")),
        read_only=False,
    ),
    Tool(
        "remove_rules",
        "Unload a rule set",
        "Unload the rule set of that name; its constraints, triggers and propagation go with it.",
        _schema({"name": {**_TEXT, "description": "The rule set's name."}}, ["name"]),
        lambda s, a: s.remove_rules(a["name"]),
        read_only=False,
    ),
    Tool(
        "load_graph",
        "Load a graph file",
        "Add a whole graph file ({format: 'hgm-graph/1', nodes: [{id, type, ...}], edges: [{from, to, "
        "type}]}) as one transaction: all or nothing, every problem named. Every id must be new.",
        _schema({"graph": {"type": "object", "description": "The graph file (formats.md)."}, **_WHO}, ["graph"]),
        lambda s, a: s.load(a["graph"], a.get("author"), a.get("reason")),
        read_only=False,
    ),
    Tool(
        "ingest",
        "Store trajectories as paths",
        "Store past trajectories ({id, goal, steps: [names or {name, ...}], tags?, result?, reward?}) as "
        "decision paths that locate can find, all in one transaction. A refusal lists every trajectory "
        "that does not fit; skip_invalid stores the good ones.",
        _schema({"trajectories": {"type": "array", "minItems": 1, "items": {"type": "object"}, "description": "The trajectories."},
                 "skip_invalid": {"type": "boolean", "description": "Store the good ones, list the others."},
                 "scenario": {"type": "string", "description": "The scenario they belong to."}, **_WHO},
                ["trajectories"]),
        lambda s, a: s.ingest(a["trajectories"], skip_invalid=a.get("skip_invalid", False), author=a.get("author"),
                              scenario=a.get("scenario"), reason=a.get("reason")),
        read_only=False,
    ),
    Tool(
        "get_path",
        "Read one stored path",
        "One stored decision path: goal, steps, versions, counters (successes, failures, rewrites) "
        "and whether it needs a human.",
        _schema({"path_id": {**_TEXT, "description": "The path id."}}, ["path_id"]),
        lambda s, a: s.path(a["path_id"]),
    ),
    Tool(
        "list_paths",
        "List stored paths",
        "A summary of every stored path: its current version per lineage (or every version).",
        _schema({"all_versions": {"type": "boolean", "description": "Every version, not only the current ones."}}, []),
        lambda s, a: s.paths(a.get("all_versions", False)),
    ),
    Tool(
        "path_metrics",
        "Path counters",
        "Counters to watch: paths, versions, rewrites, rollbacks, failure streaks, the storm guards "
        "and the path index.",
        _schema({}, []),
        lambda s, a: s.path_metrics(),
    ),
    Tool(
        "record_outcome",
        "Record how a path went",
        "After following a stored path, record whether it worked: outcome 'success' or 'failure', "
        "reward in [0, 1]. Locate ranks paths by it; repeated failures of rewritten versions stop "
        "further rewrites until a human resets the path.",
        _schema({"path_id": {**_TEXT, "description": "The path version that ran."},
                 "outcome": {"type": "string", "enum": ["success", "failure"], "description": "How the run went."},
                 "reward": {"type": "number", "minimum": 0, "maximum": 1, "description": "How well it went."},
                 "author": _WHO["author"]}, ["path_id", "outcome"]),
        lambda s, a: s.record_outcome(a["path_id"], a["outcome"], reward=a.get("reward"), author=a.get("author")),
        read_only=False,
    ),
    Tool(
        "rollback_path",
        "Restore an older path version",
        "Make an older version of a path current again: a NEW version copying its steps (history "
        "is kept). version is a version number or a version's path id.",
        _schema({"path_id": {**_TEXT, "description": "The path (any version of the lineage)."},
                 "version": _t_or_name("The version number, or the path id of that version."), **_WHO},
                ["path_id", "version"]),
        lambda s, a: s.rollback_path(a["path_id"], a["version"], author=a.get("author"), reason=a.get("reason")),
        read_only=False,
    ),
    Tool(
        "reset_path",
        "Reset a path after review",
        "A human has looked at a path whose rewrites kept failing: clear needs_human and the failure "
        "streak so it can be rewritten again.",
        _schema({"path_id": {**_TEXT, "description": "The path id."}, **_WHO}, ["path_id"]),
        lambda s, a: s.reset_path(a["path_id"], author=a.get("author"), reason=a.get("reason")),
        read_only=False,
    ),
    Tool(
        "llm_rewrite",
        "Let the server's model rewrite a path",
        "Ask the model configured on the server to propose a rewrite of a stored path from feedback; "
        "hgm validates the proposal (every old step kept, changed or removed), sends an invalid one "
        "back, and commits a valid one as a new version. dry_run returns the proposal only. Errors: "
        "invalid-model-answer, model-unavailable (nothing written), rewrite-cap, needs-human.",
        _schema({"path_id": {**_TEXT, "description": "The path id."},
                 "feedback": {**_TEXT, "description": "What went wrong or changed."},
                 "model": {"type": "string", "description": "The model (default: the server's)."},
                 "attempts": {"type": "integer", "minimum": 1, "maximum": 10, "description": "Requests at most."},
                 "author": _WHO["author"],
                 "dry_run": {"type": "boolean", "description": "Return the proposal, commit nothing."}},
                ["path_id", "feedback"]),
        lambda s, a: s.llm_rewrite(a["path_id"], a["feedback"], model=a.get("model"), attempts=a.get("attempts"),
                                   author=a.get("author"), dry_run=a.get("dry_run", False)),
        read_only=False,
    ),
    Tool(
        "planner_step",
        "One step of the LLM planner",
        "Run one step of hgm's LLM planner with the server's model: it reads the memory with queries "
        "and answers with the ops of one transaction, at most one tool call and whether the task is "
        "done (validated by the engine). With commit the ops are committed; pass focus and last_t "
        "from the answer to the next step, with the tool's answer as the observation.",
        _schema({"task": {**_TEXT, "description": "The request the run serves."},
                 "observation": {"type": "object", "description": "What happened since the last step (kind task, tool or step-failed)."},
                 "focus": {"type": "string", "description": "From the previous step."},
                 "last_t": {"type": "integer", "minimum": 0, "description": "From the previous step."},
                 "tools": {"type": "array", "description": "Tools the model may call: names or {name, description, args}."},
                 "commit": {"type": "boolean", "description": "Commit the plan's ops at once."},
                 "author": _WHO["author"]}, ["task"]),
        lambda s, a: s.planner_step({k: v for k, v in a.items() if k not in ("commit", "author")},
                                    commit=a.get("commit", False), author=a.get("author")),
        read_only=False,
    ),
)
TOOLS = TOOLS + MORE_TOOLS

# -- many memories (issue 13): the memory argument, list_memories, purge, schemas --------------

MEMORY_DESCRIPTION = (
    "Which memory to use. A server keeps many separate memories (one per user, agent, project or "
    "run), each with its own nodes, history, schema, rules and paths; nothing in one is visible from "
    "another. A name is segments of letters, digits, '.', '_' and '-' joined by '/' (acme/alice/trip-42). "
    "Omit it for the server's default memory; list_memories shows the names you may use and the "
    "default. Keep the same memory for every call of one task."
)
MEMORY_ARGUMENT: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 200, "description": MEMORY_DESCRIPTION}


def _with_memory(tool: Tool) -> Tool:
    properties = dict(tool.input_schema.get("properties", {}))
    properties["memory"] = MEMORY_ARGUMENT
    return attrs.evolve(tool, input_schema={**tool.input_schema, "properties": properties})


def _get_schema(service: MemoryService, a: dict[str, Any]) -> dict[str, Any]:
    service.fresh()
    return {**service.schema(), "document": service.schema_document()}


MEMORY_TOOLS: tuple[Tool, ...] = (
    Tool(
        "get_schema",
        "The memory's schema",
        "The node types, edge types, relations (the step names of queries), attribute JSON Schemas and "
        "edge rules of the memory, as names and as its hgm-schema/1 document (document: edit it and "
        "give it to set_schema). Read it before writing to a memory you do not know: each memory may "
        "have its own schema.",
        _schema({}, []),
        _get_schema,
    ),
    Tool(
        "set_schema",
        "Change the memory's schema",
        "Replace the memory's schema with an hgm-schema/1 document ({format: 'hgm-schema/1', extends?: "
        "'default', node_types, edge_types, relations, attribute_schemas, edge_rules}); with extends "
        "'default' the document only adds to the default schema. Refused with schema-violation, "
        "changing nothing, when what the memory holds breaks the new schema (each problem names the "
        "node); invalid-document names each mistake with its place. Change a schema only when asked to.",
        _schema({"schema": {"type": "object", "description": "The hgm-schema/1 document (formats.md)."}}, ["schema"]),
        lambda s, a: s.set_schema(a["schema"]),
        read_only=False,
    ),
    Tool(
        "purge",
        "Forget a node for good",
        "Remove a node's content (with subtree, every node under it too) from the memory AND its whole "
        "history: no as_of, diff, history or export shows it afterwards, and it cannot be undone. History "
        "keeps a tombstone (what was purged, when, by whom, why). Use it only when a user asks for "
        "something to be forgotten (personal data, a secret); to change or remove a node normally, use "
        "transact (delete_node keeps the history). Errors: unknown-node (no such node, now or ever).",
        _schema(
            {
                "id": {**_TEXT, "description": "The node to forget."},
                "reason": {**_TEXT, "description": "Why (kept in the tombstone): e.g. 'the user asked to forget it'."},
                "subtree": {"type": "boolean", "description": "Also every node below it (parent_of)."},
                "author": _WHO["author"],
            },
            ["id", "reason"],
        ),
        lambda s, a: s.purge(a["id"], a["reason"], subtree=a.get("subtree", False), author=a.get("author")),
        read_only=False,
    ),
)

_NAMES = {"type": "string", "maxLength": 200}

STORE_TOOLS: tuple[Tool, ...] = (
    Tool(
        "list_memories",
        "List the memories",
        "The names of the memories you may use (give one as the memory argument of any other tool), "
        "sorted, those starting with prefix only (e.g. 'acme/'), and the server's default memory (the "
        "one tools use when memory is omitted). Memories outside your access are not listed.",
        _schema({"prefix": {**_NAMES, "description": "Only names starting with this text (default: all)."}}, []),
        lambda access, a: access.list_memories(a.get("prefix", "")),
        per_memory=False,
    ),
    Tool(
        "create_memory",
        "Create a memory",
        "Make a new, empty memory named name (segments of letters, digits, '.', '_' and '-' joined by '/'), "
        "with the default schema or an hgm-schema/1 document; then pass it as the memory argument. "
        "Refused with memory-exists when the name is taken.",
        _schema({"name": {**MEMORY_ARGUMENT, "description": "The new memory's name, e.g. acme/alice/trip-42."},
                 "schema": {"type": "object", "description": "Its hgm-schema/1 document (default: the default schema)."}},
                ["name"]),
        lambda access, a: access.create_memory(a["name"], a.get("schema")),
        read_only=False,
        per_memory=False,
    ),
)

_READS_ONLY: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "transact": lambda a: bool(a.get("dry_run")),
    "llm_rewrite": lambda a: bool(a.get("dry_run")),
    "planner_step": lambda a: not a.get("commit"),
}
TOOLS = tuple(
    _with_memory(attrs.evolve(tool, reads_only=_READS_ONLY.get(tool.name))) for tool in TOOLS + MEMORY_TOOLS
) + STORE_TOOLS

_BY_NAME = {tool.name: tool for tool in TOOLS}


class _OneMemory:
    """The memories of a server of one memory (a :class:`MemoryService` given as it is):
    ``default`` alone."""

    def __init__(self, service: MemoryService):
        self.service = service

    @contextlib.contextmanager
    def lease(self, name: str = DEFAULT_MEMORY):
        if name != DEFAULT_MEMORY:
            raise unknown_memory(name, [DEFAULT_MEMORY], "this server (it serves one memory)")
        yield self.service

    def list(self, prefix: str = "") -> list[str]:
        return [DEFAULT_MEMORY] if DEFAULT_MEMORY.startswith(prefix) else []

    def create(self, name: str, *, schema: Any = None) -> None:
        raise ServiceError([Problem("not-implemented", "this server serves one memory: it cannot create others", where=name)])


def memories_of(target: Any) -> Any:
    """The memories a tool call reaches: a registry (``lease(name)``, ``list(prefix)``) as
    it is, a single :class:`MemoryService` as a server of the memory ``default`` alone.

    >>> from hgm_engine import Memory
    >>> memories_of(MemoryService(Memory())).list()
    ['default']
    """
    if isinstance(target, MemoryService):
        return _OneMemory(target)
    return target


@attrs.frozen
class Access:
    """What one tool call (one MCP request) reaches: the server's memories, the grant of the
    request's token (every memory without a token file) and the default memory.

    >>> from hgm_engine import Memory
    >>> Access(memories_of(MemoryService(Memory()))).list_memories("")
    {'memories': ['default'], 'default': 'default', 'prefix': ''}
    """

    memories: Any
    grant: Grant = OPEN_ACCESS
    default: str = DEFAULT_MEMORY

    def name(self, arguments: Mapping[str, Any], *, write: bool) -> str:
        """The memory a call names (its ``memory``, else the default), checked against the
        grant: ``invalid-memory-name``, or ``forbidden`` outside the token's scope.

        >>> from hgm_engine import Memory
        >>> from hgm_engine.server.tokens import Scope
        >>> access = Access(memories_of(MemoryService(Memory())), Grant((Scope("acme"),)), "acme/alice")
        >>> access.name({}, write=False), access.name({"memory": "acme/bob"}, write=False)
        ('acme/alice', 'acme/bob')
        >>> access.name({}, write=True)
        Traceback (most recent call last):
        ...
        hgm_engine.errors.ServiceError: forbidden at acme/alice: this token may only read the memory 'acme/alice' (it reads acme/); a change needs a write token
        """
        name = arguments.get("memory")
        name = self.default if name is None else check_memory_name(name, where="memory")
        return self.grant.check(name, write=write)

    def list_memories(self, prefix: str) -> dict[str, Any]:
        """The ``list_memories`` document: the names under ``prefix`` the grant covers.

        >>> from hgm_engine import Memory
        >>> Access(memories_of(MemoryService(Memory()))).list_memories("x")["memories"]
        []
        """
        check_memory_prefix(prefix)
        return {"memories": self.grant.visible(self.memories.list(prefix)), "default": self.default, "prefix": prefix}

    def create_memory(self, name: str, schema: Any) -> dict[str, Any]:
        """Make the memory ``name`` (a write grant over it needed) with the ``hgm-schema/1``
        document ``schema`` (None: the default schema).

        >>> import os, tempfile
        >>> from hgm_engine.server.registry import MemoryRegistry
        >>> registry = MemoryRegistry(os.path.join(tempfile.mkdtemp(), "m.db"))
        >>> Access(registry).create_memory("acme/alice", None), registry.list()
        ({'created': 'acme/alice'}, ['acme/alice'])
        >>> registry.close()
        """
        from hgm_engine.model import Schema

        self.grant.check(check_memory_name(name, where="name"), write=True)
        parsed = None if schema is None else Schema.from_document(schema)
        self.memories.create(name, schema=parsed)
        return {"created": name}


def _validator(schema: Mapping[str, Any]):
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)


_VALIDATORS: dict[str, Any] = {}


def _invalid(message: str, where: str | None = None) -> dict[str, Any]:
    error = {"category": "invalid-argument", "message": message, "line": None, "column": None}
    if where:
        error["where"] = where
    return {"error": error}


def call_tool(
    target: Any,
    name: str,
    arguments: Mapping[str, Any] | None,
    *,
    grant: Grant = OPEN_ACCESS,
    default_memory: str = DEFAULT_MEMORY,
) -> tuple[dict[str, Any], bool]:
    """Run tool ``name``; ``(document, is_error)``. Arguments are checked against the tool's
    input schema first; every failure is an ``{"error": {"category", "message", ...}}``.

    ``target`` is the server's memories (a :class:`~hgm_engine.server.registry.MemoryRegistry`,
    or one :class:`MemoryService`: the memory ``default`` alone); the call's ``memory``
    argument (else ``default_memory``) picks one, which ``grant`` (the request's token) must
    cover: ``forbidden`` otherwise, and for a change with a read token.

    >>> from hgm_engine import Memory
    >>> call_tool(MemoryService(Memory()), "frontier", {"goal": 3})[0]["error"]["message"]
    "goal: 3 is not of type 'string'"
    >>> call_tool(MemoryService(Memory()), "stale", {"memory": "acme/bob"})[0]["error"]["category"]
    'unknown-memory'
    """
    tool = _BY_NAME.get(name)
    if tool is None:
        return _invalid(f"no tool {name!r}; tools: {', '.join(sorted(_BY_NAME))}"), True
    arguments = dict(arguments or {})
    validator = _VALIDATORS.get(name)
    if validator is None:
        validator = _VALIDATORS[name] = _validator(tool.input_schema)
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except (ValueError, RecursionError):  # the validator's message cannot print the value
        problem = value_problem(arguments, None)
        if problem is None:
            return _invalid("the arguments cannot be checked against the tool's schema"), True
        return _invalid(f"{problem.where + ': ' if problem.where else ''}{problem.message}", problem.where), True
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path)
        return _invalid(f"{where + ': ' if where else ''}{first.message}", where or None), True
    access = Access(memories_of(target), grant, default_memory)
    try:
        if not tool.per_memory:
            return tool.run(access, arguments), False
        memory = access.name(arguments, write=tool.writes(arguments))
        rest = {k: v for k, v in arguments.items() if k != "memory"}
        with access.memories.lease(memory) as service:
            return tool.run(service, rest), False
    except HGMError as err:
        return error_document(err), True
    except RecursionError:
        return {"error": {"category": "limit-exceeded", "message": "the request is nested too deeply", "line": None, "column": None}}, True
    except Exception:  # noqa: BLE001 - a bug: logged in full, and still a result the model can read
        logger.exception("tool %s failed", name)
        message = f"internal error in tool {name!r} (the server's log has the details)"
        return {"error": {"category": "internal", "message": message, "line": None, "column": None}}, True


# -- resources and prompts (issue 16) -----------------------------------------------------------


@attrs.frozen
class Resource:
    """One MCP resource: a URI (or a URI template with ``{id}``) the client reads as JSON
    (or as the text of ``mime_type``)."""

    uri: str
    name: str
    description: str
    read: Callable[..., Any]
    mime_type: str = "application/json"


RESOURCES: tuple[Resource, ...] = (
    Resource("hgm://health", "health", "The memory's current t and size.", lambda s: s.health()),
    Resource("hgm://schema", "schema", "Node types, edge types, relations and edge rules: the names queries use.", lambda s: s.schema()),
    Resource("hgm://stale", "stale", "Nodes rules marked needs_review or blocked, with each mark's cause.", lambda s: s.stale()),
    Resource("hgm://snapshots", "snapshots", "Named states (name -> t).", lambda s: s.snapshots()),
    Resource("hgm://constraints", "constraints", "User constraints in force, and broken ones.", lambda s: s.constraints()),
    Resource("hgm://rules", "rules", "Loaded rule sets, and broken ones.", lambda s: s.rules()),
    Resource("hgm://paths", "paths", "Every stored decision path (current versions).", lambda s: s.paths()),
    Resource("hgm://paths/metrics", "path metrics", "Rewrites, versions, failure streaks, guards.", lambda s: s.path_metrics()),
    Resource("hgm://export", "export", "The whole memory as a graph file (formats.md).", lambda s: s.export()),
)
RESOURCE_TEMPLATES: tuple[Resource, ...] = (
    Resource("hgm://nodes/{id}", "node", "One node with its attributes.", lambda s, i: s.node(i)),
    Resource("hgm://history/{id}", "node history", "Every commit that touched a node.", lambda s, i: s.history(i)),
    Resource("hgm://paths/{id}", "path", "One stored path with its versions and counters.", lambda s, i: s.path(i)),
)


MEMORY_URI = "hgm://memories/"
"""The per-memory resources: ``hgm://memories/NAME/schema`` and so on, ``NAME`` with each ``/``
written ``%2F`` (as RFC 6570 expands ``{memory}``), so that no name can be read as a path."""


def language_reference() -> str:
    """The path language's reference (docs/language.md), as shipped in the wheel
    (``hgm_engine/docs/language.md``) or read from the source tree.

    >>> language_reference().startswith("#")
    True
    """
    import importlib.resources
    import pathlib

    packaged = importlib.resources.files("hgm_engine").joinpath("docs/language.md")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    source_tree = pathlib.Path(__file__).resolve().parents[2] / "docs" / "language.md"
    if source_tree.is_file():
        return source_tree.read_text(encoding="utf-8")
    raise ServiceError([Problem("missing-package", "docs/language.md is missing from this installation", where="hgm://language")])


def memory_language(service: MemoryService) -> str:
    """The language reference of one memory: :func:`language_reference`, then the names its
    schema gives the language (node types, edge types, relations: the steps a query may take).

    >>> from hgm_engine import Memory
    >>> text = memory_language(MemoryService(Memory()))
    >>> text.startswith(language_reference().rstrip()), "- relations (steps): actions, ancestors," in text
    (True, True)
    """
    schema = service.schema()
    names = [
        "## The names of this memory",
        "",
        "What its schema gives the language (get_schema has the rest):",
        "",
        "- node types: " + ", ".join(schema["node_types"]),
        "- edge types (for .out(TYPE) and .in(TYPE)): " + ", ".join(schema["edge_types"]),
        "- relations (steps): " + ", ".join(schema["relations"]),
    ]
    return language_reference().rstrip("\n") + "\n\n" + "\n".join(names) + "\n"


RESOURCES = RESOURCES + (
    Resource(
        "hgm://language",
        "language reference",
        "The path language of query, constraints and rule files (starts, steps, conditions, finals, "
        "search, limits, with examples: docs/language.md), ending with the names this memory's schema "
        "gives it: node types, edge types, relations.",
        memory_language,
        mime_type="text/markdown",
    ),
)
GLOBAL_RESOURCES: tuple[Resource, ...] = (
    Resource("hgm://memories", "memories", "The memories you may use, and the default one.", lambda access: access.list_memories("")),
)
MEMORY_RESOURCE_TEMPLATES: tuple[Resource, ...] = tuple(
    attrs.evolve(r, uri=MEMORY_URI + "{memory}/" + r.uri[len("hgm://"):], name=f"{r.name} of a memory",
                 description=f"{r.description} Of the memory named (its / written %2F: acme%2Falice).")
    for r in RESOURCES + RESOURCE_TEMPLATES
)


def _find_resource(uri: str) -> tuple[Callable[..., Any], tuple[str, ...]] | None:
    import urllib.parse

    for resource in RESOURCES:
        if resource.uri == uri:
            return resource.read, ()
    for template in RESOURCE_TEMPLATES:
        prefix = template.uri.split("{")[0]
        if uri.startswith(prefix) and len(uri) > len(prefix) and uri != "hgm://paths/metrics":
            return template.read, (urllib.parse.unquote(uri[len(prefix):]),)
    return None


def read_resource(
    target: Any,
    uri: str,
    *,
    grant: Grant = OPEN_ACCESS,
    default_memory: str = DEFAULT_MEMORY,
) -> tuple[Any, bool]:
    """The document at ``uri`` (one of :data:`RESOURCES` or a :data:`RESOURCE_TEMPLATES`
    match, of the default memory; the same under ``hgm://memories/NAME/`` for the memory
    ``NAME``; or one of :data:`GLOBAL_RESOURCES`; ``hgm://language`` is text);
    ``(document, is_error)`` as :func:`call_tool` answers, ``None`` document for a URI that
    names no resource. ``target`` and ``grant`` as for :func:`call_tool`.

    >>> from hgm_engine import Memory
    >>> service = MemoryService(Memory())
    >>> read_resource(service, "hgm://health")[0]["t"]
    0
    >>> read_resource(service, "hgm://nodes/nope")[0]["error"]["category"]
    'unknown-node'
    >>> read_resource(service, "hgm://memories/default/schema")[0]["node_types"][0]
    'goal'
    >>> read_resource(service, "hgm://memories/acme%2Falice/stale")[0]["error"]["category"]
    'unknown-memory'
    """
    import urllib.parse

    access = Access(memories_of(target), grant, default_memory)
    try:
        for resource in GLOBAL_RESOURCES:
            if resource.uri == uri:
                return resource.read(access), False
        name = default_memory
        inner = uri
        if uri.startswith(MEMORY_URI):
            encoded, slash, rest = uri[len(MEMORY_URI):].partition("/")
            if not slash or not rest:
                return None, True
            try:
                name = urllib.parse.unquote(encoded, errors="strict")
            except UnicodeDecodeError:
                name = encoded
            name = check_memory_name(name, where="memory")
            inner = "hgm://" + rest
        found = _find_resource(inner)
        if found is None:
            return None, True
        read, args = found
        grant.check(name)
        with access.memories.lease(name) as service:
            return read(service, *args), False
    except HGMError as err:
        return error_document(err), True


@attrs.frozen
class Prompt:
    """One MCP prompt: a reusable instruction with arguments, filled in by :func:`get_prompt`."""

    name: str
    title: str
    description: str
    arguments: tuple[tuple[str, str, bool], ...]  # (name, description, required)
    template: str


PROMPTS: tuple[Prompt, ...] = (
    Prompt(
        "next_step",
        "Decide the next step of a goal",
        "Work out what to do next for a goal from the memory, then record it.",
        (("goal", "The goal's node id.", True),),
        "You are working on goal {goal} in the hgm task memory. First call frontier with goal "
        "{goal} to see the actions that can run now, and stale to see what rules marked for "
        "review. Read what you need with query (for example \"#{goal}.descendants.where(status = "
        "'failed')\"). Then choose one action, do it, and record the result with one transact call "
        "(update the action's status, add a result node under it); pass the t you read as base_t.",
    ),
    Prompt(
        "review_stale",
        "Review stale nodes",
        "Go through the nodes rules marked needs_review or blocked and settle each.",
        (),
        "Call stale. For each node listed, read it and what its marks name as the cause (get_node, "
        "history). If it still holds, clear its marks with confirm; if not, correct it with "
        "transact (update_node), citing the cause in the reason.",
    ),
    Prompt(
        "improve_path",
        "Improve a stored path from feedback",
        "Turn feedback on a stored decision path into a new version of it.",
        (("path_id", "The stored path's id.", True), ("feedback", "What went wrong or changed.", True)),
        "The stored path {path_id} needs a change: {feedback}\nRead it with get_path. Propose the "
        "smallest rewrite that answers the feedback: call rewrite_path with edit ops ({{\"keep\": i}}, "
        "{{\"change\": i, ...}}, {{\"add\": {{...}}, \"after\": i}}, {{\"remove\": i}}) and the feedback as "
        "the reason, or let the server's model do it with llm_rewrite. After the next run, "
        "record_outcome on the new version.",
    ),
)


_PROMPT_MEMORY = ("memory", "The memory to work in (default: the server's default memory).", False)
PROMPTS = tuple(attrs.evolve(p, arguments=p.arguments + (_PROMPT_MEMORY,)) for p in PROMPTS)


def get_prompt(name: str, arguments: Mapping[str, str] | None) -> tuple[str, str] | None:
    """``(description, text)`` of prompt ``name`` with ``arguments`` filled in; None for an
    unknown prompt; ValueError naming a missing required argument.

    >>> get_prompt("next_step", {"goal": "trip"})[1].split(".")[0]
    'You are working on goal trip in the hgm task memory'
    >>> get_prompt("review_stale", {"memory": "acme/alice"})[1].split("\\n")[-1]
    "Work in the memory 'acme/alice': pass it as the memory argument of every tool call."
    >>> get_prompt("next_step", {})
    Traceback (most recent call last):
    ...
    ValueError: prompt 'next_step' needs the argument 'goal'
    """
    prompt = next((p for p in PROMPTS if p.name == name), None)
    if prompt is None:
        return None
    values = dict(arguments or {})
    for arg, _, required in prompt.arguments:
        if required and not str(values.get(arg, "")).strip():
            raise ValueError(f"prompt {name!r} needs the argument {arg!r}")
    filled = {arg: str(values.get(arg, "")) for arg, _, _ in prompt.arguments}
    text = prompt.template.format(**filled)
    memory = str(values.get("memory") or "").strip()
    if memory:
        text += f"\nWork in the memory {memory[:200]!r}: pass it as the memory argument of every tool call."
    return prompt.description, text


# -- lines that are no JSON-RPC message ---------------------------------------------------------

PARSE_ERROR, INVALID_REQUEST = -32700, -32600  # JSON-RPC 2.0's codes


def line_error(line: str) -> tuple[int, str, str | int | None] | None:
    """Why a line from the client is no JSON-RPC message: ``(code, message, id)``, or None when
    it is one. Not JSON: :data:`PARSE_ERROR` with id None. JSON of the wrong shape, or JSON
    the SDK's parser cannot take (a number of thousands of digits, nesting past its limit):
    :data:`INVALID_REQUEST` with the message's ``id`` when that is a string or an integer, so
    the client waiting for that id gets its answer.

    >>> line_error('{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}') is None
    True
    >>> line_error('{"jsonrpc": "2.0", "id": 1, "method"')[0]
    -32700
    >>> line_error('{"jsonrpc": "2.0", "id": 4, "method": 5}')[::2]
    (-32600, 4)
    >>> line_error('{"jsonrpc": "2.0", "id": [4], "method": "tools/list"}')[::2]
    (-32600, None)
    >>> line_error('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"n": ' + "9" * 5000 + '}}')[::2]
    (-32600, 5)
    """
    import mcp_types
    from pydantic import ValidationError

    unreadable, validated = "", False
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        if not isinstance(message, mcp_types.JSONRPCNotification) or '"id"' not in line:
            return None
        validated = True
        # A notification has no id; one that came with an id the SDK could not take (a list,
        # an object) was meant as a request: say so rather than drop it.
    except ValidationError as exc:
        errors = exc.errors()
        if not errors or errors[0]["type"] == "json_invalid":
            unreadable = str((errors[0].get("ctx") or {}).get("error", "")) if errors else ""
    except Exception as exc:  # noqa: BLE001 - whatever the parser refuses, the line is unreadable
        unreadable = str(exc)
    try:  # Python's parser, told to take any number, tells JSON it cannot read from no JSON
        doc = json.loads(line, parse_int=lambda digits: int(digits) if len(digits) <= 4000 else 0)
    except (ValueError, RecursionError):
        return PARSE_ERROR, f"Parse error: the line is not JSON{': ' + unreadable[:200] if unreadable else ''}", None
    if validated and isinstance(doc, dict) and "id" not in doc:
        return None  # a notification after all (the text "id" was inside a value)
    found = doc.get("id") if isinstance(doc, dict) else None
    usable = isinstance(found, (str, int)) and not isinstance(found, bool) and (isinstance(found, str) or abs(found) < 2**63)
    if unreadable:
        message = f"Invalid Request: the message is JSON this server cannot read ({unreadable[:200]})"
    else:
        message = (
            'Invalid Request: a JSON-RPC 2.0 message is an object with "jsonrpc": "2.0" and a string "method" '
            '(a request also has an "id": a string or an integer), or a response to a request of the server'
        )
    return INVALID_REQUEST, message, found if usable else None


class _CheckedLines:
    """The client's lines that are JSON-RPC messages (what the SDK's stdio transport reads);
    every other line is answered with the error of :func:`line_error` on the server's write
    stream, once :meth:`attach` has it."""

    def __init__(self, source):
        import anyio

        self._source = source
        self._write = None
        self._attached = anyio.Event()

    def attach(self, write_stream) -> None:
        self._write = write_stream
        self._attached.set()

    def __aiter__(self):
        return self._lines()

    async def _lines(self):
        import mcp_types
        from mcp.shared.message import SessionMessage

        async for line in self._source:
            if not line.strip():
                continue  # no message at all
            error = line_error(line)
            if error is None:
                yield line
                continue
            code, message, id_ = error
            logger.info("line refused (%d): %s", code, message)
            await self._attached.wait()
            answer = mcp_types.JSONRPCError(jsonrpc="2.0", id=id_, error=mcp_types.ErrorData(code=code, message=message))
            await self._write.send(SessionMessage(answer))


# -- the SDK server ----------------------------------------------------------------------------

INSTRUCTIONS = (
    "hgm is a hierarchical task memory: goals contain subgoals and actions, actions are ordered by "
    "'before' edges, results and facts hang off them. Read with query (path expressions) and "
    "frontier/stale; change it only with transact (all-or-nothing, checked by constraints). "
    "The server may hold many separate memories: every tool takes an optional memory argument (a name "
    "such as acme/alice; omitted, the server's default memory), and list_memories shows the names. "
    "Every answer is JSON; errors carry a category and a message saying how to fix the call."
)


GRANT_SCOPE_KEY = "hgm.grant"  # where the HTTP transport's token check leaves a request's Grant


def request_grant(ctx: Any, tokens: TokenScopes | TokenFile | None) -> Grant:
    """The grant of the request behind a handler's ``ctx``: the one the token check of the
    HTTP transport left in the request's scope; every memory when the server has no token
    file (stdio, or HTTP without ``--token-file``). With a token file and no grant found,
    ``unauthorized`` (never open by mistake).

    >>> request_grant(None, None) is OPEN_ACCESS
    True
    """
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    grant = scope.get(GRANT_SCOPE_KEY) if isinstance(scope, dict) else None
    if isinstance(grant, Grant):
        return grant
    if tokens is None:
        return OPEN_ACCESS
    raise ServiceError([Problem("unauthorized", "this request carries no checked bearer token")])


def _listed_schema(tool: Tool, default_memory: str) -> dict[str, Any]:
    schema = dict(tool.input_schema)
    properties = dict(schema.get("properties", {}))
    if "memory" in properties:
        described = MEMORY_DESCRIPTION.replace("the server's default memory", f"the server's default memory ({default_memory!r})")
        properties["memory"] = {**properties["memory"], "description": described}
    schema["properties"] = properties
    return schema


def build_server(target: Any, *, default_memory: str = DEFAULT_MEMORY, tokens: TokenScopes | TokenFile | None = None):
    """The MCP SDK's low-level ``Server`` exposing :data:`TOOLS` (and the resources and
    prompts) over ``target``: a :class:`MemoryService` (the memory ``default``) or a registry
    of memories. ``default_memory`` is the memory of calls that name none; ``tokens``, when
    given, means each request's grant comes from the HTTP transport's token check
    (:func:`request_grant`)."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    tools = [
        types.Tool(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=_listed_schema(tool, default_memory),
            annotations=types.ToolAnnotations(
                title=tool.title,
                read_only_hint=tool.read_only,
                destructive_hint=not tool.read_only,
                idempotent_hint=tool.read_only,
                open_world_hint=False,
            ),
        )
        for tool in TOOLS
    ]

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx, params) -> types.CallToolResult:
        try:
            grant = request_grant(ctx, tokens)
        except HGMError as err:
            doc, failed = error_document(err), True
        else:
            # Engine calls may wait for the memory's locks or the disk: keep the loop free.
            doc, failed = await anyio.to_thread.run_sync(
                lambda: call_tool(target, params.name, params.arguments, grant=grant, default_memory=default_memory)
            )
        if failed:
            logger.info("tool %s refused: %s", params.name, doc.get("error", {}).get("category"))
        text = json.dumps(doc, ensure_ascii=False, default=str)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=doc,
            is_error=failed,
        )

    from mcp.shared.exceptions import MCPError

    resources = [
        types.Resource(uri=r.uri, name=r.name, description=r.description, mime_type=r.mime_type)
        for r in RESOURCES + GLOBAL_RESOURCES
    ]
    templates = [
        types.ResourceTemplate(uri_template=r.uri, name=r.name, description=r.description, mime_type=r.mime_type)
        for r in RESOURCE_TEMPLATES + MEMORY_RESOURCE_TEMPLATES
    ]
    known = ", ".join(r.uri for r in RESOURCES + GLOBAL_RESOURCES + RESOURCE_TEMPLATES) + ", " + MEMORY_URI + "{memory}/..."
    prompts = [
        types.Prompt(
            name=p.name,
            title=p.title,
            description=p.description,
            arguments=[types.PromptArgument(name=n, description=d, required=r) for n, d, r in p.arguments],
        )
        for p in PROMPTS
    ]

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources)

    async def on_list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def on_read_resource(ctx, params) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            grant = request_grant(ctx, tokens)
        except HGMError as err:
            raise MCPError(-32002, err.message, error_document(err)["error"]) from None
        doc, failed = await anyio.to_thread.run_sync(
            lambda: read_resource(target, uri, grant=grant, default_memory=default_memory)
        )
        if doc is None:
            hint = " (write a memory name's / as %2F: hgm://memories/acme%2Falice/schema)" if uri.startswith(MEMORY_URI) else ""
            raise MCPError(-32002, f"no resource {uri[:200]!r}{hint}; resources: {known}")
        if failed:
            raise MCPError(-32002, doc["error"]["message"], doc["error"])
        if isinstance(doc, str):
            return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=doc)])
        text = json.dumps(doc, ensure_ascii=False, default=str)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)])

    async def on_list_prompts(ctx, params) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=prompts)

    async def on_get_prompt(ctx, params) -> types.GetPromptResult:
        try:
            found = get_prompt(params.name, params.arguments)
        except ValueError as exc:
            raise MCPError(-32602, str(exc)) from None
        if found is None:
            raise MCPError(-32602, f"no prompt {params.name!r}; prompts: {', '.join(p.name for p in PROMPTS)}")
        description, text = found
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        return types.GetPromptResult(description=description, messages=[message])

    return Server(
        "hgm",
        version=__version__,
        title="hgm task memory",
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
        on_list_prompts=on_list_prompts,
        on_get_prompt=on_get_prompt,
    )


async def serve(target: Any, *, default_memory: str = DEFAULT_MEMORY) -> None:
    """Serve the tools on stdin/stdout until the client closes the connection. ``target``: a
    :class:`MemoryService` or a registry of memories (see :func:`build_server`)."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(target, default_memory=default_memory)
    # The SDK drops a line it cannot read without answering: it reads ours, which answer those.
    # (stdin is a duplicate of fd 0, so closing it leaves sys.stdin alone.)
    binary = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    lines = _CheckedLines(anyio.wrap_file(io.TextIOWrapper(binary, encoding="utf-8", errors="replace")))
    try:
        async with stdio_server(stdin=lines) as (read_stream, write_stream):
            lines.attach(write_stream)
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        binary.close()


# -- MCP over HTTP (issue 19): the SDK's streamable HTTP transport, behind the token check -------

DEFAULT_HTTP_PATH = "/mcp"
DEFAULT_HTTP_PORT = 8766  # hgm serve's 8765, plus one


class TokenCheck:
    """ASGI middleware in front of the SDK's streamable HTTP app: every HTTP request needs
    ``Authorization: Bearer TOKEN`` with a token of ``tokens``. A missing or unknown token is
    answered 401 with ``WWW-Authenticate: Bearer error="invalid_token"`` (RFC 6750) and a
    JSON-RPC error whose message says what was wrong (the SDK's client raises it as an
    ``MCPError`` with that message) and whose ``data`` is the ``{"category": "unauthorized",
    ...}`` error. A known token's :class:`~hgm_engine.server.tokens.Grant` goes with the
    request to the tools (:func:`request_grant`), and the SDK binds the session it opens to that
    token (a session id used with another token is answered 404, as an unknown session).

    >>> TokenCheck(None, TokenScopes.single("s3cret-s3cret-s3cret")).tokens
    TokenScopes('--token', 1 tokens)
    """

    def __init__(self, app: Any, tokens: TokenScopes | TokenFile):
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"authorization"), None)
        try:
            grant = self.tokens.grant_for_header(header)
        except HGMError as err:
            await self._refuse(err, send)
            return
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
        from mcp.server.auth.provider import AccessToken

        scope = dict(scope)
        scope[GRANT_SCOPE_KEY] = grant
        # The session's owner (the SDK compares it on every request of a session): the token's
        # line in the file names it without holding the token.
        scope["user"] = AuthenticatedUser(AccessToken(token=grant.where, client_id=grant.where, scopes=[]))
        await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(err: HGMError, send) -> None:
        error = error_document(err)["error"]
        body = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": f"{err.category}: {err.message}", "data": error}}
        ).encode()
        challenge = 'Bearer error="invalid_token", error_description="' + err.message.replace('"', "'") + '"'
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode("latin-1", "replace")),
            ],
        })
        await send({"type": "http.response.body", "body": body})


def http_app(
    target: Any,
    *,
    default_memory: str = DEFAULT_MEMORY,
    tokens: TokenScopes | TokenFile | None = None,
    host: str = "127.0.0.1",
    path: str = DEFAULT_HTTP_PATH,
    max_body: int | None = None,
):
    """The ASGI app of MCP over streamable HTTP at ``path``: the SDK's own transport
    (``Server.streamable_http_app``: sessions, SSE or JSON answers, DNS-rebinding protection
    on a loopback ``host``), behind :class:`TokenCheck` when ``tokens`` is given. Run it
    with any ASGI server; :func:`serve_http` runs it on uvicorn.

    >>> from hgm_engine import Memory
    >>> type(http_app(MemoryService(Memory()))).__name__
    'Starlette'
    """
    from mcp.server.streamable_http_manager import DEFAULT_MAX_REQUEST_BODY_SIZE

    server = build_server(target, default_memory=default_memory, tokens=tokens)
    app = server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        max_request_body_size=max_body or DEFAULT_MAX_REQUEST_BODY_SIZE,
    )
    return app if tokens is None else TokenCheck(app, tokens)


def serve_http(app: Any, sock: Any, *, log_level: str = "warning") -> None:
    """Serve ``app`` on the listening socket ``sock`` with uvicorn until SIGINT or SIGTERM.

    Example (not run here: it serves until stopped)::

        serve_http(http_app(service), socket.create_server(("127.0.0.1", 0)))
    """
    import uvicorn

    config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on", timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# -- command line ------------------------------------------------------------------------------

DB_ENV, MEMORY_ENV, TOKEN_ENV = "HGM_DB", "HGM_MEMORY", "HGM_TOKEN"
TRANSPORTS = ("stdio", "streamable-http")


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``hgm mcp``.

    >>> args = add_arguments(argparse.ArgumentParser()).parse_args(["--db", "m.db"])
    >>> args.query_timeout, args.transport, args.port
    (5.0, 'stdio', 8766)
    """
    from hgm_engine.server.registry import DEFAULT_MAX_OPEN, MAX_OPEN_ENV

    defaults = ServerLimits()
    parser.add_argument(
        "--db", default=None, metavar="PATH",
        help=f"the store: a SQLite file (created if missing) or a postgresql:// URL (default: ${DB_ENV})",
    )
    parser.add_argument(
        "--memory", default=None, metavar="NAME",
        help=f"the memory of tool calls that name none (default: ${MEMORY_ENV}, else 'default')",
    )
    parser.add_argument(
        "--max-open", type=int, default=None, metavar="N",
        help=f"memories kept open at once, the least recently used closed first (default: ${MAX_OPEN_ENV}, else {DEFAULT_MAX_OPEN})",
    )
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio", help="stdio (default) or streamable-http")
    parser.add_argument("--host", default="127.0.0.1", help="streamable-http: address to bind (default 127.0.0.1: loopback only)")
    parser.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT, help=f"streamable-http: port (default {DEFAULT_HTTP_PORT}; 0 picks a free one)")
    parser.add_argument("--path", default=DEFAULT_HTTP_PATH, help=f"streamable-http: the endpoint's path (default {DEFAULT_HTTP_PATH})")
    parser.add_argument(
        "--token", default=None,
        help=f"streamable-http: require 'Authorization: Bearer TOKEN', one token for every memory (default: ${TOKEN_ENV})",
    )
    parser.add_argument(
        "--token-file", default=None, metavar="PATH",
        help="streamable-http: the tokens and the memories each may use (TOKEN PREFIX [read|write] per line; docs/server.md)",
    )
    parser.add_argument("--max-body", type=int, default=defaults.max_body, metavar="BYTES", help="streamable-http: largest request body (default 1 MiB)")
    parser.add_argument("--max-query-length", type=int, default=defaults.max_query_length, metavar="CHARS")
    parser.add_argument("--max-work", type=int, default=defaults.max_work, metavar="N", help="nodes one query's steps may produce")
    parser.add_argument("--query-timeout", type=float, default=defaults.timeout, metavar="SECONDS")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    add_llm_arguments(parser)
    return parser


def add_parser(subparsers: Any, name: str = "mcp") -> argparse.ArgumentParser:
    """Add ``hgm mcp`` to an argparse subparsers object; its ``func`` default is :func:`run`.

    >>> parser = argparse.ArgumentParser(prog="hgm")
    >>> _ = add_parser(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["mcp", "--db", "m.db"]).db
    'm.db'
    """
    parser = subparsers.add_parser(name, help="serve memories as MCP tools over stdio or streamable HTTP", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def build_parser() -> argparse.ArgumentParser:
    return add_arguments(
        argparse.ArgumentParser(prog="hgm mcp", description="Serve hgm memories as MCP tools over stdio or streamable HTTP.")
    )


def _configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    for name in ("hgm", "mcp", "uvicorn.error"):
        named = logging.getLogger(name)
        named.handlers[:] = [handler]
        named.setLevel(level.upper())
        named.propagate = False


def _usage(message: str) -> int:
    print(f"hgm mcp: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio: stdin closes) or the server is stopped
    (streamable-http: SIGINT, SIGTERM); logs on stderr. Exit 2 for a bad command line, 1
    when the store, the token file or the port cannot be used."""
    try:
        import anyio
        import mcp.server.lowlevel  # noqa: F401 - the SDK, before the memory is opened
    except ImportError as exc:
        print(f"hgm mcp: needs the mcp extra: pip install 'hgm-engine[mcp]' ({exc})", file=sys.stderr)
        return 1
    from hgm_engine.server.registry import MemoryRegistry, max_open_from_env

    db = args.db or os.environ.get(DB_ENV) or None
    if db is None:
        return _usage(f"the store is missing: give --db PATH (or set ${DB_ENV})")
    http = args.transport == "streamable-http"
    for given, option in ((args.token_file, "--token-file"), (args.token, "--token")):
        if given and not http:
            return _usage(f"{option} needs --transport streamable-http (a stdio server's client is the process that started it)")
    if args.token_file and args.token:
        return _usage("give --token or --token-file, not both")
    if not 0 <= args.port <= 65535:
        return _usage(f"--port is 0 to 65535, not {args.port}")
    if not args.path.startswith("/"):
        return _usage(f"--path starts with '/', not {args.path[:40]!r}")
    if args.max_body < 1:
        return _usage("--max-body must be at least 1")
    try:
        default_memory = args.memory or os.environ.get(MEMORY_ENV) or DEFAULT_MEMORY
        check_memory_name(default_memory, where="--memory" if args.memory else MEMORY_ENV)
        max_open = args.max_open if args.max_open is not None else max_open_from_env()
        if max_open < 1:
            return _usage(f"--max-open must be at least 1, not {max_open}")
        tokens = None
        if args.token_file:
            tokens = TokenFile(args.token_file)  # read again when it changes: no restart to revoke a token
        elif http and (args.token or os.environ.get(TOKEN_ENV)):
            tokens = TokenScopes.single(args.token or os.environ[TOKEN_ENV], source="--token" if args.token else TOKEN_ENV)
    except HGMError as err:
        print(f"hgm mcp: {err}", file=sys.stderr)
        return 1 if err.category == "invalid-token-file" else 2
    limits = ServerLimits(max_body=args.max_body, max_query_length=args.max_query_length, max_work=args.max_work, timeout=args.query_timeout)
    try:
        registry = MemoryRegistry(db, max_open=max_open, limits=limits, llm=llm_endpoint(args))
    except (HGMError, OSError) as exc:
        print(f"hgm mcp: cannot open {db}: {exc}", file=sys.stderr)
        return 1
    try:
        try:  # the default memory opens now: a store that cannot be read says so at once
            health = registry.health(default_memory)  # (keeps no reference: the memory can be evicted)
            opened = health["t"], health["nodes"]
        except HGMError as err:
            print(f"hgm mcp: cannot open the memory {default_memory!r} of {db}: {err}", file=sys.stderr)
            return 1
        _configure_logging(args.log_level)  # only now: a refused command line leaves logging alone
        logger.info("serving %s, default memory %r (t=%d, %d nodes)", db, default_memory, *opened)
        if not http:
            anyio.run(lambda: serve(registry, default_memory=default_memory))
            return 0
        return _run_http(args, registry, default_memory, tokens)
    except KeyboardInterrupt:
        return 0
    finally:
        registry.close()


def _run_http(args: argparse.Namespace, registry: Any, default_memory: str, tokens: Any) -> int:
    import socket

    if not _is_loopback(args.host):
        logger.warning(
            "binding to %s: the memories are reachable from other machines%s",
            args.host,
            "" if tokens else " WITHOUT a token (set --token-file or --token)",
        )
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as exc:
        sock.close()
        print(f"hgm mcp: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    sock.listen(2048)
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    app = http_app(registry, default_memory=default_memory, tokens=tokens, host=args.host, path=args.path, max_body=args.max_body)
    print(
        f"hgm mcp: listening on http://{host}:{port}{args.path}{' (bearer token required)' if tokens else ''}",
        file=sys.stderr,
        flush=True,
    )
    try:
        serve_http(app, sock, log_level=args.log_level)
    finally:
        sock.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``hgm mcp`` as a function: parse ``argv``, serve on stdio until the client disconnects.

    Example (not run here: it reads MCP messages from stdin)::

        main(["--db", "memory.db"])
    """
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
