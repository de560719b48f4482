"""An MCP server's tools as Lily's tools: named `mcp__<server>__<tool>`, described by the
server's own description and JSON schema, on the one tool seam.

Nothing here decides whether a call runs: the gate does, as for every tool. Each is
asked by default (`Tool.asked`: it acts outside Lily, as code does), asked in a folder
the person does not trust, and kept by a skill's `allowed-tools` that names it, its
server (`mcp__github`, `mcp__github__*`), or nothing else. What the model reads of a
result is its text (images and other content as one line each), capped like any output;
the gate redacts it.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from lily_kernel.errors import ToolError
from lily_kernel.execution.runner import MAX_OUTPUT_CHARS
from lily_kernel.mcp_tools.connection import McpConnection
from lily_kernel.tools.context import ToolContext
from lily_kernel.tools.mcp_names import TOOL_PREFIX, tool_name
from lily_kernel.tools.registry import Tool

if TYPE_CHECKING:
    from mcp_types import CallToolResult
    from mcp_types import Tool as McpTool

__all__ = ["MAX_DESCRIPTION_CHARS", "result_text", "server_tools"]

# What a model's tool name may be (OpenAI's rule, which the other providers share).
_MODEL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_DESCRIPTION_CHARS = 2_000  # of a server's tool description the model reads


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        return str(text) if text is not None else f"[resource {resource.uri}]"
    if kind == "resource_link":
        return f"[resource link {block.uri}]"
    return f"[{kind or 'content'}: {getattr(block, 'mime_type', None) or 'no type'}]"


def result_text(result: CallToolResult) -> str:
    """What the model reads of a result: its content as text, or its structured content
    as JSON when it has no content; capped."""
    text = "\n".join(_block_text(b) for b in result.content)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    from lily_kernel.prompting.runs import cut_output

    return cut_output(text, MAX_OUTPUT_CHARS) or "(no output)"


def _schema(tool: McpTool) -> dict[str, Any]:
    """The server's input schema as the model is offered it (an object, always)."""
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _tool(connection: McpConnection, tool: McpTool) -> Tool:
    server = connection.server.name

    async def call(args: dict[str, Any], ctx: ToolContext) -> str:
        result = await connection.call(tool.name, args)
        text = result_text(result)
        if result.is_error:
            raise ToolError(text)
        return text

    description = " ".join((tool.description or tool.title or tool.name).split())
    return Tool(
        tool_name(server, tool.name),
        f"{description[:MAX_DESCRIPTION_CHARS]} (MCP server '{server}')",
        dict, call, schema=_schema(tool), asked=True, asks_untrusted=True,
        kept_by=frozenset({f"{TOOL_PREFIX}{server}".lower(),
                           f"{TOOL_PREFIX}{server}__*".lower()}))


def server_tools(connection: McpConnection) -> tuple[list[Tool], list[str]]:
    """The server's tools as Lily's, and a line for each one a model could not call (its
    name, with the server's, breaks the providers' rule for tool names)."""
    tools, left_out = [], []
    for tool in connection.tools:
        name = tool_name(connection.server.name, tool.name)
        if _MODEL_NAME.fullmatch(name):
            tools.append(_tool(connection, tool))
        else:
            left_out.append(f"{name}: not offered (a model's tool name is at most 64 "
                            "letters, digits, '_' and '-')")
    return tools, left_out
