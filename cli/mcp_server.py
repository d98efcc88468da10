"""`plan mcp`: a Model Context Protocol server over stdio (the official ``mcp`` SDK, 2.x low-level server).

Its tools are the planner's questions (cli/questions.py): each tool's input schema is the question's request model
(pydantic JSON schema) and its answer the JSON the CLI's ``--json`` prints, as text and as structured content. Bad
input is a tool error (``is_error``) whose text is one line naming the field; never a traceback.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

from planner.errors import InputError

from .questions import QUESTIONS, QuestionError, answer, one_line


def build_server():
    """The low-level MCP server with the planner's questions as tools."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=q.name, description=f"{q.description} (same as `{q.cli}`)", input_schema=q.input_schema())
            for q in QUESTIONS.values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            # the core is synchronous and may take seconds (buy, serve): keep the event loop answering
            result = await anyio.to_thread.run_sync(answer, params.name, params.arguments)
        except QuestionError as e:
            return types.CallToolResult(content=[types.TextContent(text=one_line(e))], is_error=True)
        except Exception as e:  # noqa: BLE001 - a bug in the core still answers one line, not a traceback
            return types.CallToolResult(content=[types.TextContent(text=f"{params.name}: internal error: "
                                                                        f"{one_line(type(e).__name__ + ': ' + str(e))}")],
                                        is_error=True)
        text = json.dumps(result, indent=2)
        return types.CallToolResult(content=[types.TextContent(text=text)],
                                    structured_content=result if isinstance(result, dict) else {"result": result})

    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("mac-llm-planner")
    except PackageNotFoundError:
        ver = "0"
    return Server("mac-llm-planner", version=ver, on_list_tools=list_tools, on_call_tool=call_tool,
                  instructions="Ask the planner whether an LLM fits and how fast it runs on an Apple Silicon Mac.")


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def mcp_cmd() -> None:
    """Model Context Protocol server on stdio: the planner's questions (plan, what_runs, recommend, buy, serve)
    as tools for agents. Add it to an MCP client as the command `plan mcp`."""
    try:
        import anyio
        import mcp  # noqa: F401
    except ImportError:
        raise InputError("plan mcp needs the mcp package: pip install 'mac-llm-planner[agents]'") from None
    if sys.stdin.isatty():
        typer.echo("plan mcp: speaking MCP on stdin/stdout (start it from an MCP client; Ctrl-D quits)", err=True)
    anyio.run(serve_stdio)
