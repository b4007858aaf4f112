"""Turn marks: where a run's or session's thread, view, cursor and state stood
after each turn of this workflow run, so that a fork can start from any turn."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.types import AgentSession, ThreadData
    from ratchet.wire import (
        CheckpointAnswer,
        CheckpointRequest,
        RunRecord,
        SessionOptions,
        TurnMark,
        compact_marks,
        find_mark,
        settled,
    )

    from ._ledger import ExecutionChange


def turn_mark(turn: int, session: AgentSession, agent: str, added: Sequence[str] = ()) -> TurnMark:
    """The mark after ``turn``, which added the messages ``added``."""
    thread = session.thread
    ids = set(added)
    fresh = [m for m in thread.messages[-len(ids) :] if m.id in ids] if ids else []
    answered = {m.tool_call_id for m in fresh if m.role == "tool"}
    return TurnMark(
        turn=turn,
        length=thread.length,
        last_id=thread.last_id,
        view=thread.view,
        cursor=thread.cursor,
        agent=agent,
        state=session.state,
        open_calls=[c for m in fresh for c in m.tool_calls if c.id not in answered],
        prompt=thread.prompt,
    )


class TurnMarks:
    """This workflow run's marks (the first: where it started). A ledger observer:
    it marks every completed turn, counted from ``turns_before()`` (a session counts
    the turns of its earlier runs)."""

    def __init__(
        self,
        first: TurnMark,
        session: Callable[[], AgentSession],
        turns_before: Callable[[], int] = lambda: 0,
    ) -> None:
        self._marks = [first]
        self._session = session
        self._turns_before = turns_before
        self._earlier = session().thread.base
        """The run this one continued (kept: a re-anchored thread names this run)."""

    def __call__(self, change: ExecutionChange) -> None:
        old, new = change.old, change.new
        if old is not None and new.step_count > old.step_count:
            turn = self._turns_before() + new.step_count
            added = new.step_results[-1].message_ids
            self._marks.append(turn_mark(turn, self._session(), change.agent, added))

    def answer(
        self, request: CheckpointRequest, thread: ThreadData, options: SessionOptions | None
    ) -> CheckpointAnswer:
        """The mark after turn ``request.turn`` (or after the turn that added message
        ``request.message``; neither: the latest), or which earlier run to ask."""
        marks = self._marks
        answer = CheckpointAnswer(
            run_id=workflow.info().run_id,
            thread_id=thread.id,
            kind=thread.kind,
            turns=marks[-1].turn,
            from_turn=marks[0].turn,
            options=options,
        )
        mark, earlier = find_mark(
            marks,
            turn=request.turn,
            message=request.message,
            messages=thread.messages,
            offset=thread.offset,
        )
        if earlier:
            return answer.model_copy(update={"earlier": self._earlier})
        return answer.model_copy(update={"mark": mark})

    def record(self, thread: ThreadData) -> RunRecord:
        """The marks as this run ends, settled against its part of ``thread``, for
        readers of the closed run (its history)."""
        settled_marks = [settled(m, thread.messages, thread.offset) or m for m in self._marks]
        record = compact_marks(settled_marks)
        return record.model_copy(update={"thread_id": thread.id, "thread_kind": thread.kind})
