"""The identity provider's signing keys: its JWKS, found by OIDC discovery or given.

The fetch and the cache are ours (PyJWT only parses the set, ``PyJWKSet``): a lookup
whose key is held answers at once, never behind a fetch; lookups that need a fetch
share the one in flight. Every fetch, failed or not, starts ``cooldown`` before the
next (made-up key ids cannot make us hammer the provider), except while no set is
held: then nobody can sign in, and the next fetch may start ``UNAVAILABLE_RETRY``
after the last (the 503's Retry-After). A set older than ``max_age`` is fetched
again in the background, and kept if that fails.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import math
import time
import urllib.request
from typing import Any
from urllib.parse import urlparse

from jwt import PyJWK, PyJWKSet
from jwt.exceptions import PyJWKError, PyJWKSetError

from ratchet.errors import ConfigurationError

log = logging.getLogger("ratchet.web")
DISCOVERY = "/.well-known/openid-configuration"
MAX_DOCUMENT = 1 << 20
MAX_AGE = 300.0
"""Seconds a key set is used before it is fetched again (in the background)."""
UNAVAILABLE_RETRY = 5.0
"""Seconds between fetches while no key set is held (a provider down at start)."""


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


def _signing_keys(document: Any) -> dict[str, PyJWK]:
    """The keys of a JWKS that can verify signatures, by key id; raises ``ValueError``."""
    if not isinstance(document, dict):
        raise ValueError("the JWKS is not a JSON object")
    keys = PyJWKSet.from_dict(document).keys
    return {k.key_id: k for k in keys if k.key_id and k.public_key_use in ("sig", None)}


class IssuerKeys:
    """The signing keys of ``issuer``, from ``jwks_url`` or from its discovery document."""

    def __init__(
        self, issuer: str, jwks_url: str | None, *, cooldown: float, timeout: float
    ) -> None:
        self.issuer = issuer
        self.cooldown = cooldown
        self.max_age = MAX_AGE
        self._timeout = timeout
        self._jwks_url = jwks_url
        self._keys: dict[str, PyJWK] | None = None  # the last good set, kept on failures
        self._fetched = self._tried = -math.inf  # last good fetch; last fetch's end
        self._problem = "The identity provider's keys could not be read; try again soon."
        self._fetch: asyncio.Task[None] | None = None

    async def key(self, kid: str) -> PyJWK:
        """The key with id ``kid``; raises ``UnknownKey`` or ``IssuerUnavailable``."""
        now = time.monotonic()
        if self._keys is not None and kid in self._keys:
            if now - self._fetched > self.max_age and now - self._tried >= self.cooldown:
                self._fetching()  # in the background: this request does not wait
            return self._keys[kid]
        wait = self.cooldown if self._keys is not None else min(self.cooldown, UNAVAILABLE_RETRY)
        if self._fetch is not None or now - self._tried >= wait:
            await asyncio.shield(self._fetching())  # a caller gone does not stop it
            if self._keys is not None and kid in self._keys:
                return self._keys[kid]
        if self._keys is None:
            raise IssuerUnavailable(self._problem)
        raise UnknownKey(kid)

    def _fetching(self) -> asyncio.Task[None]:
        """The fetch in flight, started if there is none (or it is another loop's)."""
        loop = asyncio.get_running_loop()
        if self._fetch is None or self._fetch.get_loop() is not loop:
            self._fetch = loop.create_task(self._refresh())
        return self._fetch

    async def _refresh(self) -> None:
        try:
            url = self._jwks_url or await self._discover()
            self._keys = await self._read(url)
            self._fetched = time.monotonic()
        except IssuerUnavailable as e:
            self._problem = str(e)
        finally:
            self._tried = time.monotonic()
            if self._fetch is asyncio.current_task():  # not another loop's, started since
                self._fetch = None

    async def _read(self, url: str) -> dict[str, PyJWK]:
        try:
            return _signing_keys(await asyncio.to_thread(_fetch_json, url, self._timeout))
        except (OSError, ValueError, PyJWKError, PyJWKSetError) as e:
            log.warning("the JWKS at %s could not be read: %s", url, e)
            raise IssuerUnavailable(
                f"The identity provider's keys could not be read from {url}; try again in a moment."
            ) from None

    async def _discover(self) -> str:
        """The JWKS URL that the issuer's discovery document names (a failure is
        not remembered: the next fetch, after the cooldown, tries again)."""
        url = self.issuer.rstrip("/") + DISCOVERY
        try:
            document = await asyncio.to_thread(_fetch_json, url, self._timeout)
        except (OSError, ValueError) as e:
            log.warning("OIDC discovery at %s failed: %s", url, e)
            raise IssuerUnavailable(
                f"The identity provider's discovery document {url} could not be read; "
                "try again in a moment."
            ) from None
        self._jwks_url = self._jwks_uri(url, document)
        return self._jwks_url

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
