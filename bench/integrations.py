"""The history-growth workload on two third-party Temporal agent integrations.

    wid, rid = await run_openai_agents(address, steps, base_url)
    wid, rid = await run_pydantic_ai(address, steps, base_url)

Workload (the same as ``bench.history_growth``): one agent, one tool
``fetch(page: int) -> str`` returning 2,000 characters; the model (an OpenAI Chat
Completions server at ``base_url``, normally ``ratchet.testing.OpenAIServer.tool_loop``) calls it
``steps`` times, one call per response, and then answers "done".

* ``run_openai_agents``: the OpenAI Agents SDK with Temporal's ``OpenAIAgentsPlugin``
  (``temporalio.contrib.openai_agents``, now the ``temporalio-openai-agents``
  package, imported as ``temporalio.openai_agents``). Model calls are the plugin's
  model activity, on the chat-completions API; the tool is a Temporal activity
  (``activity_as_tool``), as in Temporal's docs.
* ``run_pydantic_ai``: a pydantic-ai ``Agent`` with the ``TemporalDurability``
  capability (``pydantic_ai.durable_exec.temporal``), ``PydanticAIPlugin`` on the
  client and ``AgentPlugin`` on the worker. Model requests and the tool call are
  activities (pydantic-ai's default for a sync function tool).

Both run with each integration's defaults otherwise (no continue-as-new). Each
function runs one workflow on its own worker and task queue and returns
``(workflow_id, run_id)`` once it completed with the output "done". The
third-party packages are imported only inside the functions and workflows, so
this module imports without them:

    pip install temporalio-openai-agents openai-agents "pydantic-ai-slim[temporal,openai]"
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

TOOL_RESULT = "x" * 2000
TOOL_DESCRIPTION = "Fetch a page (2,000 characters)."
MODEL_NAME = "gpt-4o"  # only a name: the stub at base_url answers whatever is asked
PROMPT = "go"
FINAL_OUTPUT = "done"
DEFAULT_TIMEOUT = timedelta(minutes=30)

OPENAI_AGENTS_INSTALL = "pip install temporalio-openai-agents openai-agents"
PYDANTIC_AI_INSTALL = 'pip install "pydantic-ai-slim[temporal,openai]"'


class IntegrationRunFailed(RuntimeError):
    """The workflow ran but did not complete with "done" (e.g. it hit a history limit).

    It still has ids, so a caller can ``describe()`` what the server recorded."""

    def __init__(self, message: str, workflow_id: str, run_id: str | None) -> None:
        super().__init__(message)
        self.workflow_id = workflow_id
        self.run_id = run_id


async def _run_on_worker(
    client: Client,
    label: str,
    workflow_class: Any,
    steps: int,
    execution_timeout: timedelta,
    **worker_options: Any,
) -> tuple[str, str]:
    """Run ``workflow_class`` on ``steps`` with a worker of its own; see ``_finish``."""
    from temporalio.worker import Worker

    suffix = uuid.uuid4().hex[:8]
    task_queue = f"bench-{label}-{suffix}"
    async with Worker(client, task_queue=task_queue, workflows=[workflow_class], **worker_options):
        handle = await client.start_workflow(
            workflow_class.run,
            steps,
            id=f"bench-{label}-{steps}-{suffix}",
            task_queue=task_queue,
            execution_timeout=execution_timeout,
        )
        return await _finish(client, handle, label)


async def _finish(client: Client, handle: Any, label: str) -> tuple[str, str]:
    """Wait for the workflow, check its output, and return (workflow_id, latest run_id)."""
    try:
        output = await handle.result()
    except WorkflowFailureError as e:
        run_id = await _latest_run_id(client, handle.id)
        cause = e.cause
        while getattr(cause, "cause", None) is not None:
            cause = cause.cause
        raise IntegrationRunFailed(
            f"{label} workflow {handle.id} did not complete: {e.cause!r} (root: {cause!r})",
            handle.id,
            run_id,
        ) from e
    run_id = await _latest_run_id(client, handle.id)
    if output != FINAL_OUTPUT:
        raise IntegrationRunFailed(
            f"{label} workflow {handle.id} answered {output!r}, expected {FINAL_OUTPUT!r}",
            handle.id,
            run_id,
        )
    return handle.id, run_id


async def _latest_run_id(client: Client, workflow_id: str) -> str:
    return (await client.get_workflow_handle(workflow_id).describe()).run_id


# --------------------------------------------------------------------------------------
# OpenAI Agents SDK + temporalio OpenAIAgentsPlugin
# --------------------------------------------------------------------------------------


def _import_openai_agents() -> tuple[Any, Any]:
    """(temporal plugin module, temporal workflow-helpers module), from wherever installed."""
    try:
        import agents  # noqa: F401
    except ImportError as e:
        raise RuntimeError(
            f"The OpenAI Agents SDK is not installed: {OPENAI_AGENTS_INSTALL}"
        ) from e
    try:  # the standalone package (temporalio-openai-agents), the current home
        from temporalio import openai_agents as plugin_module
        from temporalio.openai_agents import workflow as workflow_module
    except ImportError:
        try:  # older temporalio releases bundle it
            from temporalio.contrib import openai_agents as plugin_module
            from temporalio.contrib.openai_agents import workflow as workflow_module
        except ImportError as e:
            raise RuntimeError(
                "Temporal's OpenAI Agents integration is not installed: " + OPENAI_AGENTS_INSTALL
            ) from e
    return plugin_module, workflow_module


@activity.defn(name="bench_openai_agents.fetch")
async def openai_agents_fetch(page: int) -> str:
    """Fetch a page (2,000 characters)."""
    return TOOL_RESULT


@workflow.defn(name="BenchOpenAIAgents")
class OpenAIAgentsBenchWorkflow:
    @workflow.run
    async def run(self, steps: int) -> str:
        import dataclasses

        from agents import Agent, RunConfig, Runner

        _, temporal_agents = _import_openai_agents()
        tool = temporal_agents.activity_as_tool(
            openai_agents_fetch, start_to_close_timeout=timedelta(seconds=60)
        )
        # The tool's name comes from the function's name; the workload calls it "fetch".
        tool = dataclasses.replace(tool, name="fetch", description=TOOL_DESCRIPTION)
        agent = Agent(name="bench", model=MODEL_NAME, tools=[tool])
        result = await Runner.run(
            agent,
            PROMPT,
            max_turns=steps + 5,
            # Traces would be exported to api.openai.com; the history is what we measure.
            run_config=RunConfig(tracing_disabled=True),
        )
        return str(result.final_output)


async def run_openai_agents(
    address: str, steps: int, base_url: str, *, execution_timeout: timedelta = DEFAULT_TIMEOUT
) -> tuple[str, str]:
    """Run the workload on OpenAI Agents + OpenAIAgentsPlugin; return (workflow_id, run_id)."""
    plugin_module, _ = _import_openai_agents()
    from agents import OpenAIProvider
    from openai import AsyncOpenAI

    openai_client = AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
    plugin = plugin_module.OpenAIAgentsPlugin(
        model_params=plugin_module.ModelActivityParameters(
            start_to_close_timeout=timedelta(seconds=60)
        ),
        # The chat-completions API (not Responses), against the server at base_url.
        model_provider=OpenAIProvider(openai_client=openai_client, use_responses=False),
    )
    client = await Client.connect(address, plugins=[plugin])
    return await _run_on_worker(
        client,
        "openai-agents",
        OpenAIAgentsBenchWorkflow,
        steps,
        execution_timeout,
        activities=[openai_agents_fetch],
    )


# --------------------------------------------------------------------------------------
# pydantic-ai + TemporalDurability
# --------------------------------------------------------------------------------------

PYDANTIC_AI_AGENT_NAME = "bench_pydantic_ai"


def fetch(page: int) -> str:
    """Fetch a page (2,000 characters)."""
    return TOOL_RESULT


def _make_pydantic_ai_agent(base_url: str) -> Any:
    """The agent, built the same way on the worker (for its activities) and in the workflow.

    Activities are looked up by name (agent name + toolset id), and a model request
    runs on the worker with the worker-side agent's model, so the two copies must
    only agree on names and shape."""
    try:
        from pydantic_ai import Agent
        from pydantic_ai.durable_exec.temporal import TemporalDurability
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
    except ImportError as e:
        raise RuntimeError(
            "pydantic-ai with its Temporal and OpenAI extras is not installed: "
            + PYDANTIC_AI_INSTALL
        ) from e
    model = OpenAIChatModel(MODEL_NAME, provider=OpenAIProvider(base_url=base_url, api_key="x"))
    return Agent(
        model,
        name=PYDANTIC_AI_AGENT_NAME,
        tools=[fetch],
        capabilities=[TemporalDurability()],
    )


# pydantic-ai requires the workflow's agent to exist before the workflow runs (its docs:
# "construct the agent at module level"). Temporal's sandbox re-imports this module for
# each workflow run, and that copy builds it here; on the host nothing is imported at
# module level (run_pydantic_ai builds the worker's agent, with the real base_url).
# The workflow-side copy never sends a request: model requests are activities, run by
# the worker's agent, so its base_url is a placeholder.
_WORKFLOW_SIDE_BASE_URL = "http://127.0.0.1:9/v1"
_pydantic_ai_workflow_agent: Any = None
if workflow.unsafe.in_sandbox():
    try:
        _pydantic_ai_workflow_agent = _make_pydantic_ai_agent(_WORKFLOW_SIDE_BASE_URL)
    except RuntimeError:
        pass  # not installed: the workflow reports it when it runs


@workflow.defn(name="BenchPydanticAI")
class PydanticAIBenchWorkflow:
    @workflow.run
    async def run(self, steps: int) -> str:
        from pydantic_ai.usage import UsageLimits

        agent = _pydantic_ai_workflow_agent
        if agent is None:
            raise ApplicationError(
                f"pydantic-ai is not installed on the worker: {PYDANTIC_AI_INSTALL}",
                non_retryable=True,
            )
        result = await agent.run(PROMPT, usage_limits=UsageLimits(request_limit=steps + 5))
        return str(result.output)


async def run_pydantic_ai(
    address: str, steps: int, base_url: str, *, execution_timeout: timedelta = DEFAULT_TIMEOUT
) -> tuple[str, str]:
    """Run the workload on pydantic-ai's TemporalDurability; return (workflow_id, run_id)."""
    agent = _make_pydantic_ai_agent(base_url)  # raises the install hint if missing
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin

    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    return await _run_on_worker(
        client,
        "pydantic-ai",
        PydanticAIBenchWorkflow,
        steps,
        execution_timeout,
        plugins=[AgentPlugin(agent)],
    )
