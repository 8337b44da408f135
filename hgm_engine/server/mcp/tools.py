"""The MCP tool table: each tool's name, the description an LLM reads, the JSON Schema of its
input and the :class:`~hgm_engine.server.service.MemoryService` operation it runs.

:data:`TOOLS` is the one definition of every tool: the MCP server lists it
(:mod:`hgm_engine.server.mcp.sdk`), :func:`~hgm_engine.server.mcp.calls.call_tool` runs it,
and the agent-framework integrations (:mod:`hgm_engine.integrations.tools`) wrap it. Every
tool that works on one memory takes the optional ``memory`` argument
(:data:`MEMORY_ARGUMENT`); :data:`STORE_TOOLS` work on the store (``list_memories``,
``create_memory``).

>>> sorted(t.name for t in TOOLS)[:4]
['add_constraint', 'changes', 'commits', 'confirm']
>>> TOOLS[0].input_schema["properties"]["memory"] is MEMORY_ARGUMENT
True
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import attrs

from hgm_engine.server.service import MemoryService

__all__ = [
    "Tool",
    "TOOLS",
    "SEARCH_TOOLS",
    "MORE_TOOLS",
    "MEMORY_TOOLS",
    "STORE_TOOLS",
    "MEMORY_ARGUMENT",
    "MEMORY_DESCRIPTION",
]

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
