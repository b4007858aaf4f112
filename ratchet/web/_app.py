"""``create_app``: the ASGI app behind ``ratchet web``.

Routes live under ``/v1``; every one needs a token unless the app was made with
``auth=None``. OpenAPI docs are at ``/docs``; ``/healthz`` answers without auth.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.middleware.trustedhost import TrustedHostMiddleware

from ratchet.client import AgentClient
from ratchet.errors import RatchetError

from . import _problems as problems
from ._access import Access, Authorize, owners_only
from ._agui import agui
from ._agui_threads import Threads
from ._auth import AuthError
from ._evals import evals
from ._guards import MAX_BODY, MAX_MESSAGE, BodyLimit, OriginCheck
from ._hub import Hub
from ._jwks import IssuerUnavailable
from ._page import mount_page
from ._principal import Authenticate, Authenticator
from ._routes import api

LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]", "::1"]


def create_app(
    client: AgentClient,
    *,
    auth: Authenticator | Authenticate | None,
    authorize: Authorize = owners_only,
    agents: Sequence[str] | None = None,
    cors_origins: Collection[str] = (),
    max_body: int = MAX_BODY,
    max_message: int = MAX_MESSAGE,
    reports: Path | None = None,
    report_readers: Collection[str] = (),
) -> FastAPI:
    """The HTTP API over ``client``'s namespace and task queue.

    ``auth`` turns a request into its caller, a ``Principal``: ``TokenAuth`` maps
    tokens to identities (``TokenAuth.from_env()``), ``JwtAuth`` verifies your
    identity provider's tokens, or give a callable of your own. ``None`` serves
    everyone as ``anonymous`` (an operator), for local development only.
    ``authorize`` decides what a caller may see and do (``owners_only``: their own
    sessions; an operator's, everything; see ``ratchet.web._access``). ``agents`` names the
    agents the workers host: sessions for any other are refused with 404 before
    anything starts. ``cors_origins`` are the browser origins allowed to call.
    ``reports`` is a directory of evaluation reports (``ratchet.web._evals``) that
    ``report_readers`` may read. ``max_body`` caps a request's body, ``max_message``
    the text of the messages one send adds (``ratchet.web._guards``).
    """
    app = FastAPI(
        title="Ratchet",
        summary="Durable agent sessions over HTTP, with live events as Server-Sent Events.",
        version="1",
    )
    app.state.client = client
    app.state.hub = Hub(client.temporal)
    app.state.auth = auth
    app.state.access = Access(client, authorize)
    app.state.agents = list(agents) if agents is not None else None
    app.state.reports = Path(reports) if reports is not None else None
    app.state.report_readers = frozenset(report_readers)
    app.state.max_message = max_message
    app.state.threads = Threads()
    app.include_router(api)
    app.include_router(evals)
    app.include_router(agui)
    mount_page(app)
    handled = (RatchetError, AuthError, IssuerUnavailable, problems.Forbidden, problems.Gone)
    for error in (*handled, Exception):
        app.add_exception_handler(error, problems.handle)
    app.add_exception_handler(RequestValidationError, problems.handle_validation)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    app.add_middleware(
        CORSMiddleware,
        allow_origins=list(cors_origins),
        allow_methods=["GET", "POST", "DELETE"],
        allow_headers=["Authorization", "Content-Type", "Last-Event-ID", "X-API-Key"],
    )
    app.add_middleware(OriginCheck, allowed=cors_origins)
    if auth is None:  # loopback only: a DNS-rebound name must not reach an open server
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_NAMES)
    app.add_middleware(BodyLimit, limit=max_body)
    return app
