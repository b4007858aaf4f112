"""Ratchet's errors.

One base, two branches: mistakes by the developer using Ratchet, which a code or
configuration change fixes, and failures of a run, which happen at run time::

    RatchetError
    ├── UsageError              fix the code or configuration that called Ratchet
    │   ├── ConfigurationError  settings, registration, environment
    │   │   └── PayloadDecryptionError  an encrypted payload whose key is missing or wrong
    │   ├── AgentNotFoundError  an agent name no worker has registered
    │   ├── InvalidInputError   a prompt, message or argument Ratchet cannot run
    │   ├── ScriptExhaustedError a ScriptedModel asked for more replies than it holds
    │   ├── ResourceNotFoundError a worker resource no factory was given for
    │   ├── StateError          agent state that cannot be stored, read or shared
    │   │   ├── StateSerializationError  a value the serializer cannot store
    │   │   ├── StateIntegrityError      signed state that is unsigned or tampered with
    │   │   ├── StateSchemaError         a stored type that cannot be loaded or upgraded
    │   │   └── ShareTokenError          a share token this run cannot use
    │   └── DecisionError       an approval or answer for nothing the run waits for
    └── RunError                a run could not finish
        ├── ModelError          the model service failed (``retryable`` says if it may pass)
        ├── MaxTurnsExceededError
        ├── BudgetExceededError a run used more tokens than its token_budget
        └── RunFailedError      raised by the client: the run's workflow failed

This module imports nothing from Temporal, so agent code can raise these freely.
"""

from __future__ import annotations


class RatchetError(Exception):
    """Base of every error Ratchet raises on purpose."""


class UsageError(RatchetError):
    """Ratchet was called wrongly; the message says what to change."""


class ConfigurationError(UsageError):
    """A setting, registration or environment value is missing or wrong."""


class AgentNotFoundError(UsageError):
    """No agent of that name is registered on the worker that took the turn."""

    def __init__(self, name: str, registered: list[str], task_queue: str | None = None) -> None:
        where = f' on task queue "{task_queue}"' if task_queue else ""
        known = ", ".join(sorted(registered)) or "(none)"
        super().__init__(
            f'Agent "{name}" is not registered{where}; registered: {known}. '
            "Pass it to build_worker(agents={...}) or fix the name."
        )
        self.name = name
        self.registered = registered


class InvalidInputError(UsageError):
    """A prompt, message or argument that cannot be run."""


class ScriptExhaustedError(UsageError):
    """A ScriptedModel was asked for a reply its script does not have."""


class IncompatibleThreadError(UsageError):
    """An agent was given a thread kind it cannot work with."""


class PayloadTooLargeError(UsageError):
    """A turn produced more data than one Temporal payload can carry."""


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


class MaxTurnsExceededError(RunError):
    """The run used every turn it was allowed without a final answer."""

    def __init__(self, max_turns: int) -> None:
        super().__init__(
            f"The run reached max_turns={max_turns} without a final answer. "
            "Raise max_turns (RunOptions / --max-turns) if the task needs more turns."
        )
        self.max_turns = max_turns


class RunFailedError(RunError):
    """The run's workflow failed; ``cause`` is the first failure's message."""

    def __init__(self, workflow_id: str, cause: str, error_type: str | None = None) -> None:
        super().__init__(f"Run {workflow_id} failed: {cause}")
        self.workflow_id = workflow_id
        self.cause = cause
        self.error_type = error_type


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
