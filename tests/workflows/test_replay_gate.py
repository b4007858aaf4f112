"""The replay gate (``ratchet.deploy.replay_open``, ``ratchet replay``): what is
running now, replayed against the local code, its payloads decoded with the
client's converter (encrypted ones too); each run that does not replay is named,
with what differs."""

from __future__ import annotations

from temporalio import workflow

from ratchet.client import AgentClient
from ratchet.deploy import replay_open
from ratchet.devserver import DevServer
from ratchet.payloads._encryption import EncryptionCodec
from ratchet.worker import build_worker

from ..deploy_app import AGENTS, Reminder

KEY = bytes(range(32))


@workflow.defn(name="Reminder", sandboxed=False)
class ReminderWithoutItsTimer:
    """``Reminder`` changed without ``workflow.patched``: its wait lost the timeout."""

    def __init__(self) -> None:
        self._done = False

    @workflow.run
    async def run(self, text: str) -> str:
        await workflow.wait_condition(lambda: self._done)
        return text

    @workflow.signal
    def done(self) -> None:
        self._done = True


async def test_open_runs_replay_with_encrypted_payloads_and_a_changed_one_is_named(
    temporal_server: DevServer, task_queue: str
):
    codec = EncryptionCodec({"k1": KEY})
    client = await AgentClient.connect(temporal_server.address, task_queue=task_queue, codec=codec)
    async with build_worker(client, AGENTS, workflows=[Reminder]):
        session = await client.start_session("where")
        await session.send("hello")
        reminder = await client.temporal.start_workflow(
            Reminder.run, "water the plants", id=f"reminder-{task_queue}", task_queue=task_queue
        )
        await session.send("still there?")  # the reminder's first task is done by now too

        same = await replay_open(client, workflows=[Reminder])
        changed = await replay_open(client, workflows=[ReminderWithoutItsTimer])
        unknown = await replay_open(client)
        only_sessions = await replay_open(client, query='WorkflowType="AgentSession"')
        await reminder.signal(Reminder.done)
        await session.close()

    assert same.ok and same.replayed == 2, same.lines()
    assert same.lines()[-1] == "2 histories replayed against this code: all replay"
    [differs] = changed.mismatches
    assert (differs.workflow_id, differs.workflow_type) == (reminder.id, "Reminder")
    assert differs.error == (
        "[TMPRL1100] Nondeterminism error: No command scheduled for event "
        "HistoryEvent(id: 5, TimerStarted)"
    )
    assert changed.lines()[0].startswith(f"{reminder.id} (run ")
    [not_given] = unknown.mismatches
    assert "no workflow of type 'Reminder' was given" in not_given.error
    assert only_sessions.ok and only_sessions.replayed == 1


async def test_a_gate_without_the_key_cannot_pass_encrypted_runs(
    temporal_server: DevServer, task_queue: str
):
    codec = EncryptionCodec({"k1": KEY})
    client = await AgentClient.connect(temporal_server.address, task_queue=task_queue, codec=codec)
    async with build_worker(client, AGENTS):
        session = await client.start_session("where")
        await session.send("hello")
        without_key = await AgentClient.connect(temporal_server.address, task_queue=task_queue)
        report = await replay_open(without_key)
        await session.close()
    [failed] = report.mismatches
    assert failed.workflow_id == session.id
    assert failed.error == (
        "Failed decoding arguments: Unknown payload encoding binary/encrypted "
        "(give this command the workers' RATCHET_ENCRYPTION_KEYS)"
    )
