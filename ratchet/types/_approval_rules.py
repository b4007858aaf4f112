"""A session's own approval rules and their changes, kept with the session's data.

An agent's ``ApprovalPolicy`` (``ratchet.agents``) is code; these rules are data a
person sets while the session runs, read before the policy.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from datetime import datetime
from typing import ClassVar, Literal

from pydantic import Field

from ratchet.errors import InvalidInputError

from ._sparse import SparseModel

Verdict = Literal["allow", "ask", "deny"]
"""What a rule or a policy decides about a tool call."""


class RuleChange(SparseModel):
    """One change to a session's approval rules, for the audit trail."""

    allow: list[str] = []
    deny: list[str] = []
    ask: list[str] = []
    """Names whose session rule is removed: the agent's policy decides again."""
    by: str | None = None
    reason: str | None = None
    at: datetime | None = None

    def describe(self) -> str:
        parts = [
            f"{verdict} {', '.join(names)}"
            for verdict, names in (("allow", self.allow), ("deny", self.deny), ("ask", self.ask))
            if names
        ]
        return "; ".join(parts) or "no change"


class ApprovalRules(SparseModel):
    """A session's own approval rules, kept by the engine with the session's data.

    They are read before the agent's policy, for calls the agent would ask about:
    a name in ``allow`` is approved at once, one in ``deny`` rejected at once, each
    as a decision by ``policy`` in the audit trail. Names are globs.
    """

    allow: list[str] = []
    deny: list[str] = []
    changes: list[RuleChange] = Field(default_factory=list[RuleChange])
    """The latest changes, oldest first (at most ``KEPT_CHANGES``)."""

    KEPT_CHANGES: ClassVar[int] = 50

    def lines(self) -> list[str]:
        """``["allow search, read_*", "deny pay"]``, for status and the UI."""
        return [
            f"{verdict} {', '.join(names)}"
            for verdict, names in (("allow", self.allow), ("deny", self.deny))
            if names
        ]

    def verdict(self, name: str) -> tuple[Verdict, str] | None:
        """``("allow" | "deny", pattern)`` if a session rule covers ``name``."""
        for verdict, patterns in (("deny", self.deny), ("allow", self.allow)):
            for pattern in patterns:
                if fnmatch.fnmatchcase(name, pattern):
                    return verdict, pattern  # type: ignore[return-value]
        return None

    def apply(self, change: RuleChange) -> ApprovalRules:
        """These rules after ``change`` (a later change to a name replaces an earlier)."""
        touched = {*change.allow, *change.deny, *change.ask}
        allow = [n for n in self.allow if n not in touched] + change.allow
        deny = [n for n in self.deny if n not in touched] + change.deny
        changes = [*self.changes, change][-self.KEPT_CHANGES :]
        return ApprovalRules(allow=allow, deny=deny, changes=changes)


def rule_change(
    allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    ask: Sequence[str] = (),
    by: str | None = None,
    reason: str | None = None,
) -> RuleChange:
    """A ``RuleChange`` from what a client's ``set_approvals`` was given."""
    for label, names in (("allow", allow), ("deny", deny), ("ask", ask)):
        if isinstance(names, str):
            raise InvalidInputError(f"{label}= takes a list of tool names: {label}=[{names!r}].")
    return RuleChange(allow=list(allow), deny=list(deny), ask=list(ask), by=by, reason=reason)
