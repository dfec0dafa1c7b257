"""The Istio ingress gateway stand-in: request + installed objects → route and verdict (tables).

The objects are shaped as Kubeflow manifests v1.11.0 install them (Gateway kubeflow/kubeflow-gateway, the
VirtualServices of Dex, oauth2-proxy and the central dashboard, the AuthorizationPolicies and RequestAuthentication
of common/oauth2-proxy/components/istio-external-auth, the mesh config's envoyExtAuthzHttp provider). The issuer is
the Dex stand-in itself (its discovery and keys are what the gateway fetches); oauth2-proxy is a test double that
answers ext_authz checks as oauth2-proxy does for Kubeflow (a session cookie → 200 with the user's Bearer token;
none → a redirect to its sign-in start).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kfctl_testbed import istio_gateway, jws
from kfctl_testbed.dex_standin import Provider, crypt, load_config
from kfctl_testbed.dex_standin import make_server as dex_server
from kfctl_testbed.istio_authz import Workload, applicable
from kfctl_testbed.istio_routes import Forward, Request, Respond, http_ports, listen_ports, route, selected_gateways

ISSUER = "http://dex.auth.svc.cluster.local:5556/dex"
DEX_KEY = jws.SigningKey.generate()
OTHER_KEY = jws.SigningKey.generate()
POD_LABELS = {"app": "istio-ingressgateway", "istio": "ingressgateway"}


def meta(name: str, namespace: str, created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "creationTimestamp": created}


GATEWAYS = [
    {
        "metadata": meta("kubeflow-gateway", "kubeflow"),
        "spec": {
            "selector": {"istio": "ingressgateway"},
            "servers": [{"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}],
        },
    },
    {
        "metadata": meta("cluster-local-gateway", "knative-serving"),
        "spec": {
            "selector": {"app": "cluster-local-gateway"},
            "servers": [{"port": {"number": 8081, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}],
        },
    },
]


def vs(
    name: str, namespace: str, created: str, http: list[dict[str, Any]], gateway: str = "kubeflow/kubeflow-gateway"
) -> dict[str, Any]:
    return {"metadata": meta(name, namespace, created), "spec": {"gateways": [gateway], "hosts": ["*"], "http": http}}


def to(host: str, port: int | None = None) -> list[dict[str, Any]]:
    return [{"destination": {"host": host, **({"port": {"number": port}} if port else {})}}]


VIRTUAL_SERVICES = [
    # the oldest: its catch-all must still come after every other route
    vs(
        "centraldashboard",
        "kubeflow",
        "2026-01-01T00:00:00Z",
        [
            {
                "match": [{"uri": {"prefix": "/"}}],
                "rewrite": {"uri": "/"},
                "route": to("centraldashboard.kubeflow.svc.cluster.local", 80),
            }
        ],
    ),
    vs(
        "dex",
        "auth",
        "2026-01-01T00:00:01Z",
        [{"match": [{"uri": {"prefix": "/dex/"}}], "route": to("dex.auth.svc.cluster.local", 5556)}],
    ),
    vs(
        "oauth2-proxy",
        "oauth2-proxy",
        "2026-01-01T00:00:02Z",
        [{"match": [{"uri": {"prefix": "/oauth2/"}}], "route": to("oauth2-proxy.oauth2-proxy.svc.cluster.local", 80)}],
    ),
    vs(
        "jupyter-web-app",
        "kubeflow",
        "2026-01-01T00:00:03Z",
        [
            {
                "match": [{"uri": {"prefix": "/jupyter/"}}],
                "rewrite": {"uri": "/"},
                "headers": {"request": {"set": {"X-Script-Name": "/jupyter"}, "remove": ["x-debug"]}},
                "route": to("jupyter-web-app-service"),
            }
        ],
    ),
    vs(
        "moved",
        "kubeflow",
        "2026-01-01T00:00:04Z",
        [{"match": [{"uri": {"exact": "/old"}}], "redirect": {"uri": "/new", "redirectCode": 302}}],
    ),
    vs(
        "teapot",
        "kubeflow",
        "2026-01-01T00:00:05Z",
        [
            {
                "match": [{"uri": {"prefix": "/tea"}, "method": {"exact": "POST"}}],
                "directResponse": {"status": 418, "body": {"string": "short and stout"}},
            }
        ],
    ),
    vs(
        "knative",
        "knative-serving",
        "2026-01-01T00:00:06Z",
        [{"match": [{"uri": {"prefix": "/knative/"}}], "route": to("activator")}],
        gateway="knative-serving/cluster-local-gateway",
    ),
]


def request(path: str, method: str = "GET", headers: dict[str, str] | None = None) -> Request:
    return Request(method, path, "localhost", {"host": "localhost:8080", **(headers or {})}, 80)


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        pytest.param("GET", "/", ("centraldashboard.kubeflow.svc.cluster.local", 80, "/"), id="catch-all"),
        pytest.param(
            "GET",
            "/dex/auth?x=1",
            ("dex.auth.svc.cluster.local", 5556, "/dex/auth?x=1"),
            id="prefix-before-an-older-catch-all",
        ),
        pytest.param(
            "GET", "/oauth2/start", ("oauth2-proxy.oauth2-proxy.svc.cluster.local", 80, "/oauth2/start"), id="oauth2"
        ),
        pytest.param(
            "GET",
            "/jupyter/api/config",
            ("jupyter-web-app-service.kubeflow.svc.cluster.local", None, "/api/config"),
            id="rewrite-and-short-host",
        ),
        pytest.param(
            "GET", "/jupyterx", ("centraldashboard.kubeflow.svc.cluster.local", 80, "/jupyterx"), id="prefix-is-literal"
        ),
        pytest.param(
            "GET",
            "/knative/x",
            ("centraldashboard.kubeflow.svc.cluster.local", 80, "/knative/x"),
            id="other-gateways-route-not-here",
        ),
        pytest.param("GET", "/old", (302, "http://localhost/new"), id="redirect"),
        pytest.param("POST", "/teapot", (418, "short and stout"), id="direct-response-by-method"),
        pytest.param(
            "GET",
            "/teapot",
            ("centraldashboard.kubeflow.svc.cluster.local", 80, "/teapot"),
            id="method-mismatch-falls-through",
        ),
    ],
)
def test_routes(method: str, path: str, expected: tuple[Any, ...]) -> None:
    decision = route(request(path, method), VIRTUAL_SERVICES, selected_gateways(GATEWAYS, POD_LABELS))
    if isinstance(decision, Forward):
        assert (decision.host, decision.port, decision.target) == expected
    else:
        assert isinstance(decision, Respond)
        assert (decision.status, decision.headers.get("location") or decision.body) == expected


def test_route_headers_and_no_route() -> None:
    gateways = selected_gateways(GATEWAYS, POD_LABELS)
    decision = route(request("/jupyter/"), VIRTUAL_SERVICES, gateways)
    assert isinstance(decision, Forward)
    assert (decision.set_headers, decision.remove_headers, decision.what) == (
        {"x-script-name": "/jupyter"},
        ("x-debug",),
        "VirtualService kubeflow/jupyter-web-app http[0]",
    )
    nothing = route(request("/"), [v for v in VIRTUAL_SERVICES if v["metadata"]["name"] == "dex"], gateways)
    assert isinstance(nothing, Respond)
    assert nothing.status == 404


@pytest.mark.parametrize(
    ("target_port", "container_ports", "expected"),
    [
        pytest.param(8080, [], {8080: 80}, id="numbered-target-port"),
        pytest.param("http2", [{"name": "http2", "containerPort": 8081}], {8081: 80}, id="named-target-port"),
        pytest.param(None, [], {80: 80}, id="no-service-port-listens-as-is"),
    ],
)
def test_listen_ports(target_port: Any, container_ports: list[dict[str, Any]], expected: dict[int, int]) -> None:
    pod = {
        "metadata": {"namespace": "istio-system", "labels": POD_LABELS},
        "spec": {"containers": [{"ports": container_ports}]},
    }
    ports = [{"port": 15021, "targetPort": 15021}] + ([{"port": 80, "targetPort": target_port}] if target_port else [])
    service = {
        "metadata": meta("istio-ingressgateway", "istio-system"),
        "spec": {"selector": POD_LABELS, "ports": ports},
    }
    assert listen_ports(http_ports(selected_gateways(GATEWAYS, POD_LABELS)), [service], pod) == expected


# --- the whole pipeline against local servers -----------------------------------------------------------------

MESH = {
    "rootNamespace": "istio-system",
    "extensionProviders": [
        {
            "name": "oauth2-proxy",
            "envoyExtAuthzHttp": {
                "service": "oauth2-proxy.oauth2-proxy.svc.cluster.local",
                "port": 80,
                "includeRequestHeadersInCheck": ["authorization", "cookie"],
                "headersToUpstreamOnAllow": ["authorization", "path", "x-auth-request-email"],
                "headersToDownstreamOnDeny": ["content-type", "set-cookie"],
            },
        }
    ],
}
NOT_LOGIN_PATHS = {"operation": {"notPaths": ["/dex/*", "/dex/**", "/oauth2/*"]}}
POLICIES = [
    {"metadata": meta("global-deny-all", "istio-system"), "spec": {}},
    {
        "metadata": meta("istio-ingressgateway", "istio-system"),
        "spec": {"action": "ALLOW", "selector": {"matchLabels": POD_LABELS}, "rules": [{}]},
    },
    {
        "metadata": meta("istio-ingressgateway-oauth2-proxy", "istio-system"),
        "spec": {
            "action": "CUSTOM",
            "provider": {"name": "oauth2-proxy"},
            "selector": {"matchLabels": {"app": "istio-ingressgateway"}},
            "rules": [
                {"when": [{"key": "request.headers[authorization]", "notValues": ["*"]}], "to": [NOT_LOGIN_PATHS]}
            ],
        },
    },
    {
        "metadata": meta("istio-ingressgateway-require-jwt", "istio-system"),
        "spec": {
            "action": "DENY",
            "selector": {"matchLabels": {"app": "istio-ingressgateway"}},
            "rules": [{"from": [{"source": {"notRequestPrincipals": ["*"]}}], "to": [NOT_LOGIN_PATHS]}],
        },
    },
    # another workload's policy: never applies to the gateway
    {"metadata": meta("deny-everything-there", "kubeflow"), "spec": {"action": "DENY", "rules": [{}]}},
]
REQUEST_AUTHENTICATIONS = [
    {
        "metadata": meta("dex-jwt", "istio-system"),
        "spec": {
            "selector": {"matchLabels": {"app": "istio-ingressgateway"}},
            "jwtRules": [
                {
                    "issuer": ISSUER,
                    "forwardOriginalToken": True,
                    "outputClaimToHeaders": [
                        {"header": "kubeflow-userid", "claim": "email"},
                        {"header": "kubeflow-groups", "claim": "groups"},
                    ],
                    "fromHeaders": [{"name": "Authorization", "prefix": "Bearer "}],
                }
            ],
        },
    }
]
WORKLOAD = Workload("istio-system", POD_LABELS, "istio-system", 8080)


def token(key: jws.SigningKey = DEX_KEY, **claims: Any) -> str:
    base = {
        "iss": ISSUER,
        "sub": "Cg4x",
        "aud": "kubeflow-oidc-authservice",
        "exp": 4102444800,
        "email": "user@example.com",
        "groups": ["a", "b"],
    }
    return key.sign({**base, **claims})


class Recorder(BaseHTTPRequestHandler):
    """Base of the doubles: records each request (method, path, headers) on the server."""

    protocol_version = "HTTP/1.1"

    def record(self) -> dict[str, Any]:
        seen = {"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}
        self.server.seen.append(seen)  # type: ignore[attr-defined]
        return seen

    def reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class OAuth2ProxyDouble(Recorder):
    """oauth2-proxy as an ext_authz server for Kubeflow: a session → 200 + the user's ID token; none → its login."""

    def do_GET(self) -> None:
        seen = self.record()
        cookie = seen["headers"].get("cookie", "")
        if "session=ok" in cookie:
            self.reply(
                200,
                {"Authorization": f"Bearer {token()}", "X-Auth-Request-Email": "user@example.com", "X-Other": "no"},
                b"",
            )
        elif "session=forged" in cookie:
            self.reply(200, {"Authorization": f"Bearer {token(OTHER_KEY)}"}, b"")
        else:
            self.reply(
                302, {"Location": f"/oauth2/start?rd={self.path}", "Set-Cookie": "csrf=1", "X-Secret": "no"}, b""
            )

    do_POST = do_GET


class Backend(Recorder):
    def do_GET(self) -> None:
        seen = self.record()
        self.reply(200, {"Content-Type": "application/json"}, json.dumps(seen).encode())

    do_POST = do_GET


def serve(server: ThreadingHTTPServer) -> ThreadingHTTPServer:
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, ThreadingHTTPServer]]:
    password_hash = crypt("p", "$2b$04$abcdefghijklmnopqrstuu")
    dex_config = load_config(
        f"issuer: {ISSUER}\nenablePasswordDB: true\nstaticPasswords: [{{email: u@x, hash: '{password_hash}'}}]\n", {}
    )
    running = {
        "dex.auth.svc.cluster.local:5556": serve(dex_server(Provider(dex_config, DEX_KEY), ("127.0.0.1", 0))),
        "oauth2-proxy.oauth2-proxy.svc.cluster.local:80": serve(
            ThreadingHTTPServer(("127.0.0.1", 0), OAuth2ProxyDouble)
        ),
        "centraldashboard.kubeflow.svc.cluster.local:80": serve(ThreadingHTTPServer(("127.0.0.1", 0), Backend)),
    }
    yield running
    for server in running.values():
        server.shutdown()
        server.server_close()


def gateway(servers: dict[str, ThreadingHTTPServer], down: frozenset[str] = frozenset()) -> istio_gateway.Gateway:
    def dial(host: str, port: int) -> socket.socket:
        key = f"{host}:{port}"
        if key in down or key not in servers:
            raise OSError(f"no process behind {key}")
        return socket.create_connection(("127.0.0.1", servers[key].server_port), timeout=5)

    snapshot = istio_gateway.Snapshot(
        workload=WORKLOAD,
        gateways=selected_gateways(GATEWAYS, POD_LABELS),
        virtual_services=VIRTUAL_SERVICES,
        policies=applicable(POLICIES, WORKLOAD),
        request_authentications=applicable(REQUEST_AUTHENTICATIONS, WORKLOAD),
        services=[],
        mesh=MESH,
    )
    return istio_gateway.Gateway(lambda _port: snapshot, dial)


@pytest.mark.parametrize(
    ("path", "headers", "status", "expected"),
    [
        pytest.param(
            "/",
            {},
            302,
            {"location": "/oauth2/start?rd=/", "set-cookie": "csrf=1"},
            id="no-session-to-oauth2-proxys-login",
        ),
        pytest.param("/dex/healthz", {}, 200, {"body": "Health check passed"}, id="dex-paths-skip-ext-authz-and-jwt"),
        pytest.param(
            "/oauth2/start",
            {},
            302,
            {"location": "/oauth2/start?rd=/oauth2/start"},
            id="oauth2-paths-reach-oauth2-proxy",
        ),
        pytest.param(
            "/",
            {"cookie": "session=ok"},
            200,
            {"kubeflow-userid": "user@example.com", "kubeflow-groups": "a,b"},
            id="session-to-jwt-to-headers",
        ),
        pytest.param(
            "/",
            {"authorization": f"Bearer {token()}"},
            200,
            {"kubeflow-userid": "user@example.com"},
            id="m2m-bearer-skips-ext-authz",
        ),
        pytest.param(
            "/",
            {"authorization": f"Bearer {token()}", "kubeflow-userid": "admin@evil"},
            200,
            {"kubeflow-userid": "user@example.com"},
            id="claims-overwrite-client-headers",
        ),
        pytest.param(
            "/",
            {"authorization": "Bearer not-a-jwt"},
            401,
            {"body": "Jwt is not in the form of Header.Payload.Signature"},
            id="malformed-jwt",
        ),
        pytest.param(
            "/",
            {"authorization": f"Bearer {token(OTHER_KEY)}"},
            401,
            {"body": "Jwks doesn't have key to match kid or alg from Jwt"},
            id="jwt-of-another-key",
        ),
        pytest.param(
            "/",
            {"authorization": f"Bearer {token(iss='https://elsewhere')}"},
            401,
            {"body": "Jwt issuer is not configured"},
            id="jwt-of-another-issuer",
        ),
        pytest.param(
            "/", {"authorization": f"Bearer {token(exp=1000)}"}, 401, {"body": "Jwt is expired"}, id="expired-jwt"
        ),
        pytest.param(
            "/",
            {"cookie": "session=forged"},
            401,
            {"body": "Jwks doesn't have key to match kid or alg from Jwt"},
            id="ext-authz-token-is-verified-too",
        ),
        pytest.param(
            "/",
            {"authorization": "Basic dTpw"},
            403,
            {"body": "RBAC: access denied"},
            id="no-bearer-no-principal-denied",
        ),
    ],
)
def test_login_path_verdicts(
    servers: dict[str, ThreadingHTTPServer], path: str, headers: dict[str, str], status: int, expected: dict[str, str]
) -> None:
    answer = gateway(servers).handle(request(path, headers=headers), b"", 8080)
    assert answer.status == status, (answer.body, answer.what)
    got_headers = {k.lower(): v for k, v in answer.headers}
    for name, value in expected.items():
        if name == "body":
            assert answer.body.decode().startswith(value)
        elif answer.status == 200 and path == "/":  # the backend's echo: what it received
            assert json.loads(answer.body)["headers"].get(name) == value
        else:
            assert got_headers.get(name) == value
    if path == "/" and status == 302:  # an ext_authz denial passes only the headers Envoy passes
        assert "x-secret" not in got_headers


def test_the_check_request_and_what_reaches_the_backend(servers: dict[str, ThreadingHTTPServer]) -> None:
    proxy = servers["oauth2-proxy.oauth2-proxy.svc.cluster.local:80"]
    backend = servers["centraldashboard.kubeflow.svc.cluster.local:80"]
    proxy.seen.clear()  # type: ignore[attr-defined]
    headers = {"cookie": "session=ok; other=1", "accept": "text/html", "x-custom": "kept"}
    answer = gateway(servers).handle(request("/?ns=a", headers=headers), b"", 8080)
    assert answer.status == 200
    check = proxy.seen[-1]  # type: ignore[attr-defined]
    assert (check["method"], check["path"], check["headers"]["cookie"], check["headers"]["host"]) == (
        "GET",
        "/?ns=a",
        "session=ok; other=1",
        "localhost:8080",
    )
    assert "accept" not in check["headers"]  # only includeRequestHeadersInCheck
    received = backend.seen[-1]["headers"]  # type: ignore[attr-defined]
    assert received["authorization"] == f"Bearer {token()}"  # headersToUpstreamOnAllow, kept: forwardOriginalToken
    assert (received["x-auth-request-email"], received["x-custom"], received["x-forwarded-proto"]) == (
        "user@example.com",
        "kept",
        "http",
    )
    assert "x-other" not in received


def test_an_unreachable_provider_is_a_403_and_a_down_backend_a_503(servers: dict[str, ThreadingHTTPServer]) -> None:
    no_proxy = gateway(servers, down=frozenset({"oauth2-proxy.oauth2-proxy.svc.cluster.local:80"}))
    answer = no_proxy.handle(request("/"), b"", 8080)
    assert (answer.status, answer.body) == (403, b"ext_authz oauth2-proxy unreachable")
    no_backend = gateway(servers, down=frozenset({"centraldashboard.kubeflow.svc.cluster.local:80"}))
    answer = no_backend.handle(request("/", headers={"cookie": "session=ok"}), b"", 8080)
    assert (answer.status, answer.body) == (503, b"no healthy upstream")
    assert "centraldashboard.kubeflow.svc.cluster.local:80" in answer.what


class Objects:
    """What take_snapshot reads, as the API server (or the informer's cache) lists it."""

    def __init__(self, collections: dict[str, list[dict[str, Any]]]) -> None:
        self.collections = collections

    def get(self, path: str, **_: Any) -> dict[str, Any] | None:
        return None

    def list(self, path: str, **_: Any) -> list[dict[str, Any]]:
        return self.collections.get(path, [])


def test_a_snapshot_is_what_applies_to_the_gateway_pod_and_the_root_namespaces_mesh_config() -> None:
    mesh_cm = {
        "metadata": meta("istio", "istio-system"),
        "data": {"mesh": "rootNamespace: istio-system\nextensionProviders: []\n"},
    }
    elsewhere = {"metadata": meta("istio", "kubeflow"), "data": {"mesh": "rootNamespace: istio-system\n"}}
    read = Objects(
        {
            f"{istio_gateway.NETWORKING}/gateways": GATEWAYS,
            f"{istio_gateway.NETWORKING}/virtualservices": VIRTUAL_SERVICES,
            f"{istio_gateway.SECURITY}/authorizationpolicies": POLICIES,
            f"{istio_gateway.SECURITY}/requestauthentications": REQUEST_AUTHENTICATIONS,
            "/api/v1/configmaps": [elsewhere, mesh_cm],
        }
    )
    pod = {"metadata": {"namespace": "istio-system", "name": "gw", "labels": POD_LABELS}}
    snap = istio_gateway.take_snapshot(read, pod, 8080)
    assert [g["metadata"]["name"] for g in snap.gateways] == ["kubeflow-gateway"]
    assert [p["metadata"]["name"] for p in snap.policies] == [
        "global-deny-all",
        "istio-ingressgateway",
        "istio-ingressgateway-oauth2-proxy",
        "istio-ingressgateway-require-jwt",
    ]
    assert [r["metadata"]["name"] for r in snap.request_authentications] == ["dex-jwt"]
    assert (snap.mesh, snap.workload) == ({"rootNamespace": "istio-system", "extensionProviders": []}, WORKLOAD)
