"""Who is calling, once authenticated: an identity, a role and a tenant.

An authenticator (``TokenAuth``, ``JwtAuth``, or your own callable) turns a
request into a ``Principal``; the access policy (``ratchet.web._access``) decides
from it what the caller may see and do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from starlette.requests import Request


@dataclass(frozen=True)
class Principal:
    """The caller: ``identity`` owns what it starts; an ``operator`` sees and decides
    everything (in its ``tenant``, when it has one); ``tenant`` scopes both."""

    identity: str
    operator: bool = False
    tenant: str | None = None


ANONYMOUS = Principal("anonymous", operator=True)
"""The caller of an app made with ``auth=None`` (local development): sees everything."""

Authenticate = Callable[[Request], "Principal | Awaitable[Principal]"]
"""A custom scheme: the request's ``Principal``, or raises ``AuthError`` (401)."""


class Authenticator(Protocol):
    """What ``create_app(auth=...)`` takes (a bare ``Authenticate`` callable too)."""

    def authenticate(self, request: Request) -> Principal | Awaitable[Principal]: ...
