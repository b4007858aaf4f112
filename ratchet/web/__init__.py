"""``ratchet web``: Ratchet's sessions over HTTP, for web and mobile apps.

A stateless server over ``AgentClient``: every request reads or changes the
session's workflow, so any number of replicas can run behind a load balancer.
Live events are Server-Sent Events whose ids are offsets in the session's event
stream, so a client that reconnects (to this replica or another) with
``Last-Event-ID`` continues exactly after the last event it saw.

Needs the ``web`` extra (``pip install 'ratchet[web]'``: FastAPI and uvicorn).
``create_app(client)`` returns an ASGI app to serve, or to mount in your own
FastAPI or Starlette app; ``ratchet web`` serves it with uvicorn.

Each caller reaches only their own sessions (``owners_only``), operators all of
them; ``create_app(auth=..., authorize=...)`` takes your own schemes.
"""

from ._access import Action, Authorize, Filter, owners_only
from ._app import create_app
from ._auth import AuthError, TokenAuth
from ._jwt import JwtAuth
from ._principal import Authenticate, Authenticator, Principal

__all__ = [
    "Action",
    "Authenticate",
    "Authenticator",
    "AuthError",
    "Authorize",
    "Filter",
    "JwtAuth",
    "owners_only",
    "Principal",
    "TokenAuth",
    "create_app",
]
