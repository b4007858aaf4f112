"""Who is calling: bearer tokens or API keys, each with an identity.

The identity is recorded as ``by`` on the approvals and answers its holder gives.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Collection, Mapping

from starlette.requests import Request

from ratchet.errors import ConfigurationError

from ._principal import Principal

TOKENS_ENV = "RATCHET_WEB_TOKENS"


class AuthError(Exception):
    """No credentials, or credentials no identity holds (HTTP 401)."""


class TokenAuth:
    """Maps secret tokens to identities: ``TokenAuth({"s3cret": "alice"})``.

    A request presents its token as ``Authorization: Bearer <token>`` or as
    ``X-API-Key: <token>``; tokens are compared in constant time.
    """

    def __init__(self, tokens: Mapping[str, str], *, operators: Collection[str] = ()) -> None:
        if not tokens:
            raise ConfigurationError("TokenAuth needs at least one token: {token: identity}.")
        short = [who for token, who in tokens.items() if len(token) < 16]
        if short:
            raise ConfigurationError(
                f"Tokens of {', '.join(short)} are shorter than 16 characters; generate one "
                "with: python3 -c 'import secrets; print(secrets.token_urlsafe())'"
            )
        self._tokens = [(token.encode(), who) for token, who in tokens.items()]
        self._operators = frozenset(operators)

    def authenticate(self, request: Request) -> Principal:
        """The caller presenting a known token (an operator if ``operators`` names it)."""
        headers = request.headers
        who = self.identify(headers.get("authorization"), headers.get("x-api-key"))
        return Principal(who, operator=who in self._operators)

    @classmethod
    def from_env(cls, name: str = TOKENS_ENV, *, operators: Collection[str] = ()) -> TokenAuth:
        """``identity:token`` pairs, comma-separated: ``alice:tok1,bob:tok2``."""
        raw = os.environ.get(name, "").strip()
        if not raw:
            raise ConfigurationError(
                f"{name} is not set: give each caller a token as 'alice:<token>,bob:<token>', "
                "or run `ratchet web --no-auth` on 127.0.0.1 for local development."
            )
        tokens: dict[str, str] = {}
        for entry in raw.split(","):
            who, sep, token = entry.strip().partition(":")
            if not sep or not who or not token:
                raise ConfigurationError(f"{name}: {entry.strip()!r} is not 'identity:token'.")
            tokens[token] = who
        return cls(tokens, operators=operators)

    def identify(self, authorization: str | None, api_key: str | None) -> str:
        """The identity holding the presented token; raises ``AuthError``."""
        token = api_key
        if authorization:
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() != "bearer" or not value.strip():
                raise AuthError("Authorization must be 'Bearer <token>'.")
            token = value.strip()
        if not token:
            raise AuthError("No credentials: send 'Authorization: Bearer <token>' or 'X-API-Key'.")
        presented = token.encode()
        found = None
        for known, who in self._tokens:  # no early exit: timing says nothing about which
            if hmac.compare_digest(known, presented):
                found = who
        if found is None:
            raise AuthError("Unknown token.")
        return found
