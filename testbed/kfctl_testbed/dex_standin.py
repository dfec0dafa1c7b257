#!/usr/bin/env python3
"""A stand-in for Dex, the OIDC provider of Kubeflow's login path. TEST CODE: kfctl never imports it.

STAND-IN: Kubeflow manifests v1.11.0 deploy ghcr.io/dexidp/dex:v2.44.0, and Dex cannot be built here: its module is
`github.com/dexidp/dex` (no /v2 suffix), so the release tag v2.44.0 is no module version the Go module proxy can
serve ("github.com/dexidp/dex@v2.44.0: reading .../@v/v2.44.0.info: 403 Forbidden ... This module version is not
available", likewise v2.44.0+incompatible; `@latest` is v2.13.0+incompatible of 2018). The process runtime
(runtime.py, STANDIN_IMAGES) runs this module for that image instead, with the pod's arguments (`serve
/etc/dex/cfg/config.yaml`), its mounted ConfigMap and its environment (the `dex-passwords` and `dex-oidc-client`
Secrets kfctl installed), and it does only what Dex does on the login path:

- OIDC discovery (`<issuer>/.well-known/openid-configuration`), the signing keys (`/keys`, RS256, one key made at
  start), `/healthz` (the pod's readinessProbe);
- `/auth`: the authorization request of a configured static client (its `redirectURIs`, `response_type=code`,
  the `openid` scope, PKCE), sent on to the password form of the one connector, `enablePasswordDB`'s
  (`/auth/local/login`), as Dex does when there is one connector;
- the form checks the login (email, as Dex's password DB prompts "Email Address") and the password against the
  bcrypt hash of `staticPasswords` (`hash`, or `hashFromEnv`); a wrong one shows the form again saying "Invalid
  Email Address and password."; a right one goes on to `/approval`, which with `oauth2.skipApprovalScreen` sends
  the browser to the client's redirect URI with a code;
- `/token`: the code (once, within 10 minutes, for the same client, redirect URI and PKCE verifier; the client
  authenticated with its secret, HTTP Basic or form) for an ID token and an access token (RS256 JWTs: `iss`, Dex's
  `sub`, `aud`, `exp`, `iat`, `nonce`, `email`, `email_verified`, `name`, `groups` when the user has some);
  `/userinfo` for an access token.

Not done: other connectors, refresh tokens, the approval screen, the gRPC API, Dex's storage (what it keeps is in
memory, not in the `auth` namespace's custom resources), key rotation.
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import ctypes.util
import hashlib
import html
import json
import logging
import os
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote_plus, urlencode, urlsplit

import yaml

from kfctl_testbed.httpserve import http_server
from kfctl_testbed.jws import JSON, JwtError, SigningKey, b64url, verify

log = logging.getLogger("dex-standin")

STANDS_IN_FOR = (
    "Dex v2.44.0 (ghcr.io/dexidp/dex:v2.44.0; the Go module proxy cannot serve github.com/dexidp/dex@v2.44.0)"
)
CODE_SECONDS = 600
ID_TOKEN_SECONDS_DEFAULT = 24 * 3600  # Dex's expiry.idTokens default
CONNECTOR_ID = "local"
INVALID_LOGIN = "Invalid Email Address and password."


class ConfigError(Exception):
    """The config file (or the environment it names) lacks what Dex would need; the message names the field."""


@dataclass(frozen=True)
class User:
    email: str
    bcrypt_hash: str
    username: str
    user_id: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Client:
    id: str
    secret: str
    redirect_uris: tuple[str, ...]
    name: str
    public: bool = False


@dataclass(frozen=True)
class DexConfig:
    issuer: str
    http_address: str
    users: tuple[User, ...]
    clients: tuple[Client, ...]
    skip_approval: bool
    id_token_seconds: int

    @property
    def path(self) -> str:
        return urlsplit(self.issuer).path.rstrip("/")


def _from_env(entry: JSON, key: str, env: dict[str, str], where: str) -> str:
    """`key` itself, or the variable `<key>Env` names (Dex's idEnv, secretEnv, hashFromEnv)."""
    env_key = "hashFromEnv" if key == "hash" else f"{key}Env"
    if entry.get(env_key):
        name = str(entry[env_key])
        if name not in env:
            raise ConfigError(f"{where}.{env_key}: the environment has no {name}")
        return env[name]
    if key in entry:
        return str(entry[key])
    raise ConfigError(f"{where}: neither {key} nor {env_key} is set")


def _bcrypt_hash(value: str, where: str) -> str:
    if value.startswith("$2"):
        return value
    try:  # Dex also takes the hash base64-encoded
        decoded = base64.b64decode(value, validate=True).decode()
    except ValueError as e:
        raise ConfigError(f"{where}: not a bcrypt hash") from e
    if not decoded.startswith("$2"):
        raise ConfigError(f"{where}: not a bcrypt hash")
    return decoded


def load_config(text: str, env: dict[str, str]) -> DexConfig:
    """Dex's config file (YAML), with the environment its *Env fields name."""
    raw = yaml.safe_load(text) or {}
    if not isinstance(raw, dict) or not raw.get("issuer"):
        raise ConfigError("issuer: missing")
    if not raw.get("enablePasswordDB"):
        raise ConfigError("enablePasswordDB: not true; the stand-in has only the password DB connector")
    users = []
    for i, entry in enumerate(raw.get("staticPasswords") or []):
        where = f"staticPasswords[{i}]"
        if not entry.get("email"):
            raise ConfigError(f"{where}.email: missing")
        users.append(
            User(
                email=str(entry["email"]),
                bcrypt_hash=_bcrypt_hash(_from_env(entry, "hash", env, where), f"{where}.hash"),
                username=str(entry.get("username", "")),
                user_id=str(entry.get("userID", "")),
                groups=tuple(str(g) for g in entry.get("groups") or []),
            )
        )
    clients = []
    for i, entry in enumerate(raw.get("staticClients") or []):
        where = f"staticClients[{i}]"
        public = bool(entry.get("public"))
        clients.append(
            Client(
                id=_from_env(entry, "id", env, where),
                secret="" if public else _from_env(entry, "secret", env, where),
                redirect_uris=tuple(str(u) for u in entry.get("redirectURIs") or []),
                name=str(entry.get("name", "")),
                public=public,
            )
        )
    expiry = (raw.get("expiry") or {}).get("idTokens")
    return DexConfig(
        issuer=str(raw["issuer"]).rstrip("/"),
        http_address=str((raw.get("web") or {}).get("http") or "0.0.0.0:5556"),
        users=tuple(users),
        clients=tuple(clients),
        skip_approval=bool((raw.get("oauth2") or {}).get("skipApprovalScreen")),
        id_token_seconds=_duration_seconds(expiry) if expiry else ID_TOKEN_SECONDS_DEFAULT,
    )


def _duration_seconds(text: str) -> int:
    units = {"h": 3600, "m": 60, "s": 1}
    if text and text[-1] in units and text[:-1].isdigit():
        return int(text[:-1]) * units[text[-1]]
    raise ConfigError(f"expiry.idTokens: {text!r} is not a duration like 24h")


# --- bcrypt through the system's libcrypt (the Python standard library has no bcrypt) -------------------------

_libcrypt_lock = threading.Lock()


def crypt(password: str, setting: str) -> str | None:
    """crypt(3): the hash of `password` with the algorithm, cost and salt of `setting` (a hash, or `$2b$<cost>$<salt>`);
    None when libcrypt refuses the setting."""
    name = ctypes.util.find_library("crypt")
    if name is None:
        raise RuntimeError("no libcrypt on this system: cannot check bcrypt hashes")
    lib = ctypes.CDLL(name)
    lib.crypt.restype = ctypes.c_char_p
    lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    with _libcrypt_lock:  # crypt() returns a static buffer
        result = lib.crypt(password.encode(), setting.encode())
    return result.decode() if isinstance(result, bytes) and not result.startswith(b"*") else None


def bcrypt_matches(password: str, bcrypt_hash: str) -> bool:
    """Whether `password` hashes to `bcrypt_hash` (libxcrypt's crypt(3) knows $2a$/$2b$/$2y$)."""
    result = crypt(password, bcrypt_hash)
    return result is not None and secrets.compare_digest(result, bcrypt_hash)


def dex_subject(user_id: str, connector_id: str = CONNECTOR_ID) -> str:
    """Dex's `sub`: the protobuf message {1: user ID, 2: connector ID}, base64url without padding."""

    def field_bytes(number: int, value: str) -> bytes:
        data = value.encode()
        return bytes([number << 3 | 2, len(data)]) + data

    return b64url(field_bytes(1, user_id) + field_bytes(2, connector_id))


# --- the provider -----------------------------------------------------------------------------------------


@dataclass
class AuthRequest:
    client: Client
    redirect_uri: str
    scopes: tuple[str, ...]
    state: str
    nonce: str
    code_challenge: str
    code_challenge_method: str
    user: User | None = None


@dataclass
class Code:
    request: AuthRequest
    user: User
    expires: float


@dataclass
class Answer:
    """An HTTP answer: status, headers, body."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @classmethod
    def json(cls, status: int, value: JSON) -> Answer:
        return cls(status, {"Content-Type": "application/json"}, json.dumps(value).encode())

    @classmethod
    def redirect(cls, location: str, status: int = 302) -> Answer:
        return cls(status, {"Location": location})

    @classmethod
    def page(cls, status: int, title: str, content: str) -> Answer:
        text = f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title></head><body>{content}</body></html>"
        return cls(status, {"Content-Type": "text/html; charset=utf-8"}, text.encode())


class Provider:
    """Dex's login path over one config; `handle` answers a request (method, path with query, headers, body)."""

    def __init__(self, config: DexConfig, key: SigningKey | None = None) -> None:
        self.config = config
        self.key = key or SigningKey.generate()
        self.requests: dict[str, AuthRequest] = {}
        self.codes: dict[str, Code] = {}
        self.lock = threading.Lock()

    def handle(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Answer:
        url = urlsplit(target)
        prefix = self.config.path
        if not url.path.startswith(prefix + "/"):
            return Answer(404, body=b"404 page not found\n")
        path = url.path[len(prefix) :]
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        form = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()} if method == "POST" else {}
        if path == "/.well-known/openid-configuration":
            return Answer.json(200, self.discovery())
        if path == "/keys":
            return Answer.json(200, self.key.jwks())
        if path == "/healthz":
            return Answer(200, {"Content-Type": "text/plain"}, b"Health check passed")
        if path == "/auth":
            return self.authorize(query)
        if path == f"/auth/{CONNECTOR_ID}/login":
            return self.login(method, query, form)
        if path == "/approval":
            return self.approval(query)
        if path == "/token" and method == "POST":
            return self.token(form, headers)
        if path == "/userinfo":
            return self.userinfo(headers)
        return Answer(404, body=b"404 page not found\n")

    def discovery(self) -> JSON:
        issuer = self.config.issuer
        return {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/auth",
            "token_endpoint": f"{issuer}/token",
            "jwks_uri": f"{issuer}/keys",
            "userinfo_endpoint": f"{issuer}/userinfo",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256", "plain"],
            "scopes_supported": ["openid", "email", "groups", "profile", "offline_access"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "grant_types_supported": ["authorization_code"],
            "claims_supported": ["iss", "sub", "aud", "iat", "exp", "email", "email_verified", "groups", "name"],
        }

    def client(self, client_id: str) -> Client | None:
        return next((c for c in self.config.clients if c.id == client_id), None)

    def authorize(self, query: dict[str, str]) -> Answer:
        client = self.client(query.get("client_id", ""))
        if client is None:
            return Answer.page(400, "Bad Request", f"Invalid client_id ({html.escape(query.get('client_id', ''))}).")
        redirect_uri = query.get("redirect_uri", "")
        if redirect_uri not in client.redirect_uris:
            return Answer.page(400, "Bad Request", f"Unregistered redirect_uri ({html.escape(redirect_uri)}).")
        scopes = tuple(query.get("scope", "").split())
        if query.get("response_type") != "code":
            return Answer.page(400, "Bad Request", "Unsupported response type (only code).")
        if "openid" not in scopes:
            return Answer.page(400, "Bad Request", 'Missing required scope(s) ["openid"].')
        method = query.get("code_challenge_method", "plain" if query.get("code_challenge") else "")
        if method not in ("", "plain", "S256"):
            return Answer.page(400, "Bad Request", f"Unsupported PKCE challenge method ({html.escape(method)}).")
        request_id = secrets.token_urlsafe(18)
        with self.lock:
            self.requests[request_id] = AuthRequest(
                client=client,
                redirect_uri=redirect_uri,
                scopes=scopes,
                state=query.get("state", ""),
                nonce=query.get("nonce", ""),
                code_challenge=query.get("code_challenge", ""),
                code_challenge_method=method,
            )
        return Answer.redirect(
            f"{self.config.path}/auth/{CONNECTOR_ID}/login?" + urlencode({"back": "", "state": request_id})
        )

    def login_form(self, request_id: str, login: str, invalid: bool) -> Answer:
        action = html.escape(
            f"{self.config.path}/auth/{CONNECTOR_ID}/login?" + urlencode({"back": "", "state": request_id})
        )
        error = f'<div id="login-error" class="dex-error-box">{INVALID_LOGIN}</div>' if invalid else ""
        content = (
            f"<h2>Log in to Your Account</h2>{error}"
            f'<form method="post" action="{action}">'
            f'<label for="login">Email Address</label><input id="login" name="login" value="{html.escape(login)}">'
            '<label for="password">Password</label><input id="password" name="password" type="password">'
            '<button id="submit-login" type="submit">Login</button></form>'
        )
        return Answer.page(200, "dex", content)

    def login(self, method: str, query: dict[str, str], form: dict[str, str]) -> Answer:
        request_id = query.get("state", "")
        with self.lock:
            request = self.requests.get(request_id)
        if request is None:
            return Answer.page(400, "Bad Request", "Invalid or expired login request (state).")
        if method != "POST":
            return self.login_form(request_id, "", invalid=False)
        login, password = form.get("login", ""), form.get("password", "")
        user = next((u for u in self.config.users if u.email.lower() == login.lower()), None)
        if user is None or not bcrypt_matches(password, user.bcrypt_hash):
            log.info("login failed for %r", login)
            return self.login_form(request_id, login, invalid=True)
        log.info("login succeeded for %s", user.email)
        with self.lock:
            request.user = user
        return Answer.redirect(f"{self.config.path}/approval?" + urlencode({"req": request_id}), status=303)

    def approval(self, query: dict[str, str]) -> Answer:
        with self.lock:
            request = self.requests.get(query.get("req", ""))
            if request is None or request.user is None:
                return Answer.page(400, "Bad Request", "Invalid or unauthenticated login request.")
            if not self.config.skip_approval:
                return Answer.page(501, "Not Implemented", "The stand-in has no approval screen (skipApprovalScreen).")
            del self.requests[query["req"]]
            code = secrets.token_urlsafe(18)
            self.codes[code] = Code(request, request.user, time.time() + CODE_SECONDS)
        separator = "&" if "?" in request.redirect_uri else "?"
        params = {"code": code, **({"state": request.state} if request.state else {})}
        return Answer.redirect(request.redirect_uri + separator + urlencode(params), status=303)

    def authenticate_client(self, form: dict[str, str], headers: dict[str, str]) -> Client | None:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("basic "):
            try:
                client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
            except ValueError:
                return None
            client_id, secret = unquote_plus(client_id), unquote_plus(secret)
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        client = self.client(client_id)
        if client is None or not (client.public or secrets.compare_digest(client.secret, secret)):
            return None
        return client

    def token(self, form: dict[str, str], headers: dict[str, str]) -> Answer:
        client = self.authenticate_client(form, headers)
        if client is None:
            return Answer.json(401, {"error": "invalid_client", "error_description": "Invalid client credentials."})
        if form.get("grant_type") != "authorization_code":
            return Answer.json(
                400, {"error": "unsupported_grant_type", "error_description": form.get("grant_type", "")}
            )
        with self.lock:
            code = self.codes.pop(form.get("code", ""), None)
        invalid = {"error": "invalid_grant", "error_description": "Invalid or expired code parameter."}
        if code is None or code.expires < time.time() or code.request.client.id != client.id:
            return Answer.json(400, invalid)
        if form.get("redirect_uri", "") != code.request.redirect_uri:
            return Answer.json(400, {"error": "invalid_request", "error_description": "redirect_uri did not match."})
        if code.request.code_challenge and not _pkce_ok(code.request, form.get("code_verifier", "")):
            return Answer.json(400, {"error": "invalid_grant", "error_description": "Invalid code_verifier."})
        claims = self.claims(code.user, code.request)
        id_token = self.key.sign(claims)
        access_token = self.key.sign({k: v for k, v in claims.items() if k != "nonce"})
        return Answer.json(
            200,
            {
                "access_token": access_token,
                "token_type": "bearer",
                "expires_in": self.config.id_token_seconds,
                "id_token": id_token,
            },
        )

    def claims(self, user: User, request: AuthRequest) -> JSON:
        now = int(time.time())
        claims: JSON = {
            "iss": self.config.issuer,
            "sub": dex_subject(user.user_id),
            "aud": request.client.id,
            "exp": now + self.config.id_token_seconds,
            "iat": now,
        }
        if request.nonce:
            claims["nonce"] = request.nonce
        if "email" in request.scopes:
            claims.update(email=user.email, email_verified=True)
        if "groups" in request.scopes and user.groups:
            claims["groups"] = list(user.groups)
        if "profile" in request.scopes:
            claims["name"] = user.username
        return claims

    def userinfo(self, headers: dict[str, str]) -> Answer:
        auth = headers.get("authorization", "")
        if not auth.lower().startswith("bearer "):
            return Answer.json(401, {"error": "invalid_token"})
        try:
            claims = verify(auth[7:], self.key.jwks(), issuer=self.config.issuer, audiences=[])
        except JwtError as e:
            return Answer.json(401, {"error": "invalid_token", "error_description": str(e)})
        return Answer.json(200, {k: v for k, v in claims.items() if k not in ("aud", "exp", "iat", "nonce")})


def _pkce_ok(request: AuthRequest, verifier: str) -> bool:
    if request.code_challenge_method == "S256":
        computed = b64url(hashlib.sha256(verifier.encode()).digest())
    else:
        computed = verifier
    return bool(verifier) and secrets.compare_digest(computed, request.code_challenge)


# --- the server -------------------------------------------------------------------------------------------


def make_server(provider: Provider, address: tuple[str, int]) -> ThreadingHTTPServer:
    def handle(
        method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        answer = provider.handle(method, target, headers, body)
        log.info("%s %s → %d", method, target.split("?", 1)[0], answer.status)
        return answer.status, list(answer.headers.items()), answer.body

    return http_server(address, handle)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["serve"], help="as Dex's `dex serve <config>`")
    parser.add_argument("config", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    log.warning("STAND-IN for %s: an OIDC provider with Dex's password login, not Dex", STANDS_IN_FOR)
    try:
        config = load_config(args.config.read_text(), dict(os.environ))
    except (OSError, ConfigError, yaml.YAMLError) as e:
        log.error("config %s: %s", args.config, e)
        return 1
    host, _, port = config.http_address.rpartition(":")
    server = make_server(Provider(config), (host or "0.0.0.0", int(port)))  # noqa: S104 (the pod's own loopback-only netns)
    log.info(
        "issuer %s, %d users, %d clients, listening on %s",
        config.issuer,
        len(config.users),
        len(config.clients),
        config.http_address,
    )
    server.serve_forever()  # until SIGTERM, as the runtime stops a container
    return 0


if __name__ == "__main__":
    sys.exit(main())
