"""Ratchet added to a Temporal app as plugins: a plain temporalio Client and Worker
that run the app's own workflow and activity next to Ratchet's agents."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.errors import ConfigurationError
from ratchet.plugin import RatchetClientPlugin, RatchetPlugin, replayer_plugins


@activity.defn
async def greet(name: str) -> str:
    return f"hello {name}"


@workflow.defn
class Greeting:
    """The app's own workflow, which knows nothing of Ratchet."""

    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(
            greet, name, start_to_close_timeout=timedelta(seconds=10)
        )


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def shouter() -> ToolCallingAgent:
    script = [ScriptedModel.call("shout", text="hi"), "done"]
    return ToolCallingAgent(ScriptedModel(script), [shout])


async def test_a_plain_client_and_worker_run_the_apps_workflow_next_to_an_agent(
    temporal_server: DevServer, task_queue: str
):
    client = await Client.connect(temporal_server.address, plugins=[RatchetClientPlugin()])
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=[Greeting],
        activities=[greet],
        plugins=[RatchetPlugin({"shouter": shouter})],
    )
    async with worker:
        greeting = await client.execute_workflow(
            Greeting.run, "ada", id=f"greet-{uuid.uuid4().hex[:6]}", task_queue=task_queue
        )
        agents = AgentClient(client, task_queue=task_queue)
        handle = await agents.start_run("shouter", "shout hi")
        result = await handle.result()
        turns = await handle.turns()
    assert greeting == "hello ada"
    assert result.output == "done" and [t.status for t in turns] == ["completed", "completed"]
    # A run whose worker died moves to another worker within 3 s, not the SDK's 10.
    active = worker.config(active_config=True)
    assert active.get("sticky_queue_schedule_to_start_timeout") == timedelta(seconds=3)


async def test_ratchets_workflows_run_under_the_users_own_runner(
    temporal_server: DevServer, task_queue: str
):
    client = await Client.connect(temporal_server.address, plugins=[RatchetClientPlugin()])
    worker = Worker(
        client,
        task_queue=task_queue,
        workflow_runner=UnsandboxedWorkflowRunner(),
        plugins=[RatchetPlugin({"shouter": shouter})],
    )
    async with worker:
        result = await AgentClient(client, task_queue=task_queue).run("shouter", "shout")
    assert result.output == "done"


async def test_a_worker_whose_client_lacks_ratchets_converter_is_refused(
    temporal_server: DevServer, task_queue: str
):
    client = await Client.connect(temporal_server.address)
    with pytest.raises(ConfigurationError, match=r"plugins=\[RatchetClientPlugin\(\)\]"):
        Worker(client, task_queue=task_queue, plugins=[RatchetPlugin({"shouter": shouter})])


def test_a_plugin_without_agents_is_refused():
    with pytest.raises(ConfigurationError, match="at least one agent"):
        RatchetPlugin({})


async def test_a_replayer_with_ratchets_plugins_replays_a_recorded_run():
    path = Path(__file__).parents[1] / "histories" / "agent_run_completed.json"
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    await Replayer(workflows=[Greeting], plugins=replayer_plugins()).replay_workflow(history)
