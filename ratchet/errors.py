"""Ratchet's errors.

One base, two branches: mistakes by the developer using Ratchet, which a code or
configuration change fixes, and failures of a run, which happen at run time::

    RatchetError
    ├── UsageError                  fix the code or configuration that called Ratchet
    │   ├── ConfigurationError      settings, registration, environment
    │   │   ├── InvalidOptionsError RunOptions / SessionOptions out of range (a ValueError)
    │   │   ├── PayloadDecryptionError  an encrypted payload whose key is missing or wrong
    │   │   ├── ApprovalRuleError       a malformed approval rule, or one whose predicate raised
    │   │   ├── ResourceNotFoundError   a worker resource no factory was given for
    │   │   ├── ServerUnreachableError  no Temporal server answers at the address
    │   │   └── AgentBuildError         an agent factory that fails or returns no Agent
    │   ├── AgentNotFoundError      an agent name no worker has registered
    │   ├── InvalidInputError       a prompt, message or argument Ratchet cannot run
    │   │   ├── CheckpointGoneError     a fork at a turn whose run Temporal has deleted
    │   │   └── PayloadTooLargeError    over Temporal's 2 MB payload limit
    │   ├── IncompatibleThreadError an agent given a thread kind it cannot continue
    │   ├── ScriptExhaustedError    a ScriptedModel asked for more replies than it holds
    │   ├── StateError              agent state that cannot be stored, read or shared
    │   │   ├── StateSerializationError  a value the serializer cannot store
    │   │   ├── StateIntegrityError      signed state that is unsigned or tampered with
    │   │   ├── StateSchemaError         a stored type that cannot be loaded or upgraded
    │   │   └── ShareTokenError          a share token this run cannot use
    │   ├── DecisionError           an approval or answer for nothing the run waits for
    │   ├── ConversationConflictError   messages that do not continue the thread, or a
    │   │                               request id sent again with other messages
    │   ├── RequestExpiredError     a request id older than what the session remembers
    │   ├── NotFoundError           no run or session with that id
    │   │   ├── RunNotFoundError
    │   │   └── SessionNotFoundError
    │   ├── AlreadyStartedError     a run or session with that id exists already
    │   ├── SessionHasForksError    a delete refused: forks still read the session
    │   └── EventsExpiredError      an event id older than what the stream retains
    └── RunError                    a run could not finish
        ├── ModelError              the model service failed (``retryable`` says if it may pass)
        │   └── ContextOverflowError    the prompt was over the model's context window
        ├── MaxTurnsExceededError
        ├── BudgetExceededError     a run used more tokens than its token_budget
        ├── SessionClosedError      the session takes no more messages
        ├── SessionBusyError        the session cannot take a message now; send again later
        ├── AnswerUnavailableError  a send's outcome could not be read now; send it again
        ├── EventsUnavailableError  events could not be read for a while; follow on from ``offset``
        ├── ResultExpiredError      a send that ran, whose result the session no longer holds
        ├── StaleAttemptError       a turn attempt the server has replaced (in the worker)
        ├── ThreadResolutionError   a worker could not obtain the thread a turn names
        │   └── HistoryGoneError    a closed workflow run that held part of a thread is
        │                           gone (Temporal's retention deleted it, or a person)
        ├── ClosedRunUnreadableError    a closed run that only a worker could read, and none did
        ├── ToolError               a tool's failure the model should read, never retried
        ├── DeletionIncompleteError a delete whose runs were still there when it gave up
        └── RunFailedError          raised by the client: the run's workflow failed

The client raises a run's failure as ``RunFailedError`` *and* the error it names:
``run_failed()`` picks a class deriving from both (by ``error_type``), so
``except BudgetExceededError`` and ``except RunFailedError`` both catch a run that
went over budget. Such an instance has RunFailedError's attributes (``workflow_id``,
``cause``, ``error_type``), not the specific error's.

This module imports nothing from Temporal, so agent code can raise these freely.
"""

from __future__ import annotations

__all__ = [
    "AgentBuildError",
    "AgentNotFoundError",
    "AlreadyStartedError",
    "AnswerUnavailableError",
    "ApprovalRuleError",
    "BudgetExceededError",
    "CheckpointGoneError",
    "ClosedRunUnreadableError",
    "ConfigurationError",
    "ContextOverflowError",
    "ConversationConflictError",
    "DecisionError",
    "DeletionIncompleteError",
    "EventsExpiredError",
    "EventsUnavailableError",
    "HistoryGoneError",
    "IncompatibleThreadError",
    "InvalidInputError",
    "InvalidOptionsError",
    "MaxTurnsExceededError",
    "ModelError",
    "NotFoundError",
    "PAYLOAD_LIMIT",
    "PayloadDecryptionError",
    "PayloadTooLargeError",
    "RatchetError",
    "RequestExpiredError",
    "ResourceNotFoundError",
    "ResultExpiredError",
    "RunError",
    "RunFailedError",
    "RunNotFoundError",
    "ScriptExhaustedError",
    "ServerUnreachableError",
    "SessionBusyError",
    "SessionClosedError",
    "SessionHasForksError",
    "SessionNotFoundError",
    "ShareTokenError",
    "StaleAttemptError",
    "StateError",
    "StateIntegrityError",
    "StateSchemaError",
    "StateSerializationError",
    "ThreadResolutionError",
    "ToolError",
    "UsageError",
    "failure_class",
    "run_failed",
]


class RatchetError(Exception):
    """Base of every error Ratchet raises on purpose."""


class UsageError(RatchetError):
    """Ratchet was called wrongly; the message says what to change."""


class ConfigurationError(UsageError):
    """A setting, registration or environment value is missing or wrong."""


class ApprovalRuleError(ConfigurationError):
    """An approval rule that is malformed (found when it is built), or whose predicate
    raised on a call (the run fails: it is the rule author's bug, never retried)."""


class ServerUnreachableError(ConfigurationError):
    """No Temporal server answers at the address a client connects to."""

    def __init__(self, address: str, reason: str) -> None:
        self.address = address
        self.reason = reason
        self.unresolved = "dns error" in reason  # the host's name: no server to start there
        advice = (
            "Check the host's name, or point the client at another"
            if self.unresolved
            else "Start one with `ratchet server` (a local dev server), or point the "
            "client at yours"
        )
        super().__init__(
            f"No Temporal server answers at {address} ({reason}). {advice}: "
            "AgentClient.connect(address), TEMPORAL_ADDRESS or a TEMPORAL_PROFILE."
        )


class AgentBuildError(ConfigurationError):
    """A worker could not build a registered agent: its factory raised, or returned
    something that is not an ``Agent``. Runs of that agent fail at once."""


class AgentNotFoundError(UsageError):
    """No agent of that name is registered on the worker that took the turn."""

    def __init__(self, name: str, registered: list[str], task_queue: str | None = None) -> None:
        where = f' on task queue "{task_queue}"' if task_queue else ""
        known = ", ".join(sorted(registered)) or "(none)"
        super().__init__(
            f'Agent "{name}" is not registered{where}; registered: {known}. '
            "Add it to the agents its workers host (the dict `ratchet worker --agents "
            "module:AGENTS` names, or build_worker(client, agents={...})), or fix the name."
        )
        self.name = name
        self.registered = registered


class InvalidInputError(UsageError):
    """A prompt, message or argument that cannot be run."""


class CheckpointGoneError(InvalidInputError):
    """A fork or checkpoint at a turn whose workflow run Temporal has deleted (the
    namespace's retention passed, or someone deleted it): ``first_turn`` is the
    first turn it can still be taken at."""

    def __init__(self, source: str, turn: int | None, run_id: str, first_turn: int | None) -> None:
        at = f"turn {turn}" if turn is not None else "that message"
        instead = (
            f"Fork at turn {first_turn} or later."
            if first_turn is not None
            else "Fork at the latest turn."
        )
        super().__init__(
            f"{source} has no checkpoint at {at} any more: run {run_id}, the newest run "
            f"that could hold it, is gone (Temporal no longer has its history). {instead}"
        )
        self.source = source
        self.turn = turn
        self.run_id = run_id
        self.first_turn = first_turn


class InvalidOptionsError(ConfigurationError, ValueError):
    """Options (RunOptions, SessionOptions) with a value out of its range."""


class ScriptExhaustedError(UsageError):
    """A ScriptedModel was asked for a reply its script does not have."""


class IncompatibleThreadError(UsageError):
    """An agent was given a thread kind it cannot work with."""


PAYLOAD_LIMIT = 2 * 1024 * 1024
"""Temporal refuses a payload (an input, a result, a message) larger than this."""


class PayloadTooLargeError(InvalidInputError):
    """A prompt or a turn's result larger than one Temporal payload can carry."""


class PayloadDecryptionError(ConfigurationError):
    """An encrypted payload this process cannot open: its key id is not configured,
    or its data fails authentication (altered, or a different key under that id)."""


class ResourceNotFoundError(ConfigurationError, KeyError):
    """An agent asked for a worker resource that was not configured."""

    def __str__(self) -> str:  # KeyError would show the message quoted
        return str(self.args[0])


class StateError(UsageError):
    """Agent state that cannot be stored, read or shared."""


class StateSerializationError(StateError, TypeError):
    """A state value the configured serializer cannot store."""


class StateIntegrityError(StateError):
    """Signed state whose signature is missing or wrong; it is never deserialised."""


class StateSchemaError(StateError):
    """A stored state type that cannot be imported, or upgraded to the current schema."""


class ShareTokenError(StateError):
    """A share token that this run was not given, or that does not grant the access asked."""


class RunError(RatchetError):
    """A run could not finish."""


class StaleAttemptError(RunError):
    """This attempt of a turn is no longer current: the server timed it out (its worker
    missed heartbeats) or the run ended, and another attempt takes the turn. Raised
    before a step or a side effect, so the stale attempt stops without doing it."""


class ThreadResolutionError(RunError):
    """A worker could not obtain the thread version a turn refers to."""


class HistoryGoneError(ThreadResolutionError):
    """Workflow run ``run_id`` of ``workflow_id``, which held log positions ``start``
    to ``end`` of a thread, is gone: Temporal deleted its history (the namespace's
    retention passed, or someone deleted it). Readers name the gap
    (``ThreadData.gaps``) and go on with what remains."""

    def __init__(self, workflow_id: str, run_id: str | None, start: int, end: int) -> None:
        super().__init__(
            f"Messages {start}-{end - 1} of this thread were held by workflow "
            f"{workflow_id!r}'s run {run_id} or the runs before it, whose history Temporal "
            "no longer has (the namespace's retention passed, or it was deleted)."
        )
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.start = start
        self.end = end


class ClosedRunUnreadableError(RunError):
    """A closed workflow run whose history does not hold what was read (it ran
    before Ratchet recorded its turn marks and events there, as 0.1.0 did), and
    that no worker could replay to answer instead (no worker polls its build, or
    its code changed)."""

    def __init__(self, workflow_id: str, run_id: str, what: str, cause: str, instead: str) -> None:
        super().__init__(
            f"Run {run_id} of {workflow_id} closed before Ratchet recorded its {what} in "
            f"its history, so only a worker that replays the run can read them, and none "
            f"did ({cause}). Start a worker of the build that ran it, with that code "
            f"unchanged, or {instead}."
        )
        self.workflow_id = workflow_id
        self.run_id = run_id


class ModelError(RunError):
    """The model service failed.

    ``retryable`` tells the engine whether another attempt may succeed;
    ``retry_after`` (seconds) is the delay the service asked for, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


class ContextOverflowError(ModelError):
    """The model refused the prompt: it was over the model's context window.

    ``limit`` and ``tokens`` are the window and the prompt's size in tokens when the
    service said them. A turn meets it by compacting the prompt harder and asking
    once more (``RunOptions.fit_window``); it fails the run only when even the
    smallest prompt Ratchet can make is too large.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = 400,
        limit: int | None = None,
        tokens: int | None = None,
    ) -> None:
        super().__init__(message, retryable=False, status=status)
        self.limit = limit
        self.tokens = tokens


class MaxTurnsExceededError(RunError):
    """The run used every turn it was allowed without a final answer."""

    def __init__(self, max_turns: int, missing: str | None = None) -> None:
        why = (
            f" The last answer was {missing} Check that the model can give one (its "
            "instructions, the output type's fields), or raise max_turns."
            if missing
            else " Raise max_turns (RunOptions / --max-turns) if the task needs more turns."
        )
        super().__init__(f"The run reached max_turns={max_turns} without a final answer.{why}")
        self.max_turns = max_turns
        self.missing = missing
        """What was wrong with the last typed answer, when the agent asked for one."""


class ToolError(RunError):
    """Raised by a tool to tell the model what went wrong (a file that does not exist,
    an MCP server's error): the model reads the message as the call's result, and
    the call is not retried, even when it runs as its own activity."""


class RunFailedError(RunError):
    """The run's workflow failed; ``cause`` is the first failure's message and
    ``error_type`` its type (see ``run_failed``)."""

    def __init__(self, workflow_id: str, cause: str, error_type: str | None = None) -> None:
        message = (
            cause
            if cause.startswith(f"Run {workflow_id}")
            else (f"Run {workflow_id} failed: {cause}")
        )
        Exception.__init__(self, message)
        self.workflow_id = workflow_id
        self.cause = cause
        self.error_type = error_type

    def __str__(self) -> str:
        return str(self.args[0])


class BudgetExceededError(RunError):
    """A run (with its sub-agents) used more tokens than its budget allows."""

    def __init__(self, used: int, budget: int, scope: str = "run") -> None:
        super().__init__(
            f"The {scope} used {used} tokens, over its token_budget of {budget}. Raise "
            "token_budget (RunOptions / SessionOptions) or give the agent a smaller task."
        )
        self.used = used
        self.budget = budget


class DecisionError(UsageError):
    """An approval, rejection or answer that does not match anything the run waits for."""


class ConversationConflictError(UsageError):
    """The messages sent do not continue the session's thread: they leave out or
    reorder messages it holds (an AG-UI client with a stale or edited history); or a
    request id the session took already came again with other messages."""


class RequestExpiredError(UsageError):
    """A send whose request id is older than what the session remembers (24 hours,
    its latest 500 ids): it may have run already, so it is not run again."""


class NotFoundError(UsageError):
    """No run or session has that id (in this namespace)."""


class RunNotFoundError(NotFoundError):
    """No run has that id."""


class SessionNotFoundError(NotFoundError):
    """No session has that id."""


class AlreadyStartedError(UsageError):
    """A run or session with that id exists already (ids are unique per namespace
    while the workflow is open, and within its retention afterwards)."""


class SessionHasForksError(UsageError):
    """A session was not deleted because forks read its earlier messages from it
    (a fork copies none): deleting it would cut those forks' threads."""

    def __init__(self, session_id: str, forks: list[str]) -> None:
        super().__init__(
            f"Session {session_id} was not deleted: {len(forks)} fork(s) read their earlier "
            f"messages from it: {', '.join(forks)}. Delete them first, or delete anyway "
            "with force=True (ratchet sessions delete --force; DELETE ...?force=true): "
            "those forks then lose the messages before their fork point."
        )
        self.session_id = session_id
        self.forks = forks


class EventsExpiredError(UsageError):
    """Events were asked for from an offset the stream can no longer give (a reader
    gets every event up to 500 behind the end, across continue-as-new): read a
    snapshot instead, then follow from ``oldest``."""

    def __init__(self, workflow_id: str, requested: int, oldest: int) -> None:
        super().__init__(
            f"{workflow_id} no longer holds events from offset {requested}: the oldest it "
            f"retains is {oldest}. Read the thread and state, then follow from {oldest}."
        )
        self.workflow_id = workflow_id
        self.requested = requested
        self.oldest = oldest


class DeletionIncompleteError(RunError):
    """A deletion sent, whose workflow runs Temporal still showed when the wait ran
    out (Temporal deletes asynchronously). Deleting again finishes it."""

    def __init__(self, session_id: str, remaining: list[str], waited: float) -> None:
        super().__init__(
            f"Session {session_id}: {len(remaining)} workflow run(s) were still there after "
            f"{waited:g} s: {', '.join(remaining[:10])}{' …' if len(remaining) > 10 else ''}. "
            "Temporal deletes asynchronously; delete the session again to finish."
        )
        self.session_id = session_id
        self.remaining = remaining


class SessionClosedError(RunError):
    """The session is closed (or has ended): it takes no more messages."""


class SessionBusyError(RunError):
    """The session cannot take a message now: its queue is full, or Temporal's limit
    of Updates in flight per workflow is reached. Send again shortly."""


class AnswerUnavailableError(RunError):
    """A send whose outcome could not be read (Temporal or every worker out of reach
    for longer than the client waits). ``taken`` says whether the session took the
    message (``None``: not known). Send again with the same ``request_id``: a taken
    message is never run twice, and the retry returns its answer."""

    def __init__(self, session_id: str, request_id: str, taken: bool | None, cause: str) -> None:
        retry = f"send again with request_id={request_id!r}"
        if taken:
            text = (
                f"Session {session_id} took the message (request id {request_id!r}) but its "
                f"answer could not be read: {cause}. To get it, {retry}: it does not run twice."
            )
        else:
            text = (
                f"Session {session_id} may not have taken the message (request id "
                f"{request_id!r}): {cause}. {retry[0].upper()}{retry[1:]}: if it was taken you "
                "get its answer, else it is sent now; it never runs twice."
            )
        super().__init__(text)
        self.session_id = session_id
        self.request_id = request_id
        self.taken = taken


class EventsUnavailableError(RunError):
    """A follower could not read the next events for longer than it waits (Temporal
    or every worker out of reach). Nothing was skipped: follow again from ``offset``."""

    def __init__(self, workflow_id: str, offset: int, seconds: float, cause: str) -> None:
        super().__init__(
            f"Could not read {workflow_id}'s events from offset {offset} for {seconds:g} s: "
            f"{cause}. Nothing was skipped: follow again with from_offset={offset} once "
            "Temporal and a worker answer."
        )
        self.workflow_id = workflow_id
        self.offset = offset


class ResultExpiredError(RunError):
    """The session took and ran the message, but no longer holds its result (it keeps
    its latest results only): read the answer from the thread."""


_ALIASES = {"SessionClosed": SessionClosedError, "SessionBusy": SessionBusyError}
"""Failure types recorded before the classes existed."""
_FAILED: dict[type[RatchetError], type[RunFailedError]] = {}


def failure_class(error_type: str | None) -> type[RatchetError] | None:
    """The Ratchet error class a failure's ``error_type`` names, if any."""
    if not error_type:
        return None
    if error_type in _ALIASES:
        return _ALIASES[error_type]
    made = set(_FAILED.values())  # run_failed's classes share their error's name
    found = [RatchetError]
    while found:
        cls = found.pop()
        if cls.__name__ == error_type and cls not in made:
            return cls
        found += cls.__subclasses__()
    return None


def run_failed(workflow_id: str, cause: str, error_type: str | None) -> RunFailedError:
    """A RunFailedError that is also the error ``error_type`` names (when Ratchet
    has a class of that name), so either can be caught."""
    specific = failure_class(error_type)
    if specific is None or issubclass(specific, RunFailedError):
        return RunFailedError(workflow_id, cause, error_type)
    if specific not in _FAILED:
        _FAILED[specific] = type(
            specific.__name__,
            (RunFailedError, specific),
            {
                "__init__": RunFailedError.__init__,
                "__str__": RunFailedError.__str__,
                "__module__": __name__,
                "__qualname__": f"RunFailedError[{specific.__name__}]",
                "__doc__": f"A run that failed with {specific.__name__}.",
            },
        )
    return _FAILED[specific](workflow_id, cause, error_type)
