"""RS256 JSON Web Tokens and JSON Web Key Sets, as much as the login path needs. TEST CODE.

The Dex stand-in (dex_standin.py) signs ID tokens with a `SigningKey` and serves its `jwks()`; the Istio gateway
stand-in (istio_gateway.py) verifies them with `verify` against the JWKS it fetched, as Envoy's jwt_authn filter
does with the keys istiod fetched for a RequestAuthentication: signature, `iss`, `exp`/`nbf`, `aud` when the rule
names audiences. Only RS256, the algorithm Dex signs with; `cryptography` does the arithmetic.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

JSON = dict[str, Any]
CLOCK_SKEW_SECONDS = 60  # Envoy's jwt_authn default


class JwtError(Exception):
    """Why a token does not verify (the gateway answers 401 with it)."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _int_b64(n: int) -> str:
    return b64url(n.to_bytes((n.bit_length() + 7) // 8, "big"))


@dataclass(frozen=True)
class SigningKey:
    kid: str
    key: rsa.RSAPrivateKey

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(kid=secrets.token_hex(20), key=rsa.generate_private_key(public_exponent=65537, key_size=2048))

    def jwk(self) -> JSON:
        numbers = self.key.public_key().public_numbers()
        return {
            "use": "sig",
            "kty": "RSA",
            "kid": self.kid,
            "alg": "RS256",
            "n": _int_b64(numbers.n),
            "e": _int_b64(numbers.e),
        }

    def jwks(self) -> JSON:
        return {"keys": [self.jwk()]}

    def sign(self, claims: JSON) -> str:
        header = {"alg": "RS256", "kid": self.kid}
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
        signature = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{b64url(signature)}"


def unverified_claims(token: str) -> JSON:
    """The payload, unchecked (to pick the issuer's rule before verifying); JwtError when it is no JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        raise JwtError("Jwt is not in the form of Header.Payload.Signature")
    try:
        claims = json.loads(b64url_decode(parts[1]))
    except ValueError as e:
        raise JwtError(f"Jwt payload is not JSON: {e}") from e
    if not isinstance(claims, dict):
        raise JwtError("Jwt payload is not a JSON object")
    return claims


def _public_key(jwk: JSON) -> rsa.RSAPublicKey:
    n = int.from_bytes(b64url_decode(jwk["n"]), "big")
    e = int.from_bytes(b64url_decode(jwk["e"]), "big")
    return rsa.RSAPublicNumbers(e, n).public_key()


def verify(token: str, jwks: JSON, *, issuer: str, audiences: list[str], now: float | None = None) -> JSON:
    """The claims of `token` once its RS256 signature verifies with a key of `jwks` and its issuer, lifetime and
    (when `audiences` is not empty) audience are right; JwtError saying what failed otherwise."""
    claims = unverified_claims(token)
    header_b64, payload_b64, signature_b64 = token.split(".")
    try:
        header = json.loads(b64url_decode(header_b64))
        signature = b64url_decode(signature_b64)
    except ValueError as e:
        raise JwtError(f"Jwt header or signature is malformed: {e}") from e
    if header.get("alg") != "RS256":
        raise JwtError(f"Jwt algorithm {header.get('alg')!r} is not supported (RS256 only)")
    keys = [
        k
        for k in jwks.get("keys") or []
        if k.get("kty") == "RSA" and k.get("kid", header.get("kid")) == header.get("kid")
    ]
    if not keys:
        raise JwtError(f"Jwks doesn't have key to match kid or alg from Jwt (kid {header.get('kid')!r})")
    signing_input = f"{header_b64}.{payload_b64}".encode()
    for jwk in keys:
        try:
            _public_key(jwk).verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
            break
        except (InvalidSignature, KeyError, ValueError):
            continue
    else:
        raise JwtError("Jwt verification fails")
    if claims.get("iss") != issuer:
        raise JwtError(f"Jwt issuer {claims.get('iss')!r} is not {issuer!r}")
    current = time.time() if now is None else now
    if "exp" in claims and current > float(claims["exp"]) + CLOCK_SKEW_SECONDS:
        raise JwtError("Jwt is expired")
    if "nbf" in claims and current < float(claims["nbf"]) - CLOCK_SKEW_SECONDS:
        raise JwtError("Jwt not yet valid")
    if audiences:
        aud = claims.get("aud")
        have = aud if isinstance(aud, list) else [aud]
        if not set(have) & set(audiences):
            raise JwtError("Audiences in Jwt are not allowed")
    return claims
