"""MCP tool servers as tools: ``ToolCallingAgent(..., toolsets=[MCPToolset.stdio(...)])``.

A toolset is one MCP server, reached from the worker: a process per worker for a
stdio server (started on first use, started again after it dies), or a Streamable
HTTP endpoint. Credentials (``env``, ``headers``) stay on the worker; only tool
names, arguments and results reach the model and the history.

Its tool list is cached per worker and read again after ``cache_ttl`` seconds or
when the server says it changed (``notifications/tools/list_changed``, or the
``subscriptions/listen`` stream of 2026-07-28 servers). Calls run like any tool's:
in the turn, checkpointed, or each as its own activity with ``durable=True``. The
agent's ``approval_policy`` sees them by name. A server's error, and a server that
dies mid-call, become tool errors the model reads; a durable call whose server
went away fails its attempt instead, so the activity's retries apply.

Needs the ``mcp`` package (``pip install 'ratchet[mcp]'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, cast

from ratchet.errors import RunError, ToolError

from ._tools import ApprovalRule, Tool

try:
    import anyio
    import httpx2
    from mcp import Client, MCPError, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.client.subscriptions import ListenNotSupportedError
    from mcp.types import CallToolResult, ToolListChangedNotification
    from mcp_types.jsonrpc import CONNECTION_CLOSED
except ImportError as e:  # pragma: no cover - depends on the install
    raise ImportError("MCP toolsets need the mcp package: pip install 'ratchet[mcp]'") from e

logger = logging.getLogger(__name__)

CACHE_TTL = 300.0
"""Seconds a server's tool list is used before it is read again."""
IDLE_CHECK = 5.0
"""A connection idle this long is pinged before a call, so a server that went away
between turns without closing the connection (an HTTP server that restarted) is
reached again instead of failing the call. A stdio server that dies closes its
output: the toolset notices at once and starts it again on the next call."""


class MCPToolset:
    """The tools of one MCP server. Build it with :meth:`stdio` or :meth:`http`.

    ``prefix`` names its tools ``<prefix>_<tool>`` (for two servers with a tool of the
    same name); ``allowed`` keeps only the tools it names (or, a function, picks);
    ``requires_approval`` and ``durable`` apply to each tool as on :func:`tool`;
    ``timeout`` bounds one call in seconds.
    """

    def __init__(
        self,
        server: StdioServerParameters | str,
        *,
        name: str,
        headers: Mapping[str, str] | None = None,
        prefix: str | None = None,
        allowed: Collection[str] | Callable[[str], bool] | None = None,
        requires_approval: ApprovalRule = False,
        durable: bool = False,
        timeout: float | None = 60.0,
        cache_ttl: float = CACHE_TTL,
    ) -> None:
        self.name = name
        self.prefix = prefix
        self.requires_approval = requires_approval
        self.durable = durable
        self.timeout = timeout
        self.cache_ttl = cache_ttl
        self._server = server
        self._headers = dict(headers or {})
        self._allowed = allowed
        self._listed: dict[str, Tool] | None = None
        self._listed_at = 0.0
        self._stale = False
        self._link: _Link | None = None
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def stdio(
        cls,
        command: str,
        *args: str,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        **options: Any,
    ) -> MCPToolset:
        """A server this worker runs as a subprocess and talks to over stdin/stdout."""
        params = StdioServerParameters(
            command=command, args=list(args), env=dict(env) if env else None, cwd=cwd
        )
        return cls(params, name=name or command.rsplit("/", 1)[-1], **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        **options: Any,
    ) -> MCPToolset:
        """A Streamable HTTP server at ``url`` (``headers``: its credentials)."""
        return cls(url, name=name or url, headers=headers, **options)

    async def tools(self) -> list[Tool]:
        """The server's tools, from this worker's cache while it is fresh."""
        lock = self._guard()
        async with lock:
            fresh = time.monotonic() - self._listed_at < self.cache_ttl
            if self._listed is None or self._stale or not fresh:
                self._stale = False  # a change announced while reading is read next time
                self._listed = await self._list()
                self._listed_at = time.monotonic()
            return list(self._listed.values())

    async def find(self, name: str) -> Tool | None:
        """The tool named ``name`` (as the model knows it), if the server has it."""
        for found in await self.tools():
            if found.name == name:
                return found
        return None

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Call the server's ``tool``; its error (or death) raises :class:`ToolError`."""
        link = await self._connected()
        if time.monotonic() - link.used > IDLE_CHECK and not await link.answers():
            await self._drop(link)  # died while idle: nothing was sent, start it again
            link = await self._connected()
        link.used = time.monotonic()
        try:
            result = await link.client.call_tool(tool, arguments, read_timeout_seconds=self.timeout)
        except MCPError as e:
            if e.code != CONNECTION_CLOSED:
                raise ToolError(f"{self.name} refused {tool}: {e.message}") from e
            await self._drop(link)
            raise ServerGoneError(
                f"MCP server {self.name!r} went away during the call to {tool} (it is started "
                "again for the next call); the call may or may not have taken effect."
            ) from e
        return _result_text(self.name, tool, result)

    async def aclose(self) -> None:
        """Stop the server process (or end the HTTP session); the next use starts it again."""
        if self._link is not None:
            await self._drop(self._link)

    def _guard(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a connection belongs to the loop that opened it
            self._loop, self._lock, self._link, self._listed = loop, asyncio.Lock(), None, None
        assert self._lock is not None
        return self._lock

    async def _list(self) -> dict[str, Tool]:
        try:
            return await self._list_once()
        except ServerGoneError:  # reading is harmless: try once more on a new connection
            return await self._list_once()

    async def _list_once(self) -> dict[str, Tool]:
        link = await self._connected()
        link.used = time.monotonic()
        listed: dict[str, Tool] = {}
        cursor: str | None = None
        try:
            while True:
                page = await link.client.list_tools(cursor=cursor)
                for found in page.tools:
                    if self._keeps(found.name):
                        built = self._tool(found.name, found.description, found.input_schema)
                        listed[built.name] = built
                cursor = page.next_cursor
                if cursor is None:
                    return listed
        except MCPError as e:
            await self._drop(link)
            raise ServerGoneError(f"MCP server {self.name!r} did not list its tools: {e}") from e

    def _keeps(self, name: str) -> bool:
        if self._allowed is None:
            return True
        return self._allowed(name) if callable(self._allowed) else name in self._allowed

    def _tool(self, name: str, description: str | None, schema: dict[str, Any]) -> Tool:
        async def call(**arguments: Any) -> str:
            return await self.call(name, arguments)

        return Tool(
            name=f"{self.prefix}_{name}" if self.prefix else name,
            description=description or f"{name} (MCP server {self.name})",
            fn=call,
            arguments_model=None,
            schema=schema,
            requires_approval=self.requires_approval,
            durable=self.durable,
            timeout=self.timeout,
        )

    async def _connected(self) -> _Link:
        self._guard()
        link = self._link
        if link is None or not link.alive:  # no await before it is set: one link at a time
            self._link = link = _Link(self.name, self._client, self._changed)
        await link.opened()  # at once when it is open already
        return link

    async def _drop(self, link: _Link) -> None:
        if self._link is link:
            self._link = None
            self._stale = True
        await link.close()

    def _changed(self) -> None:
        self._stale = True

    @property
    def connected(self) -> bool:
        """Whether this worker holds an open connection to the server now (a stdio
        server that died is noticed at once: its connection is closed)."""
        return self._link is not None and self._link.alive

    def _client(self, closed: Callable[[], None]) -> Client:
        """A client on the server's transport; ``closed`` is called when the server
        closes it (a stdio server's output ends when its process dies)."""
        server = self._server
        if isinstance(server, str):
            http = httpx2.AsyncClient(headers=self._headers) if self._headers else None
            transport = streamable_http_client(server, http_client=http)
        else:
            transport = stdio_client(server)

        async def on_message(message: object) -> None:
            if isinstance(message, ToolListChangedNotification):
                self._changed()

        return Client(
            _Watched(transport, closed),
            message_handler=on_message,
            cache=None,
            read_timeout_seconds=self.timeout,
        )


class ServerGoneError(RunError):
    """The MCP server died or could not be reached. A call in the turn becomes a tool
    error the model reads; a durable call's attempt fails, so its activity retries;
    listing the tools fails the turn's attempt, which retries too."""


class _Link:
    """One connection, held open by a task of its own: the MCP client's context must
    be left in the task that entered it, and calls come from many turns' tasks."""

    def __init__(
        self,
        name: str,
        connect: Callable[[Callable[[], None]], Client],
        changed: Callable[[], None],
    ) -> None:
        self.name = name
        self._connect = connect
        self._changed = changed
        self._ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._task = asyncio.create_task(self._hold(), name=f"mcp:{name}")
        self.client: Client
        self.used = time.monotonic()

    @property
    def alive(self) -> bool:
        return not self._task.done() and not self._closing.is_set()

    async def opened(self) -> None:
        try:
            self.client = await self._ready
        except Exception as e:
            # Cause first and no chained traceback: a turn's failure must stay short
            # enough for the Temporal UI to show it (over 4 KB it shows none).
            raise ServerGoneError(
                f"{_reason(e)}: MCP server {self.name!r} could not be started or reached"
            ) from None

    async def answers(self) -> bool:
        try:
            await self.client.list_tools()  # ping is gone from the 2026-07-28 protocol
        except MCPError:
            return False
        return True

    async def close(self) -> None:
        self._closing.set()
        with contextlib.suppress(BaseException):
            await self._task

    async def _hold(self) -> None:
        try:
            async with self._connect(self._closing.set) as client:
                self._ready.set_result(client)
                listener = asyncio.create_task(self._listen(client))
                try:
                    await self._closing.wait()
                finally:
                    listener.cancel()
                    with contextlib.suppress(BaseException):
                        await listener
        except Exception as e:  # noqa: BLE001 - reported to whoever waits for the link
            if not self._ready.done():
                self._ready.set_exception(e)
            else:
                logger.info("MCP server %r disconnected: %s", self.name, _reason(e))
        finally:
            if not self._ready.done():
                self._ready.set_exception(ConnectionError("closed before it opened"))

    async def _listen(self, client: Client) -> None:
        """Change events of servers that send them on a listen stream (2026-07-28)."""
        try:
            async with client.listen(tools_list_changed=True) as changes:
                async for _ in changes:
                    self._changed()
        except ListenNotSupportedError:
            pass  # an older server: its notifications reach on_message
        except Exception as e:  # noqa: BLE001 - the cache TTL still applies
            logger.debug("MCP server %r: no change events (%s)", self.name, e)


class _Watched:
    """A transport whose read stream calls ``closed`` when it ends: the server closed
    the connection (a stdio server's process died)."""

    def __init__(self, transport: Any, closed: Callable[[], None]) -> None:
        self._transport = transport
        self._closed = closed

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._transport.__aenter__()
        return _WatchedRead(read, self._closed), write

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._transport.__aexit__(*exc)


class _WatchedRead:
    """A read stream that calls ``closed`` at its end (``ReadStream`` of ``mcp``)."""

    def __init__(self, stream: Any, closed: Callable[[], None]) -> None:
        self._stream = stream
        self._closed = closed

    def __getattr__(self, name: str) -> Any:  # last_context, ...
        return getattr(self._stream, name)

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._closed()
            raise

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _WatchedRead:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._stream.__aexit__(*exc)


def _result_text(server: str, tool: str, result: CallToolResult) -> str:
    parts: list[str] = []
    for part in result.content:
        text = getattr(part, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            mime = getattr(part, "mime_type", None) or part.type
            parts.append(f"[{part.type}: {mime}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    text = "\n".join(parts)
    if result.is_error:
        raise ToolError(f"{tool} failed on MCP server {server!r}: {text or '(no message)'}")
    return text


def _reason(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        inner = cast(tuple[BaseException, ...], error.exceptions)  # pyright: ignore[reportUnknownMemberType]
        return "; ".join(_reason(e) for e in inner)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
