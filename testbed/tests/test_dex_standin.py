"""The Dex stand-in's login path, request by request, and its config errors (no sockets: Provider.handle)."""

from __future__ import annotations

import base64
import hashlib
import json
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from kfctl_testbed import jws
from kfctl_testbed.dex_standin import INVALID_LOGIN, ConfigError, Provider, crypt, dex_subject, load_config

PASSWORD = "correct horse"
HASH = crypt(PASSWORD, "$2b$04$abcdefghijklmnopqrstuu")
ISSUER = "http://dex.auth.svc.cluster.local:5556/dex"
CONFIG = f"""
issuer: {ISSUER}
web: {{http: 0.0.0.0:5556}}
oauth2: {{skipApprovalScreen: true}}
enablePasswordDB: true
staticPasswords:
- {{email: user@example.com, hashFromEnv: DEX_USER_PASSWORD, username: user, userID: "15841185641784"}}
staticClients:
- {{idEnv: OIDC_CLIENT_ID, secretEnv: OIDC_CLIENT_SECRET, redirectURIs: ["/oauth2/callback"], name: Login}}
"""
ENV = {"DEX_USER_PASSWORD": str(HASH), "OIDC_CLIENT_ID": "kubeflow-oidc-authservice", "OIDC_CLIENT_SECRET": "s3cret"}
VERIFIER = "v" * 50
CHALLENGE = jws.b64url(hashlib.sha256(VERIFIER.encode()).digest())
KEY = jws.SigningKey.generate()  # one for the module: RSA key generation is the slow part


@pytest.fixture
def dex() -> Provider:
    return Provider(load_config(CONFIG, ENV), KEY)


def get(dex: Provider, target: str) -> tuple[int, dict[str, str], bytes]:
    answer = dex.handle("GET", target, {}, b"")
    return answer.status, answer.headers, answer.body


def post(
    dex: Provider, target: str, form: dict[str, str], headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    answer = dex.handle("POST", target, headers or {}, urlencode(form).encode())
    return answer.status, answer.headers, answer.body


def start(dex: Provider, **extra: str) -> str:
    """/dex/auth as oauth2-proxy sends it → the login form's URL."""
    query = {
        "client_id": "kubeflow-oidc-authservice",
        "redirect_uri": "/oauth2/callback",
        "response_type": "code",
        "scope": "profile email groups openid",
        "state": "xyz",
        "code_challenge": CHALLENGE,
        "code_challenge_method": "S256",
        **extra,
    }
    status, headers, _ = get(dex, "/dex/auth?" + urlencode(query))
    assert status == 302
    assert headers["Location"].startswith("/dex/auth/local/login?")
    return headers["Location"]


def login(dex: Provider, password: str = PASSWORD) -> str:
    """Through the form and the approval → the code the callback gets."""
    form_url = start(dex)
    status, headers, _ = post(dex, form_url, {"login": "user@example.com", "password": password})
    assert status == 303
    status, headers, _ = get(dex, headers["Location"])
    assert status == 303
    location = urlsplit(headers["Location"])
    assert location.path == "/oauth2/callback"
    query = parse_qs(location.query)
    assert query["state"] == ["xyz"]
    return query["code"][0]


def basic(client_id: str, secret: str) -> dict[str, str]:
    return {"authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


TOKEN_FORM = {"grant_type": "authorization_code", "redirect_uri": "/oauth2/callback", "code_verifier": VERIFIER}


def test_discovery_names_the_issuer_and_its_endpoints(dex: Provider) -> None:
    status, _, body = get(dex, "/dex/.well-known/openid-configuration")
    assert status == 200
    document = json.loads(body)
    assert (document["issuer"], document["jwks_uri"], document["token_endpoint"]) == (
        ISSUER,
        f"{ISSUER}/keys",
        f"{ISSUER}/token",
    )
    assert get(dex, "/dex/healthz")[0] == 200


def test_the_login_form_then_a_code_then_tokens_the_keys_verify(dex: Provider) -> None:
    status, _, form = get(dex, start(dex))
    assert status == 200
    assert b'name="login"' in form
    assert b'name="password"' in form
    code = login(dex)
    status, _, body = post(
        dex, "/dex/token", {**TOKEN_FORM, "code": code}, basic("kubeflow-oidc-authservice", "s3cret")
    )
    assert status == 200, body
    tokens = json.loads(body)
    keys = json.loads(get(dex, "/dex/keys")[2])
    claims = jws.verify(tokens["id_token"], keys, issuer=ISSUER, audiences=["kubeflow-oidc-authservice"])
    assert {k: claims[k] for k in ("iss", "sub", "aud", "email", "email_verified", "name")} == {
        "iss": ISSUER,
        "sub": dex_subject("15841185641784"),
        "aud": "kubeflow-oidc-authservice",
        "email": "user@example.com",
        "email_verified": True,
        "name": "user",
    }
    # Dex's sub for that user and the password DB connector, as real Dex v2 computes it
    assert claims["sub"] == "Cg4xNTg0MTE4NTY0MTc4NBIFbG9jYWw"


@pytest.mark.parametrize(
    ("form", "headers", "status", "error"),
    [
        pytest.param({}, basic("kubeflow-oidc-authservice", "wrong"), 401, "invalid_client", id="wrong-client-secret"),
        pytest.param({}, basic("someone-else", "s3cret"), 401, "invalid_client", id="unknown-client"),
        pytest.param({"code_verifier": "other"}, None, 400, "invalid_grant", id="pkce-verifier-mismatch"),
        pytest.param({"redirect_uri": "/elsewhere"}, None, 400, "invalid_request", id="other-redirect-uri"),
        pytest.param({"grant_type": "password"}, None, 400, "unsupported_grant_type", id="other-grant"),
    ],
)
def test_token_request_refusals(
    dex: Provider, form: dict[str, str], headers: dict[str, str] | None, status: int, error: str
) -> None:
    code = login(dex)
    client = headers or basic("kubeflow-oidc-authservice", "s3cret")
    got = post(dex, "/dex/token", {**TOKEN_FORM, "code": code, **form}, client)
    assert (got[0], json.loads(got[2])["error"]) == (status, error)


def test_a_code_is_redeemed_once_and_form_client_auth_works(dex: Provider) -> None:
    code = login(dex)
    form = {**TOKEN_FORM, "code": code, "client_id": "kubeflow-oidc-authservice", "client_secret": "s3cret"}
    assert post(dex, "/dex/token", form)[0] == 200
    again = post(dex, "/dex/token", form)
    assert (again[0], json.loads(again[2])["error"]) == (400, "invalid_grant")


def test_a_wrong_password_shows_the_form_again_saying_so(dex: Provider) -> None:
    form_url = start(dex)
    status, headers, body = post(dex, form_url, {"login": "user@example.com", "password": "nope"})
    assert status == 200
    assert "Location" not in headers
    assert INVALID_LOGIN.encode() in body
    status, _, body = post(dex, form_url, {"login": "nobody@example.com", "password": PASSWORD})
    assert (status, INVALID_LOGIN.encode() in body) == (200, True)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        pytest.param({"client_id": "other"}, b"Invalid client_id", id="unknown-client"),
        pytest.param({"redirect_uri": "http://evil/cb"}, b"Unregistered redirect_uri", id="unregistered-redirect"),
        pytest.param({"scope": "email"}, b"Missing required scope", id="no-openid-scope"),
        pytest.param({"response_type": "token"}, b"Unsupported response type", id="implicit-flow"),
    ],
)
def test_authorization_request_refusals(dex: Provider, query: dict[str, str], message: bytes) -> None:
    base = {"client_id": "kubeflow-oidc-authservice", "redirect_uri": "/oauth2/callback", "response_type": "code"}
    status, _, body = get(dex, "/dex/auth?" + urlencode({**base, "scope": "openid", **query}))
    assert (status, message in body) == (400, True)


@pytest.mark.parametrize(
    ("config", "env", "message"),
    [
        pytest.param("enablePasswordDB: true", {}, "issuer: missing", id="no-issuer"),
        pytest.param(
            f"issuer: {ISSUER}",
            {},
            "enablePasswordDB: not true; the stand-in has only the password DB connector",
            id="no-password-db",
        ),
        pytest.param(
            CONFIG, {**ENV, "DEX_USER_PASSWORD": ""}, "staticPasswords[0].hash: not a bcrypt hash", id="empty-hash"
        ),
        pytest.param(
            CONFIG,
            {k: v for k, v in ENV.items() if k != "OIDC_CLIENT_SECRET"},
            "staticClients[0].secretEnv: the environment has no OIDC_CLIENT_SECRET",
            id="secret-env-unset",
        ),
    ],
)
def test_config_errors_name_the_field(config: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(config, env)
    assert str(raised.value) == message
