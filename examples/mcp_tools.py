"""An MCP server's tools for an agent: the worker starts ``examples/mcp/notes_server.py``
on first use (one process per worker, started again if it dies), lists its tools
for the model and calls them in the turn, checkpointed like any tool.
"""

import sys
from pathlib import Path

import ratchet
from ratchet import AgentClient, ScriptedModel, ToolCallingAgent, build_worker
from ratchet.agents.mcp_tools import MCPToolset

SERVER = Path(__file__).parent / "mcp" / "notes_server.py"


def notes_agent() -> ToolCallingAgent:
    notes = MCPToolset.stdio(sys.executable, str(SERVER), name="notes")
    # Or a Streamable HTTP server: MCPToolset.http(url, headers={"Authorization": ...}).
    model = ScriptedModel([ScriptedModel.call("read_note", name="plan"), "We ship on Friday."])
    return ToolCallingAgent(model, toolsets=[notes], instructions="You keep notes.")


async def main() -> int:
    client = await AgentClient.connect(task_queue="mcp-example")
    async with build_worker(client, {"notes": notes_agent}):  # stops the server on exit
        handle = await client.start_run("notes", "When do we ship?")
        result = await handle.result()
        thread = (await handle.record()).session.thread
    (answer,) = [m.text for m in thread.messages if m.role == "tool"]
    print(f"read_note -> {answer!r}; the agent says: {result.output}")
    assert answer == "ship on friday"
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
