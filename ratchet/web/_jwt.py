"""``JwtAuth``: callers signed in with the app's identity provider (OIDC or OAuth 2.0).

A request presents the provider's access token as ``Authorization: Bearer <jwt>``.
PyJWT checks its signature with the issuer's key (``_jwks``), its ``iss``, ``aud``,
``exp`` and ``nbf``; the algorithms accepted are configured, never read from the
token. Claims then map to a ``Principal``: who (``sub``), whether an operator, which
tenant. A refusal is a 401 naming its reason (``TokenRejected.reason``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import jwt
from jwt.exceptions import InvalidSubjectError
from starlette.requests import Request

from ratchet.errors import ConfigurationError

from ._auth import AuthError
from ._jwks import IssuerKeys, UnknownKey, checked_url
from ._principal import Principal

SIGNATURES = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
    | {"ES256", "ES256K", "ES384", "ES512", "EdDSA"}
)
"""Public-key algorithms: a JWKS holds the keys that verify them, and nothing that signs."""

REASONS = {
    "expired": "The token has expired",
    "not_yet_valid": "The token is not valid yet",
    "bad_signature": "The token's signature does not verify",
    "wrong_audience": "The token is for another audience",
    "wrong_issuer": "The token is from another issuer",
    "algorithm_not_accepted": "The token's algorithm is not accepted",
    "unknown_key": "The token names a key the issuer does not publish",
    "missing_claim": "The token lacks a required claim",
    "malformed": "The token is not a well-formed JWT",
}
"""Each reason a token is refused, with the fixed text of its ``WWW-Authenticate``."""


class TokenRejected(AuthError):
    """A bearer token that does not verify (HTTP 401); ``reason`` is a ``REASONS`` key."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.description = REASONS[reason]


class JwtAuth:
    """Verifies the identity provider's JWTs:
    ``JwtAuth(issuer="https://login.example.com/", audience="ratchet")``.

    Keys come from ``jwks_url``, or from the issuer's OIDC discovery document. An
    unknown key id refetches the keys at most once per ``refresh_cooldown`` seconds.
    ``identity_claim`` names the caller; the caller is an operator when
    ``operator_claim`` is true or (with ``operator_value``) equals or contains it;
    ``tenant_claim``, when given, is required and names the tenant. ``leeway``
    seconds of clock skew are allowed on ``exp`` and ``nbf``.
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str | Sequence[str],
        jwks_url: str | None = None,
        algorithms: Sequence[str] = ("RS256",),
        identity_claim: str = "sub",
        operator_claim: str | None = None,
        operator_value: str | None = None,
        tenant_claim: str | None = None,
        leeway: float = 30,
        refresh_cooldown: float = 30,
        timeout: float = 10,
    ) -> None:
        _check(audience, algorithms, leeway, refresh_cooldown)
        if not isinstance(issuer, str) or not issuer:
            raise ConfigurationError("JwtAuth needs issuer=: the iss its tokens carry.")
        if jwks_url:
            checked_url("jwks_url", jwks_url)
        else:  # the keys are found through the issuer: a URL, then
            checked_url("issuer", issuer)
        if operator_value is not None and not operator_claim:
            raise ConfigurationError("operator_value needs operator_claim: the claim it is in.")
        if not identity_claim:
            raise ConfigurationError("identity_claim must name a claim, such as 'sub'.")
        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        self.algorithms = list(algorithms)
        self.claims = (identity_claim, operator_claim, operator_value, tenant_claim)
        self.leeway = leeway
        self.keys = IssuerKeys(issuer, jwks_url, cooldown=refresh_cooldown, timeout=timeout)

    async def authenticate(self, request: Request) -> Principal:
        """The caller whose token this is; raises ``TokenRejected`` (401)."""
        claims = await self.verify(_bearer(request.headers.get("authorization")))
        return self.principal(claims)

    async def verify(self, token: str) -> dict[str, Any]:
        """The claims of a token that verifies; raises ``TokenRejected``."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRejected("malformed", "The bearer token is not a JWT.") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in self.algorithms:
            raise TokenRejected(
                "algorithm_not_accepted",
                f"The token's algorithm is not accepted: this server accepts "
                f"{', '.join(self.algorithms)} only (alg {str(alg)[:20]!r}).",
            )
        if not isinstance(kid, str) or not kid:
            raise TokenRejected("unknown_key", "The token names no key id (kid header).")
        try:
            key = await self.keys.key(kid)
        except UnknownKey:
            raise TokenRejected(
                "unknown_key",
                f"Unknown key id: the issuer publishes no key {kid[:64]!r} (keys are "
                f"fetched again at most every {self.keys.cooldown:g} s).",
            ) from None
        return self._decode(token, key)

    def _decode(self, token: str, key: jwt.PyJWK) -> dict[str, Any]:
        try:
            return jwt.decode(
                token,
                key,
                algorithms=self.algorithms,
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as e:
            raise _rejection(e, self) from None

    def principal(self, claims: Mapping[str, Any]) -> Principal:
        """The ``Principal`` that verified ``claims`` name; raises ``TokenRejected``."""
        identity_claim, operator_claim, operator_value, tenant_claim = self.claims
        identity = _required(claims, identity_claim)
        tenant = _required(claims, tenant_claim) if tenant_claim else None
        operator = False
        if operator_claim:
            operator = _grants(claim(claims, operator_claim), operator_value)
        return Principal(identity, operator=operator, tenant=tenant)


def _check(
    audience: str | Sequence[str], algorithms: Sequence[str], leeway: float, cooldown: float
) -> None:
    audiences = [audience] if isinstance(audience, str) else list(audience)
    if not audiences or not all(isinstance(a, str) and a for a in audiences):
        raise ConfigurationError(
            "JwtAuth needs the audience its tokens are issued for (the API identifier "
            "registered with the identity provider): audience='...'."
        )
    if not algorithms or isinstance(algorithms, str):
        raise ConfigurationError("algorithms is a list of names: ['RS256'].")
    refused = [a for a in algorithms if a not in SIGNATURES]
    if refused:
        raise ConfigurationError(
            f"Algorithms {', '.join(map(repr, refused))} are not accepted: 'none' is "
            "unsigned, and HS256/384/512 take a shared secret (with a JWKS, anyone with "
            "the public key could sign). Use the issuer's public-key algorithm: "
            f"{', '.join(sorted(SIGNATURES))}."
        )
    for name, seconds in (("leeway", leeway), ("refresh_cooldown", cooldown)):
        if not (math.isfinite(seconds) and 0 <= seconds <= 3600):
            raise ConfigurationError(f"{name} is seconds, 0 to 3600; got {seconds}.")


def _bearer(authorization: str | None) -> str:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError("No credentials: send 'Authorization: Bearer <token>'.")
    return token.strip()


def claim(claims: Mapping[str, Any], name: str) -> Any:
    """``claims[name]``, or a nested claim by its dotted path (``realm_access.roles``)."""
    if name in claims:
        return claims[name]
    found: Any = claims
    for part in name.split("."):
        found = found.get(part) if isinstance(found, Mapping) else None
    return found


def _required(claims: Mapping[str, Any], name: str) -> str:
    value = claim(claims, name)
    if not isinstance(value, str) or not value:
        raise TokenRejected(
            "missing_claim", f"The token has no {name!r} claim (a non-empty string)."
        )
    return value


def _grants(value: Any, wanted: str | None) -> bool:
    if wanted is None:
        return value is True
    if isinstance(value, str):  # one value, or space-separated as OAuth's scope claim
        return value == wanted or wanted in value.split()
    return isinstance(value, list) and wanted in value


def _rejection(error: jwt.PyJWTError, auth: JwtAuth) -> TokenRejected:
    if isinstance(error, jwt.ExpiredSignatureError):
        return TokenRejected("expired", "The token has expired (exp): sign in again.")
    if isinstance(error, jwt.ImmatureSignatureError):
        return TokenRejected(
            "not_yet_valid",
            "The token is not valid yet (nbf or iat is in the future): check the clocks.",
        )
    if isinstance(error, jwt.InvalidSignatureError):
        return TokenRejected(
            "bad_signature", "Bad signature: the token was not signed by the issuer's key."
        )
    if isinstance(error, jwt.InvalidAudienceError):
        return TokenRejected(
            "wrong_audience",
            f"Wrong audience: the token is not for {' or '.join(auth.audience)} (aud).",
        )
    if isinstance(error, jwt.InvalidIssuerError):
        return TokenRejected("wrong_issuer", f"Wrong issuer: tokens must come from {auth.issuer}.")
    if isinstance(error, (jwt.InvalidAlgorithmError, jwt.InvalidKeyError)):
        return TokenRejected(
            "algorithm_not_accepted",
            "The token's algorithm does not match its key's: the algorithm is not accepted.",
        )
    if isinstance(error, jwt.MissingRequiredClaimError):
        return TokenRejected("missing_claim", f"The token has no {error.claim!r} claim.")
    if isinstance(error, InvalidSubjectError):  # PyJWT checks sub's type itself
        return TokenRejected("missing_claim", "The token has no 'sub' claim (a string).")
    return TokenRejected("malformed", "The bearer token is malformed.")
