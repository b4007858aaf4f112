"""Approval policies: which tool calls run at once, which wait for a person, which never run.

    policy = ApprovalPolicy(
        allow("search", "read_*"),
        ask("pay", when=lambda args: args["amount"] > 100),
        allow("pay"),
        deny("delete_*", reason="deleting is done by hand"),
    )
    ToolCallingAgent(model, tools, approval_policy=policy)

Rules are read in order and the first that matches a call decides; a call no rule
matches is asked about (``default="ask"``: safe by default). Names are globs
(``fnmatch``); ``when`` is a predicate on the call's arguments, which are validated
against the tool's schema first (a call whose arguments are invalid is never asked
about: it fails with a tool error the model reads). A rule is checked when it is
built, and a predicate that raises fails the run with ``ApprovalRuleError`` naming
the rule: it is a bug in the rule, which another attempt would not fix.

A person can widen or narrow this for one session while it runs: approving a call
with ``always=True`` ("always allow ``search`` here"), or changing the session's
approvals (``set_approvals``). Those session rules are kept by the engine, with the
session's data, and are read before the agent's policy (see ``ApprovalRules``).
"""

from __future__ import annotations

import fnmatch
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ratchet.errors import ApprovalRuleError
from ratchet.types import Verdict


@dataclass(frozen=True)
class Rule:
    """One line of a policy: ``verdict`` for calls to ``names`` (globs) that ``when`` picks."""

    verdict: Verdict
    names: tuple[str, ...]
    when: Callable[[dict[str, Any]], bool] | None = None
    reason: str | None = None

    def matches(self, name: str, arguments: dict[str, Any]) -> bool:
        if not any(fnmatch.fnmatchcase(name, pattern) for pattern in self.names):
            return False
        if self.when is None:
            return True
        return predicate(self.when, arguments, f"The approval rule {self.describe()}", name)

    def describe(self) -> str:
        condition = f" (when {_where(self.when)})" if self.when is not None else ""
        return f"{self.verdict} {', '.join(self.names)}{condition}"


def allow(*names: str, when: Callable[[dict[str, Any]], bool] | None = None) -> Rule:
    """Run these calls without asking."""
    return Rule("allow", _names(names), _when(when))


def ask(*names: str, when: Callable[[dict[str, Any]], bool] | None = None) -> Rule:
    """Have a person approve these calls first (the run waits, durably)."""
    return Rule("ask", _names(names), _when(when))


def deny(
    *names: str, when: Callable[[dict[str, Any]], bool] | None = None, reason: str | None = None
) -> Rule:
    """Never run these calls: the model is told, with ``reason``."""
    return Rule("deny", _names(names), _when(when), reason)


class ApprovalPolicy:
    """Rules by tool name and arguments; the first match decides (see the module)."""

    def __init__(self, *rules: Rule, default: Literal["allow", "ask"] = "ask") -> None:
        for rule in rules:
            if not isinstance(rule, Rule):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ApprovalRuleError(_not_a_rule(rule))
        if default not in ("allow", "ask"):
            raise ApprovalRuleError(
                f"ApprovalPolicy(default={default!r}): the default is 'ask' or 'allow' "
                "(to refuse what no rule names, end with deny('*'))."
            )
        self.rules = rules
        self.default: Verdict = default

    def decide(self, name: str, arguments: dict[str, Any]) -> tuple[Verdict, Rule | None]:
        """The verdict on one call, and the rule that gave it (``None``: the default)."""
        for rule in self.rules:
            if rule.matches(name, arguments):
                return rule.verdict, rule
        return self.default, None

    def __call__(self, name: str, arguments: dict[str, Any]) -> bool:
        """Whether the call needs a person (the plain ``approval_policy`` interface)."""
        return self.decide(name, arguments)[0] == "ask"


def predicate(
    fn: Callable[[dict[str, Any]], Any], arguments: dict[str, Any], rule: str, tool: str
) -> bool:
    """``fn(arguments)``; a predicate that raises fails with ``ApprovalRuleError``
    naming ``rule`` and the call, never as an error another attempt could fix."""
    try:
        return bool(fn(arguments))
    except Exception as e:  # noqa: BLE001 - any exception of the rule's is its author's bug
        raise ApprovalRuleError(
            f"{rule} raised {type(e).__name__}: {e}, on a call to {tool} with arguments "
            f"{arguments}. Fix the predicate (the arguments it gets are the tool's, validated "
            "and with their defaults filled in); the run cannot go on until then."
        ) from e


def _not_a_rule(given: object) -> str:
    """What to write instead of ``given`` in ``ApprovalPolicy(...)``."""
    what = f"not {given!r} ({type(given).__name__})"
    if isinstance(given, (list, tuple)):
        fix = "pass the rules themselves, not a list: ApprovalPolicy(*rules)"
    elif isinstance(given, str):
        fix = f"write ApprovalPolicy(ask({given!r})), for example"
    else:
        fix = "write ApprovalPolicy(allow('search'), ask('pay')), for example"
    return f"ApprovalPolicy takes rules made with allow(...), ask(...) or deny(...), {what}: {fix}."


def _names(names: tuple[str, ...]) -> tuple[str, ...]:
    # Callers without types pass anything.
    valid = all(isinstance(n, str) and n for n in names)  # pyright: ignore[reportUnnecessaryIsInstance]
    if not names or not valid:
        listed = len(names) == 1 and isinstance(names[0], (list, tuple))
        fix = f" Pass the names themselves: {', '.join(map(repr, names[0]))}." if listed else ""
        raise ApprovalRuleError(
            "A rule needs at least one tool name (or glob, such as 'read_*'), each a "
            f"non-empty string; got {names!r}.{fix}"
        )
    return names


def _when(
    when: Callable[[dict[str, Any]], bool] | None,
) -> Callable[[dict[str, Any]], bool] | None:
    if when is not None and (not callable(when) or not _takes_one_argument(when)):
        raise ApprovalRuleError(
            f"when= takes a function of one argument, the call's arguments, such as "
            f"when=lambda args: args['amount'] > 100; got {when!r}."
        )
    return when


def _takes_one_argument(fn: Callable[..., Any]) -> bool:
    try:
        inspect.signature(fn).bind({})
    except TypeError:
        return False
    except ValueError:  # a builtin without a signature: it will tell at run time
        return True
    return True


def _where(fn: Callable[..., Any]) -> str:
    """``<lambda> at policies.py:12``: which predicate, for error messages."""
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__name__", None) or repr(fn)
    if code is None:
        return name
    return f"{name} at {code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}"
