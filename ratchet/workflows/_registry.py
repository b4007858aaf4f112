"""One object per workflow that answers a query, found through its handler."""

from __future__ import annotations

from typing import TypeVar

from temporalio import workflow

R = TypeVar("R")


def query_registry(query: str, cls: type[R], answer: str) -> R:
    """This workflow's ``cls``, whose method ``answer`` handles ``query``; created and
    installed on first use (workflow state needs no globals: the handler holds it)."""
    registry = getattr(workflow.get_query_handler(query), "__self__", None)
    if not isinstance(registry, cls):
        registry = cls()
        workflow.set_query_handler(query, getattr(registry, answer))
    return registry
