"""An MCP server for the tests, on the mcp SDK's own ``MCPServer``.

    python -m tests.mcp_server               stdio
    python -m tests.mcp_server --http PORT   Streamable HTTP on 127.0.0.1:PORT/mcp

Every call it starts is appended to ``$MCP_CALLS`` (one JSON line: tool, pid), so a
test can count how often a tool really ran and in which server process.
"""

from __future__ import annotations

import json
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("notes")
NOTES = {"plan": "ship on friday"}


def record(tool: str, **details: object) -> None:
    path = os.environ.get("MCP_CALLS")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"tool": tool, "pid": os.getpid(), **details}) + "\n")


@server.tool()
def read_note(name: str) -> str:
    """Read the note called ``name``."""
    record("read_note", name=name)
    if name not in NOTES:
        raise ValueError(f"no note named {name!r}")
    return NOTES[name]


@server.tool()
def write_note(name: str, text: str) -> str:
    """Write the note called ``name``."""
    record("write_note", name=name)
    NOTES[name] = text
    return f"saved {name}"


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    record("crash")
    os._exit(3)


@server.tool()
def crash_once() -> str:
    """Exit mid-call the first time (``$MCP_CRASHED`` marks it), then answer."""
    record("crash_once")
    marker = os.environ["MCP_CRASHED"]
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(3)
    return "survived"


@server.tool()
async def learn(ctx: Context) -> str:
    """Add the ``recall`` tool and tell the client the tool list changed."""
    record("learn")

    @server.tool()
    def recall() -> str:
        """Every note's name."""
        return ", ".join(sorted(NOTES))

    await ctx.notify_tools_changed()  # subscribers of the 2026-07-28 listen stream
    await ctx.request_context.session.send_tool_list_changed()  # earlier protocols
    return "learned recall"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
