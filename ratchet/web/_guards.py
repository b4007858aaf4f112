"""ASGI middleware in front of every route: the body limit and the origin
allow-list. Both answer with a problem before a route (or Temporal) sees anything.
And the limit on what a send adds, which a route checks once it knows what is new.

Two caps, since an AG-UI client sends the whole conversation with every run: the
body (``--max-body``, 8 MiB by default: a 2,000-message conversation with 2 KB
replies is about 4-5 MB of JSON) and the text of the messages a send adds
(``--max-message``, 256 KiB by default: a long paste fits, and a send stays far
below Temporal's 2 MB payload limit, which its Update carries)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from ratchet.errors import PayloadTooLargeError

MAX_BODY = 8 << 20
MAX_MESSAGE = 256 << 10

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _problem(send: Send, status: int, kind: str, title: str, detail: str) -> None:
    body = json.dumps({"type": kind, "title": title, "status": status, "detail": detail}).encode()
    headers = [
        (b"content-type", b"application/problem+json"),
        (b"content-length", b"%d" % len(body)),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Refuses a request body over ``limit`` bytes with 413, whether it declares
    its length or streams it in chunks. A chunked body is read here, up to the
    limit, before the app sees it: an app that parses the body (FastAPI) would turn
    an error raised while it reads into a 400 of its own."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers", ())).get(b"content-length")
        if declared is not None and declared.isdigit():  # the server holds it to its length
            if int(declared) > self.limit:
                return await self._refuse(send)
            return await self.app(scope, receive, send)
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before it finished sending
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                return await self._refuse(send)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, given = b"".join(chunks), False

        async def replayed() -> Message:
            nonlocal given
            if given:
                return await receive()  # after the body: a disconnect, when it comes
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replayed, send)

    async def _refuse(self, send: Send) -> None:
        await _problem(
            send,
            413,
            "PayloadTooLargeError",
            "Payload too large",
            f"The request body is over {self.limit:,} bytes, this server's limit "
            "(--max-body; create_app(max_body=...)).",
        )


def check_new(texts: list[str], limit: int) -> None:
    """Refuse (413) a send whose new messages' text is over ``limit`` bytes."""
    size = sum(len(text.encode()) for text in texts)
    if size > limit:
        raise PayloadTooLargeError(
            f"This send adds {size:,} bytes of new message text, over the {limit:,} a send "
            "may add (--max-message; create_app(max_message=...)). Send less at a time."
        )


class OriginCheck:
    """Refuses a request whose ``Origin`` header is not on the allow-list (403).
    Requests without one (servers, the CLI, curl) pass, and so do the page's own:
    browsers send ``Origin`` on a same-origin POST too, and there it names the
    ``Host`` the request went to. CORS answers the other browsers that are allowed."""

    def __init__(self, app: ASGIApp, allowed: Collection[str]) -> None:
        self.app, self.allowed = app, {origin.rstrip("/") for origin in allowed}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers", ()))
            origin = headers.get(b"origin")
            if origin is not None and not self._allows(origin.decode(), headers.get(b"host")):
                return await _problem(
                    send,
                    403,
                    "Forbidden",
                    "Origin not allowed",
                    f"Origin {origin.decode()!r} is not allowed; add it with --cors-origin.",
                )
        await self.app(scope, receive, send)

    def _allows(self, origin: str, host: bytes | None) -> bool:
        if origin.rstrip("/") in self.allowed:
            return True
        # The scheme is not compared: behind a proxy that ends TLS the page is
        # https while the request reaching us is http, to the same host.
        return host is not None and urlsplit(origin).netloc.lower() == host.decode().lower()
