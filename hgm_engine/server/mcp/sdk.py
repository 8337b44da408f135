"""The MCP SDK's low-level ``Server`` for hgm: the tools of
:data:`~hgm_engine.server.mcp.tools.TOOLS`, the resources and the prompts, each handler
running on a worker thread within the grant of its request (:func:`build_server`).
The transports serve it: :mod:`hgm_engine.server.mcp.stdio` and
:mod:`hgm_engine.server.mcp.http`.

>>> from hgm_engine import Memory
>>> from hgm_engine.server.service import MemoryService
>>> build_server(MemoryService(Memory())).name
'hgm'
"""

from __future__ import annotations

import json
import logging
from typing import Any

from hgm_engine import __version__
from hgm_engine.errors import HGMError
from hgm_engine.server.mcp.access import request_grant
from hgm_engine.server.mcp.calls import call_tool
from hgm_engine.server.mcp.prompts import PROMPTS, get_prompt
from hgm_engine.server.mcp.resources import (
    GLOBAL_RESOURCES,
    MEMORY_RESOURCE_TEMPLATES,
    MEMORY_URI,
    RESOURCE_TEMPLATES,
    RESOURCES,
    read_resource,
)
from hgm_engine.server.mcp.tools import MEMORY_DESCRIPTION, TOOLS, Tool
from hgm_engine.server.service import error_document
from hgm_engine.server.tokens import TokenFile, TokenScopes
from hgm_engine.store import DEFAULT_MEMORY

__all__ = ["INSTRUCTIONS", "build_server"]

logger = logging.getLogger("hgm.mcp")

INSTRUCTIONS = (
    "hgm is a hierarchical task memory: goals contain subgoals and actions, actions are ordered by "
    "'before' edges, results and facts hang off them. Read with query (path expressions) and "
    "frontier/stale; change it only with transact (all-or-nothing, checked by constraints). "
    "The server may hold many separate memories: every tool takes an optional memory argument (a name "
    "such as acme/alice; omitted, the server's default memory), and list_memories shows the names. "
    "Every answer is JSON; errors carry a category and a message saying how to fix the call."
)


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
