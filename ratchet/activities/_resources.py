"""Worker resources: process-bound objects (connections, clients) agents share.

A turn may run on any worker, so a database connection or an HTTP client
cannot live in agent state. Each worker creates its resources once, when it
starts, from the factories given to ``build_worker(resources=...)``; agents
reach them as ``context.resources[name]``; they are closed when the worker
shuts down.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from ratchet.errors import ConfigurationError, ResourceNotFoundError

logger = logging.getLogger(__name__)

ResourceFactory = Callable[[], Any]
"""Returns the resource, or an awaitable of it. A resource with ``aclose()`` or
``close()`` (sync or async) is closed at shutdown."""


class WorkerResources(Mapping[str, Any]):
    """The resources of one worker, created by :meth:`lifespan`."""

    def __init__(self, factories: Mapping[str, ResourceFactory] | None = None) -> None:
        self._factories = dict(factories or {})
        for name, factory in self._factories.items():
            if not callable(factory):
                raise ConfigurationError(
                    f"Resource {name!r} must be given as a factory (a callable that creates "
                    f"it), not a {type(factory).__name__}: resources={{{name!r}: make_it}}."
                )
        self._values: dict[str, Any] = {}
        self._open = False

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Create every resource, yield while the worker runs, then close them."""
        try:
            for name, factory in self._factories.items():
                value = factory()
                if inspect.isawaitable(value):
                    value = await value
                self._values[name] = value
            self._open = True
            yield
        finally:
            self._open = False
            await self._close()

    async def _close(self) -> None:
        for name, value in reversed(list(self._values.items())):
            close = getattr(value, "aclose", None) or getattr(value, "close", None)
            try:
                if callable(close):
                    result = close()
                    if inspect.isawaitable(result):
                        await result
            except Exception:
                logger.exception("Closing worker resource %r failed", name)
        self._values.clear()

    def __getitem__(self, name: str) -> Any:
        if name not in self._factories:
            known = ", ".join(sorted(self._factories)) or "(none)"
            raise ResourceNotFoundError(
                f"No worker resource {name!r}; this worker has: {known}. Give the worker a "
                f"factory for it: build_worker(..., resources={{{name!r}: factory}})."
            )
        if not self._open:
            raise ConfigurationError(
                f"Worker resource {name!r} is not open: resources exist while the worker runs."
            )
        return self._values[name]

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)
