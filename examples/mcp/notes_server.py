"""A small MCP server (the mcp SDK's own ``MCPServer``), run over stdio by the example."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")
NOTES = {"plan": "ship on friday"}


@server.tool()
def read_note(name: str) -> str:
    """Read the note called ``name``."""
    if name not in NOTES:
        raise ValueError(f"no note named {name!r}")
    return NOTES[name]


if __name__ == "__main__":
    server.run()
