"""Record the histories the replay tests replay.

    python -m tests.record_histories

It writes only histories that are not recorded yet (``tests/histories/*.json``, the
current code's). Since the first release (0.1.0) a workflow change goes behind
``workflow.patched`` (or into a new workflow type): record the histories that show
the new path next to the old ones. ``tests/histories/release-0.1.0/`` holds those
recorded with 0.1.0, and stays as it is: runs started on 0.1.0 must keep replaying.

Every workflow type and feature is covered: single runs (completed, failed, with
state, approvals, sub-agents, fast mode and its fallback to a regular turn,
compaction, the context window, continue-as-new, events and search attributes,
a service-backed thread), sessions (sends, failures, compaction, continue-as-new,
fast mode, approvals and their rules, client tools, steering, retried request ids, forks of a
session and of a run), rerun batches and their cases, and workflows of your own.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from ratchet.activities._log_cache import ThreadCache
from ratchet.agents import OpenAIResponsesModel, ScriptedModel, ToolCallingAgent, tool
from ratchet.agents._compaction import KeepLastTurns, Summarize, SummarizingAgent
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.errors import ModelError, RunFailedError
from ratchet.evals import EvalsPlugin, export_dataset
from ratchet.evals._batch import start_batch
from ratchet.examples.orchestration import (
    FanOut,
    FanOutInput,
    WriterCriticInput,
    WriterCriticLoop,
)
from ratchet.testing import OpenAIServer
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker

from .agents.test_compaction import paging_agent
from .agents.test_openai_chat import lookup
from .client.test_observability import weather_agent
from .durability.test_closed_after_continue_as_new import close_on_a_fresh_worker
from .evals.test_rerun import AGENTS as rerun_agents
from .evals.test_rerun import recorded_session
from .hitl_agents import Blocker, Ledger, payment_agent
from .state_agents import StepAgent
from .user_workflows import ResearchAndReview, SharedPlan
from .web_agents import CONFIRM, confirmer
from .workflows.test_agent_state import plan_agents
from .workflows.test_multi_agent import research_team
from .workflows.test_orchestration import team
from .workflows.test_sessions import Echo, again
from .workflows.test_user_workflow import agents

HISTORIES = Path(__file__).parent / "histories"
Recorded = list[tuple[str, Any]]
"""(history name, a Temporal workflow handle whose history it is)."""


async def record() -> None:
    with DevServer.start(ui=False) as server:
        recorded: Recorded = []
        parts = (_runs, _people, _clients, _watched, _sessions, _rules, _approved, _reruns)
        parts = (*parts, _service)
        parts = (*parts, _scheduled, _moved, _closed_fresh, _anchored, _owned, _fair)
        parts = (*parts, _throttled, _indexed_late, _answered_inline, _agent_run)
        for part in (*parts, _failed_spend):
            queue = f"record-{part.__name__.strip('_')}"
            client = await AgentClient.connect(server.address, task_queue=queue)
            recorded += await part(client)
        HISTORIES.mkdir(exist_ok=True)
        for name, handle in recorded:
            if (HISTORIES / f"{name}.json").exists():
                continue
            history = await handle.fetch_history()
            (HISTORIES / f"{name}.json").write_text(history.to_json())
            print(f"recorded {name}: {len(history.events)} events")


async def _runs(client: AgentClient) -> Recorded:
    """Single runs and workflows of your own."""
    compacting = {
        "pager": lambda: paging_agent(6, []),
        "pager_window": lambda: paging_agent(8, [], window=600),
        "summarizer": lambda: SummarizingAgent(ScriptedModel(lambda m, c: "summary")),
    }
    stateful = {"stateful": lambda: StepAgent(_fill_cart, _checkout)}
    async with build_worker(
        client,
        {**agents(), **compacting, **plan_agents(), **stateful},
        workflows=[ResearchAndReview, SharedPlan],
    ):
        completed = await client.start_run("researcher", "What is Temporal?")
        await completed.result()
        failed = await client.start_run("researcher", "loop", options=RunOptions(max_turns=1))
        try:
            await failed.result()
        except RunFailedError:
            pass
        user = await client.temporal.start_workflow(
            ResearchAndReview.run,
            "temporal",
            id=f"review-{uuid.uuid4().hex[:8]}",
            task_queue=client.task_queue,
        )
        await user.result()
        compacted = await client.start_run(
            "pager",
            "Read the pages.",
            options=RunOptions(
                compaction=Summarize(max_messages=6, keep_turns=1),
                continue_as_new_after_turns=4,
            ),
        )
        await compacted.result()
        paged = await client.start_run(
            "pager", "Read the pages.", options=RunOptions(continue_as_new_after_turns=2)
        )
        await paged.result()
        fitted = await client.start_run("pager_window", "Read the pages.")
        await fitted.result()
        fast = await client.start_run(
            "researcher", "What is Temporal?", options=RunOptions(fast=True)
        )
        await fast.result()
        with_state = await client.start_run("stateful", "Buy a book.")
        await with_state.result()
        shared = await client.temporal.start_workflow(
            SharedPlan.run, id=f"shared-{uuid.uuid4().hex[:8]}", task_queue=client.task_queue
        )
        await shared.result()
        first_run = client.temporal.get_workflow_handle(
            compacted.id, run_id=compacted.temporal_run_id
        )
        return [
            ("agent_run_completed", completed.workflow),
            ("agent_run_max_turns", failed.workflow),
            ("research_and_review", user),
            ("agent_run_summarize_then_continue_as_new", first_run),
            ("agent_run_continued", client.temporal.get_workflow_handle(compacted.id)),
            # Its record (turn marks, events index) in its continue-as-new input.
            (
                "agent_run_continued_with_its_record",
                client.temporal.get_workflow_handle(paged.id, run_id=paged.temporal_run_id),
            ),
            ("agent_run_started_after_a_record", client.temporal.get_workflow_handle(paged.id)),
            ("agent_run_fit_window", fitted.workflow),
            ("agent_run_fast_mode", fast.workflow),
            ("agent_run_with_state", with_state.workflow),
            ("shared_plan_with_conflict", shared),
        ]


async def _people(client: AgentClient) -> Recorded:
    """Approvals and questions, steering, sub-agents, orchestrations, fast mode's fallback."""
    calls = ScriptedModel.calls(
        ("pay", {"to": "a", "amount": 200}),
        ("pay", {"to": "b", "amount": 300}),
        ("ask_user", {"question": "Which currency?"}),
    )
    blocker = Blocker()
    agents_5 = {
        **team(),
        **research_team(),
        "pay": payment_agent(Ledger(), [calls]),
        "blocker": blocker,
    }
    async with build_worker(client, agents_5, workflows=[WriterCriticLoop, FanOut]):
        approvals = await client.start_run("pay", "pay both")
        ids = [p.action.id for p in await approvals.wait_for_pending()]
        await approvals.approve(ids[0])
        await approvals.reject(ids[1], "unknown payee")
        await approvals.provide_input(ids[2], "EUR")
        await approvals.result()
        steered = await client.start_session(
            "blocker", options=SessionOptions(steering="interrupt")
        )
        first = asyncio.create_task(steered.send("block"))
        await blocker.blocked.wait()
        await steered.send("go on")
        await first
        await steered.close()
        lead = await client.start_run("lead", "explain tides")
        await lead.result()
        loop = await client.temporal.start_workflow(
            WriterCriticLoop.run,
            WriterCriticInput(brief="a haiku"),
            id=f"critic-{uuid.uuid4().hex[:8]}",
            task_queue=client.task_queue,
        )
        await loop.result()
        fan_out = await client.temporal.start_workflow(
            FanOut.run,
            FanOutInput(question="Where?", angles=["rent", "footfall"]),
            id=f"fanout-{uuid.uuid4().hex[:8]}",
            task_queue=client.task_queue,
        )
        await fan_out.result()
    # A worker that caches no thread: every fast turn after the first pages it in as
    # a regular activity.
    forgetful = ThreadCache(max_bytes=0)
    async with build_worker(client, agents(), thread_cache=forgetful):
        paged = await client.start_run(
            "researcher", "What is Temporal?", options=RunOptions(fast=True)
        )
        await paged.result()
    return [
        ("agent_run_approve_reject_answer", approvals.workflow),
        ("agent_session_interrupted", steered.workflow),
        ("agent_run_with_sub_agent", lead.workflow),
        ("writer_critic_loop", loop),
        ("fan_out", fan_out),
        ("agent_run_fast_mode_pages_in_as_an_activity", paged.workflow),
    ]


async def _clients(client: AgentClient) -> Recorded:
    """A client tool call answered by the caller, then one nobody answers in time."""
    options = SessionOptions(run=RunOptions(client_tool_timeout=timedelta(seconds=2)))
    async with build_worker(client, {"confirmer": confirmer}):
        session = await client.start_session("confirmer", options=options)
        request = await session.submit("v1", client_tools=[CONFIRM])
        (view,) = await session.wait_for_pending()
        await session.provide_tool_result(view.action.id, "yes", by="alice")
        await session.send("v1", request_id=request)
        await session.send("v2", client_tools=[CONFIRM])  # times out: the model reads why
        await session.close()
    return [("agent_session_client_tool", session.workflow)]


async def _watched(client: AgentClient) -> Recorded:
    """Search attributes and live events, watched across continue-as-new."""
    async with build_worker(client, {"weather": lambda: weather_agent(stream=True)}):
        indexed = await client.start_run(
            "weather", "weather in Oslo?", options=RunOptions(continue_as_new_after_turns=1)
        )
        watched = [event async for event in indexed.events()]
        assert watched[-1].text == "COMPLETED"
        first_indexed = client.temporal.get_workflow_handle(
            indexed.id, run_id=indexed.temporal_run_id
        )
        return [
            ("agent_run_indexed_with_events", first_indexed),
            ("agent_run_indexed_continued", client.temporal.get_workflow_handle(indexed.id)),
        ]


async def _sessions(client: AgentClient) -> Recorded:
    """Sessions: sends, failures, compaction, continue-as-new, fast mode, approvals,
    retried request ids, and forks of a session and of a run."""
    agents_13 = {
        "echo": Echo,
        "pay": payment_agent(Ledger(), [ScriptedModel.call("pay", to="acme", amount=500)]),
    }
    async with build_worker(client, agents_13):
        plain = await client.start_session("echo")
        for text in ("hello", "again"):
            await plain.send(text)
        await plain.close()
        compacting = await client.start_session(
            "echo",
            options=SessionOptions(
                run=RunOptions(compaction=KeepLastTurns(max_messages=4, turns=1)),
                continue_as_new_after_runs=3,
            ),
        )
        for text in ("one", "fail", "two", "three", "four"):
            try:
                await compacting.send(text)
            except RunFailedError:
                pass
        fast = await client.start_session("echo", options=SessionOptions(run=RunOptions(fast=True)))
        for text in ("quick", "quicker"):
            await fast.send(text)
        waiting = await client.start_session("pay")
        sent = asyncio.ensure_future(waiting.send("pay acme 500"))
        pending = await waiting.wait_for_pending()
        await waiting.approve(pending[0].action.id, by="oncall")
        await sent
        retried = await client.start_session(
            "echo", options=SessionOptions(continue_as_new_after_runs=1)
        )
        await retried.send("pay once", request_id="order-17")
        await retried.send("two")
        await retried.send("pay once", request_id="order-17")  # answered by the third run
        await retried.close()
        carried = await client.start_session(
            "echo", options=SessionOptions(continue_as_new_after_runs=1)
        )
        for text in ("one", "two"):
            await carried.send(text)
        forked = await client.fork(plain.id, at_turn=1)
        await forked.send("from the fork")
        await forked.close()
        run = await client.start_run("echo", "hello")
        await run.result()
        of_run = await client.fork(run.id)
        await of_run.send("after the run")
        await of_run.close()
    blocker = Blocker()
    stop_options = SessionOptions(run=RunOptions(heartbeat_timeout=timedelta(seconds=1)))
    async with build_worker(client, {"blocker": blocker}):
        stopped = await client.start_session("blocker", options=stop_options)
        blocked = asyncio.ensure_future(stopped.send("block"))
        await blocker.blocked.wait()
        await stopped.stop()  # the stop Update waits for the run to end
        await blocked
        await stopped.send("next")
        await stopped.close()
    first = client.temporal.get_workflow_handle
    return [
        ("agent_session_two_sends_then_closed", plain.workflow),
        (
            "agent_session_compaction_and_failure",
            first(compacting.id, run_id=compacting.first_temporal_run_id),
        ),
        ("agent_session_continued_by_reference", compacting.workflow),
        # Its record (turn marks, events index) in its continue-as-new input.
        (
            "agent_session_continued_with_its_record",
            first(carried.id, run_id=carried.first_temporal_run_id),
        ),
        ("agent_session_started_after_a_record", carried.workflow),  # decodes it
        ("agent_session_fast_mode", fast.workflow),
        ("agent_session_waiting_for_approval", waiting.workflow),
        ("agent_session_retried_request_id", retried.workflow),
        ("agent_session_forked", forked.workflow),
        ("agent_session_forked_from_a_run", of_run.workflow),
        ("agent_session_stopped_mid_run", stopped.workflow),
    ]


async def _rules(client: AgentClient) -> Recorded:
    """A session's approval rules ("always allow"), changed while a call waits."""
    pays = [
        ScriptedModel.call("pay", to="acme", amount=500),
        "paid",
        ScriptedModel.call("pay", to="acme", amount=600),
    ]
    async with build_worker(client, {"pay": payment_agent(Ledger(), pays)}):
        ruled = await client.start_session("pay")
        sent = asyncio.ensure_future(ruled.send("pay acme 500"))
        pending = await ruled.wait_for_pending()
        await ruled.approve(pending[0].action.id, by="oncall", always=True)
        await sent
        await ruled.set_approvals(deny=["lookup"], by="oncall")
        await ruled.send("pay acme 600")  # allowed by the session's rule
        await ruled.close()
        changed = await client.start_run("pay", "pay acme 500")
        await changed.wait_for_pending()
        await changed.set_approvals(allow=["pay"], by="oncall")
        await changed.result()
    return [
        ("agent_session_approval_rules", ruled.workflow),
        ("agent_run_rule_change_decides_a_waiting_call", changed.workflow),
    ]


async def _approved(client: AgentClient) -> Recorded:
    """A session whose approved call's result is sent before the next turn's reply
    (``ratchet-results-when-settled``)."""
    pays = [ScriptedModel.call("pay", to="acme", amount=500), "paid"]
    async with build_worker(client, {"pay": payment_agent(Ledger(), pays)}):
        approved = await client.start_session("pay")
        sent = asyncio.ensure_future(approved.send("pay acme 500"))
        pending = await approved.wait_for_pending()
        await approved.approve(pending[0].action.id, by="oncall")
        await sent
        await approved.close()
    return [("agent_session_approved_result_before_the_reply", approved.workflow)]


async def _reruns(client: AgentClient) -> Recorded:
    """Rerun batches: continued as new, free-running, of snapshots; a case's run."""
    async with build_worker(client, rerun_agents, plugins=[EvalsPlugin()]):
        sources = [await recorded_session(client) for _ in range(2)]
        batch = await start_batch(
            client,
            [*sources, "no-such-session"],
            agent="weather-v2",
            cases_per_run=3,
            inline_bytes=0,  # cases on a reference into the session's log
        )
        last = (await batch.result()).records[1]
        chained = await start_batch(
            client, sources[:1], agent="weather-v2", unrecorded="live", free_running=True
        )
        await chained.result()
        # Sources given as a dataset's snapshots, carried over continue-as-new.
        snapshots = (await export_dataset(client, sources)).snapshots
        of_snapshots = await start_batch(
            client,
            [s.model_copy(update={"source": f"gone-{s.source}"}) for s in snapshots],
            agent="weather-v2",
            cases_per_run=1,
        )
        await of_snapshots.result()
    first = client.temporal.get_workflow_handle
    return [
        (
            "rerun_batch_continued_as_new",
            first(batch.id, run_id=batch.handle.first_execution_run_id),
        ),
        ("rerun_batch_finished", first(batch.id)),
        ("rerun_case_on_a_session_log", client.get_run(last.workflow_id or "").workflow),
        ("rerun_batch_free_running", chained.handle),
        (
            "rerun_batch_of_snapshots",
            first(of_snapshots.id, run_id=of_snapshots.handle.first_execution_run_id),
        ),
    ]


async def _service(client: AgentClient) -> Recorded:
    """A service-backed thread (the Responses API's, on the fake server)."""
    with OpenAIServer() as server:
        server.response(None, ("call_1", "lookup", '{"city": "Oslo"}'))
        server.response("Snow in Oslo.")
        model = OpenAIResponsesModel("gpt-test", base_url=server.base_url, api_key="k")
        agent = ToolCallingAgent(model, [lookup], instructions="Be brief.")
        options = RunOptions(thread_kind="openai.responses")
        async with build_worker(client, {"oa": agent}):
            handle = await client.start_run("oa", "Weather in Oslo?", options=options)
            await handle.result()
        await model.client.close()
    return [("agent_run_on_a_service_thread", handle.workflow)]


async def _scheduled(client: AgentClient) -> Recorded:
    """A schedule's message to a session, delivered; then to the session once closed."""
    async with build_worker(client, {"echo": Echo}):
        session = await client.start_session("echo")
        schedule = await client.schedule(
            "record-standup", "standup", session=session.id, cron="0 7 * * *"
        )
        await schedule.trigger()
        delivered = await _firing(client, "record-standup", 1)
        await session.close()
        await schedule.trigger()
        refused = await _firing(client, "record-standup", 2)
        await schedule.delete()
    return [
        ("scheduled_send_delivered", delivered),
        ("scheduled_send_to_a_closed_session", refused),
        # Since 0.1.0, a delivery gives up after DELIVERY_ATTEMPTS (workflow.patched).
        ("scheduled_send_with_capped_attempts", delivered),
    ]


async def _firing(client: AgentClient, schedule_id: str, count: int):
    """The ``count``-th firing of the schedule, once it has closed."""
    while True:
        query = f'TemporalScheduledById="{schedule_id}" AND ExecutionStatus!="Running"'
        found = [w async for w in client.temporal.list_workflows(query)]
        if len(found) >= count:
            newest = max(found, key=lambda w: w.start_time)
            return client.temporal.get_workflow_handle(newest.id, run_id=newest.run_id)
        await asyncio.sleep(0.2)


async def _closed_fresh(client: AgentClient) -> Recorded:
    """A session closed in the first workflow task of a run it continued into, by a
    worker that never ran that run (patched since 0.1.0: see ``close``)."""
    closed = await close_on_a_fresh_worker(client)
    name = "agent_session_closed_after_continue_as_new_on_a_fresh_worker"
    return [(name, client.temporal.get_workflow_handle(closed))]


async def _anchored(client: AgentClient) -> Recorded:
    """Sessions that copy what their closed runs hold into their open run: by their
    timer, and when asked (as sessions started on 0.1.0 do); a fork, by its timer."""
    from temporalio.api.enums.v1 import EventType

    soon = SessionOptions(continue_as_new_after_runs=2, horizon=timedelta(seconds=3))
    later = SessionOptions(continue_as_new_after_runs=1, horizon=timedelta(hours=1))

    async def copied(workflow: Any) -> None:
        while True:
            history = await workflow.fetch_history()
            done = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
            if any(e.event_type == done for e in history.events):
                return
            await asyncio.sleep(0.2)

    async with build_worker(client, {"echo": Echo}):
        timed = await client.start_session("echo", options=soon)
        asked = await client.start_session("echo", options=later)
        for session in (timed, asked):
            await session.send("one")
            await session.send("two")
        fork = await client.fork(timed.id, at_turn=1)
        await asked.reanchor()
        await copied(timed.workflow)
        await copied(fork.workflow)
    # A single run that continued as new, waiting for an approval past its horizon.
    pays = [
        ScriptedModel.call("lookup", name="acme"),
        ScriptedModel.call("pay", to="acme", amount=500),
    ]
    options = RunOptions(continue_as_new_after_turns=1)
    agent = {"pay": payment_agent(Ledger(), pays)}
    async with build_worker(client, agent, horizon=timedelta(seconds=1)):
        run = await client.start_run("pay", "pay acme", options=options)
        (waiting,) = await run.wait_for_pending()
        waiting_run = (await run.workflow.describe()).run_id
        waited = client.temporal.get_workflow_handle(run.id, run_id=waiting_run)
        await copied(waited)
        await run.approve(waiting.action.id, by="record")
        await run.result()
    return [
        ("agent_session_reanchored_by_its_timer", timed.workflow),
        ("agent_session_reanchored_when_asked", asked.workflow),
        ("agent_session_fork_reanchored", fork.workflow),
        ("agent_run_reanchored_while_waiting", waited),
    ]


async def _moved(client: AgentClient) -> Recorded:
    """A session on one build that moves to the next between messages (worker
    versioning: continue-as-new onto the new current build, patched since 0.1.0)."""
    from ratchet.deploy import promote
    from ratchet.worker import versioned

    deployment = f"record-{uuid.uuid4().hex[:6]}"
    old = build_worker(client, {"echo": Echo}, deployment_config=versioned(deployment, "v1"))
    new = build_worker(client, {"echo": Echo}, deployment_config=versioned(deployment, "v2"))
    async with old:
        await promote(client, deployment, "v1")
        session = await client.start_session("echo")
        await session.send("on the first build")
        first_run = (await session.workflow.describe()).run_id
        async with new:
            await promote(client, deployment, "v2")  # wakes the session: it moves now
            await session.send("on the second build")
            await session.close()
    moved = client.temporal.get_workflow_handle(session.id, run_id=first_run)
    return [("agent_session_moved_to_a_new_build", moved)]


async def _owned(client: AgentClient) -> Recorded:
    """A session started through the front door, with an owner: its sub-agent's run
    is started with the owner too (patched since 0.1.0)."""
    async with build_worker(client, research_team()):
        session = await client.start_session("lead", owner="o'hara", tenant="acme")
        await session.send("explain tides")
        await session.close()
    return [("agent_session_owned_with_sub_agent", session.workflow)]


async def _fair(client: AgentClient) -> Recorded:
    """Turns with a fairness key and weight (patched since 0.1.0): a run's key is its
    owner's, a session's is the one its options name."""
    async with build_worker(client, {"echo": lambda: ToolCallingAgent(ScriptedModel(["hi"] * 3))}):
        run = await client.start_run(
            "echo", "hello", owner="o'hara", options=RunOptions(fairness_weight=3.0)
        )
        await run.result()
        session = await client.start_session(
            "echo", options=SessionOptions(run=RunOptions(fairness_key="acme-gold"))
        )
        await session.send("hello")
        await session.close()
    return [
        ("agent_run_with_fairness_key", run.workflow),
        ("agent_session_with_fairness_key", session.workflow),
    ]


async def _throttled(client: AgentClient) -> Recorded:
    """A turn throttled twice, then failed once for real, then answered (patched since
    0.1.0: turns count their real failures, Temporal none)."""

    def script(messages, context):
        if context.attempt <= 2:
            raise ModelError("429 slow down", retryable=True, status=429, retry_after=0.05)
        if context.attempt == 3:
            raise ModelError("500 oops", retryable=True, status=500)
        return "hi"

    options = RunOptions(max_attempts=2, initial_retry_interval=timedelta(milliseconds=50))
    async with build_worker(client, {"echo": lambda: ToolCallingAgent(ScriptedModel(script))}):
        run = await client.start_run("echo", "hello", options=options)
        await run.result()
    return [("agent_run_throttled_then_answered", run.workflow)]


class _SlowScript(ScriptedModel):
    """A scripted model whose every call takes 1.2 s (the call's latency)."""

    async def create(self, messages, tools, context):
        await asyncio.sleep(1.2)
        return await super().create(messages, tools, context)


@tool
def page(n: int) -> str:
    """Read page n."""
    return f"page {n}"


async def _indexed_late(client: AgentClient) -> Recorded:
    """A run of 11 turns that outlives the old 10 s flush interval: it upserts its
    counters once, as it ends (patched: ratchet-longer-flush-interval).
    ``agent_run_indexed_at_the_old_interval`` is the same run recorded before the
    patch (with a one-off script running this part on the code before it): it upserts
    at turn 10 too."""
    script = [*(ScriptedModel.call("page", n=i) for i in range(10)), "read"]
    agent = ToolCallingAgent(_SlowScript(script), [page])
    async with build_worker(client, {"slow_pager": agent}):
        run = await client.start_run("slow_pager", "Read ten pages.")
        await run.result()
    return [("agent_run_indexed_once_at_its_end", run.workflow)]


async def _answered_inline(client: AgentClient) -> Recorded:
    """A session whose small answer goes in the send's Update result and whose large
    one stays in the thread only (no command changed: nothing patched)."""
    model = ScriptedModel(["short", "x" * 6000])
    async with build_worker(client, {"echo": lambda: ToolCallingAgent(model)}):
        session = await client.start_session("echo")
        for text in ("small", "large"):
            await session.send(text)
        await session.close()
    return [("agent_session_answer_in_the_update", session.workflow)]


async def _failed_spend(client: AgentClient) -> Recorded:
    """A session whose failed runs count what they spent (patched:
    ratchet-failed-runs-spend-budget): two runs that never answer fail at max_turns,
    and the third send finds the budget spent."""
    looping = ToolCallingAgent(
        ScriptedModel(lambda messages, context: ScriptedModel.call("again")), [again]
    )
    options = SessionOptions(token_budget=28, run=RunOptions(max_turns=3))
    async with build_worker(client, {"loop": looping}):
        session = await client.start_session("loop", options=options)
        for _ in range(3):
            try:
                await session.send("go")
            except RunFailedError:
                pass
        await session.close()
    return [("agent_session_failed_runs_spend_budget", session.workflow)]


async def _agent_run(client: AgentClient) -> Recorded:
    """The ``AgentRun`` type (0.2), born with every change since 0.1.0: approvals, an
    owned run's sub-agent (an ``AgentRun`` too), continue-as-new; and the patch under
    which a session's sub-agent and a rerun batch's cases start as ``AgentRun``."""
    calls = ScriptedModel.calls(
        ("pay", {"to": "a", "amount": 200}), ("pay", {"to": "b", "amount": 300})
    )
    workers = {**research_team(), "pay": payment_agent(Ledger(), [calls])}
    async with build_worker(client, {**workers, "pager": lambda: paging_agent(6, [])}):
        approvals = await client.start_run("pay", "pay both")
        ids = [p.action.id for p in await approvals.wait_for_pending()]
        await approvals.approve(ids[0])
        await approvals.reject(ids[1], "unknown payee")
        await approvals.result()
        lead = await client.start_run("lead", "explain tides", owner="o'hara", tenant="acme")
        await lead.result()
        children = client.temporal.list_workflows(f"ParentWorkflowId = '{lead.id}'")
        child = [info.id async for info in children][0]
        paged = await client.start_run(
            "pager", "Read the pages.", options=RunOptions(continue_as_new_after_turns=2)
        )
        await paged.result()
    async with build_worker(client, research_team()):  # a fresh script
        session = await client.start_session("lead")
        await session.send("explain tides")
        await session.close()
    async with build_worker(client, rerun_agents, plugins=[EvalsPlugin()]):
        batch = await start_batch(client, [await recorded_session(client)], agent="weather-v2")
        await batch.result()
    handle = client.temporal.get_workflow_handle
    return [
        ("agent_run_type_approve_reject", approvals.workflow),
        ("agent_run_type_owned_with_sub_agent", lead.workflow),
        ("agent_run_type_sub_agent", handle(child)),
        ("agent_run_type_continued", handle(paged.id, run_id=paged.temporal_run_id)),
        ("agent_run_type_started_after_continue", handle(paged.id)),
        ("agent_session_sub_agent_as_agent_run", session.workflow),
        ("rerun_batch_cases_as_agent_run", batch.handle),
    ]


async def _fill_cart(context) -> None:
    context.state.update("cart", ["book"])
    context.state.share("cart")


async def _checkout(context) -> str:
    context.state.update("cart", [*context.state.get("cart"), "receipt"])
    context.state.delete("draft")
    return "checked out"


if __name__ == "__main__":
    asyncio.run(record())
