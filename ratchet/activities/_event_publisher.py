"""Live events from a turn to its run's workflow stream.

A turn's events (``context.emit``, streamed text, tool calls and results) go to
the run workflow through Temporal's workflow streams: batched signals, each
delivered once. Events are for watching, so a failure to deliver them is
logged and never fails the turn.

Streamed text is coalesced: the deltas of one batch interval go out as one
``TextDelta`` (sent when the interval ends or any other event comes), so a reply
of hundreds of tokens writes a few events into history, not hundreds.

Tool calls and results ride on the batches the turn sends anyway: they wait for
the next other event (and go before it), or ``TOOL_EVENTS_WAIT`` at most, when
they go on their own. A turn of quick tools that streams nothing sends no signal
for them: its workflow publishes them at the turn's end, from its result, at no
cost in history (``workflows.observe``).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

from temporalio.contrib.workflow_streams import TopicHandle, WorkflowStreamClient

from ratchet.types import EventBase, Retry, TextDelta, as_event
from ratchet.wire import EVENTS_TOPIC

DEFAULT_BATCH_INTERVAL = timedelta(milliseconds=250)
"""How often a turn sends what it emitted: each batch is one signal in history."""
TOOL_EVENTS_WAIT = 2.0
"""Seconds a tool event waits for a batch to ride on before it goes in one of its own."""
TOOL_KINDS = frozenset({"tool_call", "tool_result"})

logger = logging.getLogger(__name__)


class TurnEvents:
    """The event sink of one turn attempt (``async with`` it around the turn)."""

    def __init__(
        self,
        *,
        run_id: str,
        agent: str,
        turn: int,
        attempt: int,
        batch_interval: timedelta,
        failed_before: str | None = None,
    ) -> None:
        self._batch_interval = batch_interval
        self._client: WorkflowStreamClient | None = None
        """Made, and its flusher started, at the first event sent: most turns of a model
        that does not stream send none (their tool events ride on their result)."""
        self._topic: TopicHandle[EventBase] | None = None
        self._started: asyncio.Future[Any] | None = None
        self._stamp = {"run_id": run_id, "agent": agent, "turn": turn, "attempt": attempt}
        self._seq = 0
        self._failed_before = failed_before
        self._interval = batch_interval.total_seconds()
        self._text: TextDelta | None = None  # deltas not sent yet, joined
        self._due: asyncio.TimerHandle | None = None
        self._tools: list[EventBase] = []  # tool events waiting for a batch to ride on
        self._tools_due: asyncio.TimerHandle | None = None

    async def __aenter__(self) -> TurnEvents:
        if self._stamp["attempt"] > 1:
            cause = f": {self._failed_before}" if self._failed_before else ""
            self.publish(Retry(text=f"an earlier attempt of this turn failed{cause}"))
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._send_text()
        if self._tools_due is not None:
            self._tools_due.cancel()
        self._tools = []  # the workflow publishes them with the turn's result
        if self._client is None or self._started is None:
            return
        try:
            await self._started
            await self._client.__aexit__(*exc)
        except Exception as e:  # events are for watching: never fail the turn
            logger.warning("Could not deliver turn %s's events: %s", self._stamp["turn"], e)

    def publish(self, event: EventBase) -> None:
        if getattr(event, "kind", None) in TOOL_KINDS:
            self._send_text()  # text before the call or result that follows it
            self._tools.append(event)
            if self._tools_due is None:
                loop = asyncio.get_running_loop()
                self._tools_due = loop.call_later(TOOL_EVENTS_WAIT, self._send_tools)
            return
        self._send_tools()
        if isinstance(event, TextDelta) and event.text:
            if self._text is None:
                self._text = event
                self._due = asyncio.get_running_loop().call_later(self._interval, self._send_text)
            else:
                self._text = self._text.model_copy(
                    update={"text": (self._text.text or "") + event.text}
                )
            return
        self._send_text()  # text before what follows it
        self._send(event)

    def _send_text(self) -> None:
        if self._due is not None:
            self._due.cancel()
        if self._text is not None:
            self._send(self._text)
        self._text = self._due = None

    def _send_tools(self) -> None:
        if self._tools_due is not None:
            self._tools_due.cancel()
            self._tools_due = None
        for tool_event in self._tools:
            self._send(tool_event)
        self._tools = []

    def _send(self, event: EventBase) -> None:
        self._seq += 1
        if self._topic is None:
            self._client = WorkflowStreamClient.from_within_activity(
                batch_interval=self._batch_interval
            )
            self._topic = self._client.topic(EVENTS_TOPIC, type=EventBase)
            self._started = asyncio.ensure_future(self._client.__aenter__())
        self._topic.publish(event.model_copy(update={**self._stamp, "seq": self._seq}))

    async def emit(self, value: Any) -> None:
        self.publish(as_event(value))
