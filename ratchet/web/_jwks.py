"""The identity provider's signing keys: its JWKS, found by OIDC discovery or given.

PyJWT's ``PyJWKClient`` caches the key set (5 minutes) and refetches it when a token
names an unknown key id, at most once per ``cooldown_duration`` after any successful
fetch (so made-up key ids cannot make it hammer the provider). Its fetches are
blocking urllib calls, so they run in a thread, one at a time.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import urllib.request
from typing import Any
from urllib.parse import urlparse

from jwt import PyJWK, PyJWKClient, PyJWKClientConnectionError, PyJWKClientError, PyJWKSetError

from ratchet.errors import ConfigurationError

log = logging.getLogger("ratchet.web")
DISCOVERY = "/.well-known/openid-configuration"
MAX_DOCUMENT = 1 << 20


class UnknownKey(Exception):
    """None of the issuer's signing keys has the token's key id."""


class IssuerUnavailable(Exception):
    """The issuer's keys could not be fetched (HTTP 503): nothing is wrong with the token."""


def checked_url(name: str, url: str) -> str:
    """``url`` if it is https (or http to a loopback host, for tests); else raises."""
    parts = urlparse(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname and _loopback(parts.hostname):
        return url
    raise ConfigurationError(
        f"{name} {url!r} must be an https:// URL (http:// only to a loopback address, for "
        "tests): keys fetched in clear could be replaced on the way."
    )


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _fetch_json(url: str, timeout: float) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read(MAX_DOCUMENT))


class IssuerKeys:
    """The signing keys of ``issuer``, from ``jwks_url`` or from its discovery document."""

    def __init__(
        self, issuer: str, jwks_url: str | None, *, cooldown: float, timeout: float
    ) -> None:
        self.issuer = issuer
        self.cooldown = cooldown
        self._timeout = timeout
        self._client = self._jwks(jwks_url) if jwks_url else None
        self._lock = asyncio.Lock()  # one fetch at a time, and one thread, however many wait

    def _jwks(self, url: str) -> PyJWKClient:
        return PyJWKClient(url, cooldown_duration=self.cooldown, timeout=self._timeout)

    async def key(self, kid: str) -> PyJWK:
        """The key with id ``kid``; raises ``UnknownKey`` or ``IssuerUnavailable``."""
        async with self._lock:
            client = self._client or await self._discover()
            try:
                return await asyncio.to_thread(client.get_signing_key, kid)
            except (PyJWKClientConnectionError, PyJWKSetError, ValueError) as e:
                log.warning("the JWKS at %s could not be read: %s", client.uri, e)
                raise IssuerUnavailable(
                    f"The identity provider's keys could not be read from {client.uri}; "
                    "try again in a moment."
                ) from None
            except PyJWKClientError:
                raise UnknownKey(kid) from None

    async def _discover(self) -> PyJWKClient:
        """The JWKS named by the issuer's discovery document, fetched once (a failure is
        not remembered: the next request tries again)."""
        url = self.issuer.rstrip("/") + DISCOVERY
        try:
            document = await asyncio.to_thread(_fetch_json, url, self._timeout)
        except (OSError, ValueError) as e:
            log.warning("OIDC discovery at %s failed: %s", url, e)
            raise IssuerUnavailable(
                f"The identity provider's discovery document {url} could not be read; "
                "try again in a moment."
            ) from None
        self._client = self._jwks(self._jwks_uri(url, document))
        return self._client

    def _jwks_uri(self, url: str, document: Any) -> str:
        found = document.get("jwks_uri") if isinstance(document, dict) else None
        named = document.get("issuer") if isinstance(document, dict) else None
        if named != self.issuer or not isinstance(found, str):
            log.error("%s names issuer %r and jwks_uri %r", url, named, found)
            raise IssuerUnavailable(
                f"The discovery document {url} does not name issuer {self.issuer!r} with a "
                "jwks_uri: check the configured issuer (it must match exactly)."
            )
        try:
            return checked_url("The discovery document's jwks_uri", found)
        except ConfigurationError as e:
            raise IssuerUnavailable(str(e)) from None
