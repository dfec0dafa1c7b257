"""`kfctl dashboard` and the login/dashboard checks of `kfctl check`, against the fake cluster and a small HTTP
double on 127.0.0.1 that answers as the way in of upstream's full platform does: the gateway (Envoy's 404 with no
body for no route, 503 "no healthy upstream" for a backend down), oauth2-proxy (/oauth2/start, /oauth2/callback,
the session cookie), Dex (its login form, "Invalid Email Address and password.") and the central dashboard
(/api/workgroup/env-info). The fake cluster's port-forward of the gateway's pod reaches the double.

One row per fault: the exact verdict and message of the check, or the exit code and message of the command.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fakecluster import FakeCluster, obj, served_crd

from kfctl.check.ingress import find_ingress
from kfctl.check.login import dashboard_check, login_check
from kfctl.check.model import InstalledContext
from kfctl.cli import dashboard_cmd, target
from kfctl.cli.main import main
from kfctl.errors import PlanError
from kfctl.k8s.portforward import LocalForward

USER = "user@example.com"
PASSWORD = "Zq3xK9mW2pL7vN4tR8sY"  # what the fake cluster's Secret auth/kfctl-login holds
POD = "istio-ingressgateway-7d9c6b-x2x4z"
ENV_INFO = "/api/workgroup/env-info"
LOGIN_FORM = (
    '<form method="post" action="/dex/auth/local/login?back=&amp;state=s1">'
    '<input name="login"><input name="password" type="password"></form>'
)
# oauth2-proxy v7's sign-in page (pkg/app/pagewriter/sign_in.html) with upstream's skip_provider_button = false
SIGN_IN_PAGE = (
    '<!DOCTYPE html><html><body><form method="GET" action="/oauth2/start">'
    '<input type="hidden" name="rd" value="/">'
    '<button type="submit" class="button block is-primary">Sign in with Dex</button></form></body></html>'
)


@dataclass
class Way:
    """What the double's servers do; each field breaks one hop."""

    password: str = PASSWORD
    namespaces: list[dict[str, str]] = field(
        default_factory=lambda: [{"namespace": "kubeflow-user-example-com", "role": "owner", "user": USER}]
    )
    backend_down: bool = False
    no_route: bool = False
    authz_down: bool = False  # the gateway cannot ask oauth2-proxy: Envoy's statusOnError, 403 with no body
    jwt_refused: bool = False  # the gateway's RequestAuthentication does not know the token's issuer
    skip_provider_button: bool = False  # oauth2-proxy redirects to /oauth2/start instead of its sign-in page
    signed_out: bool = False  # the callback sets no session: GET / shows the sign-in page again


def handler(way: Way) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: Any) -> None:
            pass

        def answer(self, status: int, body: str = "", **headers: str) -> None:
            data = body.encode()
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k.replace("_", "-"), v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            session = "oauth2_proxy_kubeflow=" in (self.headers.get("Cookie") or "")
            if path == "/oauth2/start":
                self.answer(302, Location="http://dex.auth.svc.cluster.local:5556/dex/auth?client_id=c&state=s1")
            elif path == "/dex/auth":
                self.answer(302, Location="/dex/auth/local/login?back=&state=s1")
            elif path == "/dex/auth/local/login":
                self.answer(200, f"<html>{LOGIN_FORM}</html>")
            elif path == "/dex/approval":
                self.answer(303, Location="/oauth2/callback?code=c1&state=s1")
            elif path == "/oauth2/callback" and way.signed_out:
                self.answer(302, Location="/", Set_Cookie="_oauth2_proxy_csrf=x; Path=/")
            elif path == "/oauth2/callback":
                self.answer(302, Location="/", Set_Cookie="oauth2_proxy_kubeflow=abc123; Path=/; HttpOnly")
            elif not session and way.authz_down:
                self.answer(403)
            elif not session and way.skip_provider_button:
                self.answer(302, Location="/oauth2/start?rd=%2F")
            elif not session:
                self.answer(403, SIGN_IN_PAGE, Content_Type="text/html; charset=utf-8")
            elif way.jwt_refused:
                self.answer(401, "Jwt issuer is not configured")
            elif path == ENV_INFO and way.no_route:
                self.answer(404)
            elif way.backend_down:
                self.answer(503, "no healthy upstream")
            elif path == ENV_INFO:
                self.answer(200, json.dumps({"user": USER, "namespaces": way.namespaces, "isClusterAdmin": False}))
            else:
                self.answer(200, "<html><title>Kubeflow Central Dashboard</title></html>")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            form = dict(p.split("=", 1) for p in body.split("&"))
            if form.get("password") == way.password and form.get("login", "").replace("%40", "@") == USER:
                self.answer(303, Location="/dex/approval?req=r1")
            else:
                error = '<div id="login-error" class="dex-error-box">Invalid Email Address and password.</div>'
                self.answer(200, f"<html>{error}{LOGIN_FORM}</html>")

    return Handler


@pytest.fixture
def way() -> Way:
    return Way()


@pytest.fixture
def gateway(way: Way) -> Iterator[int]:
    """The double's port on 127.0.0.1."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(way))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def platform(gateway_port: int | None) -> FakeCluster:
    """Upstream's way in, as installed: Gateway kubeflow/kubeflow-gateway (istio: ingressgateway), its Service and
    a running pod of it, and the login kfctl generated."""
    c = FakeCluster()
    c.put(served_crd("networking.istio.io", "Gateway", "gateways"))
    c.put(served_crd("networking.istio.io", "VirtualService", "virtualservices"))
    server = {"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}
    c.put(obj("networking.istio.io/v1", "Gateway", "kubeflow-gateway", "kubeflow", spec={
        "selector": {"istio": "ingressgateway"}, "servers": [server]}))  # fmt: skip
    c.put(obj("networking.istio.io/v1", "Gateway", "cluster-local-gateway", "knative-serving", spec={
        "selector": {"istio": "cluster-local-gateway"}, "servers": [server]}))  # fmt: skip
    c.put(obj("networking.istio.io/v1", "VirtualService", "centraldashboard", "kubeflow", spec={
        "gateways": ["kubeflow-gateway"]}))  # fmt: skip
    selector = {"app": "istio-ingressgateway", "istio": "ingressgateway"}
    ports = [
        {"name": "status-port", "port": 15021, "targetPort": 15021},
        {"name": "http2", "port": 80, "targetPort": 8080},
    ]
    c.put(obj("v1", "Service", "istio-ingressgateway", "istio-system", spec={"selector": selector, "ports": ports}))
    c.put(obj("v1", "Pod", POD, "istio-system", labels=selector, spec={"containers": [{"name": "istio-proxy"}]},
        status={"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}))  # fmt: skip
    c.put(obj("v1", "Secret", "kfctl-login", "auth", data={"username": b64(USER), "password": b64(PASSWORD)}))
    if gateway_port is not None:
        c.forwards[("istio-system", POD, 8080)] = gateway_port
    return c


def context(c: FakeCluster) -> InstalledContext:
    return InstalledContext(cluster=c, health=lambda: None, namespaces={}, suffix="t")


def test_the_ingress_is_found_from_the_installed_objects() -> None:
    ingress = find_ingress(platform(None))
    assert ingress.describe() == (
        "Gateway kubeflow/kubeflow-gateway → Service istio-system/istio-ingressgateway:80 → "
        f"pod istio-system/{POD}:8080"
    )


CHECK_ROWS = [
    ("works", {}, "login", "pass", (
        "an unauthenticated GET / is sent to the OIDC provider (/oauth2/start → /dex/auth → /dex/auth/local/login → "
        "/dex/approval → /oauth2/callback); user@example.com logs in with the password kfctl generated and gets a "
        "session (cookie oauth2_proxy_kubeflow)")),
    ("works", {}, "dashboard", "pass",
        "/api/workgroup/env-info answers for user@example.com: namespace(s) kubeflow-user-example-com (owner)"),
    ("wrong password", {"password": "not-the-one"}, "login", "fail", (
        "issuer: Dex refused the login of user@example.com with the password in Secret auth/kfctl-login: "
        '"Invalid Email Address and password."')),
    ("user without a profile", {"namespaces": []}, "dashboard", "fail", (
        "backend: /api/workgroup/env-info answers for user@example.com, who has no namespace (no Profile owns one "
        "for them): the dashboard shows them its registration page")),
    ("backend down", {"backend_down": True}, "dashboard", "fail", (
        "backend: the dashboard behind the gateway does not answer /api/workgroup/env-info: 503 no healthy "
        "upstream")),
    ("oauth2-proxy redirects instead of its sign-in page", {"skip_provider_button": True}, "login", "pass", (
        "an unauthenticated GET / is sent to the OIDC provider (/oauth2/start → /dex/auth → /dex/auth/local/login → "
        "/dex/approval → /oauth2/callback); user@example.com logs in with the password kfctl generated and gets a "
        "session (cookie oauth2_proxy_kubeflow)")),
    ("the callback gives no session", {"signed_out": True}, "login", "fail", (
        "oauth2-proxy: after the login, GET / shows oauth2-proxy's sign-in page again (403): the callback set no "
        "session cookie (cookies: _oauth2_proxy_csrf)")),
    ("backend down: the login still gets its session", {"backend_down": True}, "login", "pass", (
        "an unauthenticated GET / is sent to the OIDC provider (/oauth2/start → /dex/auth → /dex/auth/local/login → "
        "/dex/approval → /oauth2/callback); user@example.com logs in with the password kfctl generated and gets a "
        "session (cookie oauth2_proxy_kubeflow)")),
    ("oauth2-proxy down", {"authz_down": True}, "login", "fail", (
        "oauth2-proxy: the gateway refused / instead of sending it to the login: 403 (oauth2-proxy, which the gateway "
        "asks first, does not answer, or the gateway does not ask it)")),
    ("token not verified", {"jwt_refused": True}, "login", "fail", (
        "JWT: the gateway refused / with a session: 401 Jwt issuer is not configured (the token oauth2-proxy passes "
        "is not verified against the issuer's keys: RequestAuthentication dex-jwt, AuthorizationPolicy require-jwt)"
    )),
    ("no route", {"no_route": True}, "dashboard", "fail", (
        "VirtualService: the gateway has no route for /api/workgroup/env-info (404 with no body, Envoy's 'route not "
        "found')")),
]  # fmt: skip


@pytest.mark.parametrize(("fault", "change", "check", "verdict", "message"), CHECK_ROWS, ids=[r[0] for r in CHECK_ROWS])
def test_each_fault_names_the_hop_that_broke(
    way: Way, gateway: int, fault: str, change: dict[str, Any], check: str, verdict: str, message: str
) -> None:
    for k, v in change.items():
        setattr(way, k, v)
    run = {"login": login_check, "dashboard": dashboard_check}[check]
    outcome = run(context(platform(gateway)))
    assert (outcome.verdict, outcome.message) == (verdict, message)
    assert PASSWORD not in outcome.message + outcome.hint


def test_a_gateway_pod_that_does_not_listen_fails_the_gateway_hop() -> None:
    outcome = login_check(context(platform(None)))
    assert outcome.verdict == "fail"
    assert outcome.message.startswith("gateway: no answer to GET / through the port-forward to the gateway's pod")
    assert outcome.message.endswith(
        f"(Gateway kubeflow/kubeflow-gateway → Service istio-system/istio-ingressgateway:80 → pod istio-system/{POD}:"
        f"8080: error forwarding port 8080 to pod {POD}, uid : failed to connect to localhost:8080 inside namespace: "
        "connection refused)"
    )


NO_GATEWAY_ROWS = [
    ("kind not served", lambda c: c.objects.clear(), (
        "no Istio Gateway: the cluster does not serve Gateway (networking.istio.io, versions v1, v1beta1, v1alpha3), "
        "so there is no ingress to forward to")),
    ("no Gateway object", lambda c: [c.objects.pop(k) for k in list(c.objects) if k.kind == "Gateway"],
        "no Istio Gateway: the cluster serves Gateway (networking.istio.io/v1) but none exists in any namespace"),
    ("no Service selects its pods", lambda c: [c.objects.pop(k) for k in list(c.objects) if k.kind == "Service"], (
        "Gateway kubeflow/kubeflow-gateway selects pods istio=ingressgateway, but no Service in any namespace "
        "selects them (looked for a Service whose spec.selector includes those labels)")),
]  # fmt: skip


@pytest.mark.parametrize(("case", "change", "message"), NO_GATEWAY_ROWS, ids=[r[0] for r in NO_GATEWAY_ROWS])
def test_a_platform_without_a_gateway_is_exit_5_naming_what_was_looked_for(
    case: str, change: Any, message: str
) -> None:
    c = platform(None)
    change(c)
    with pytest.raises(PlanError) as e:
        find_ingress(c)
    assert (e.value.exit_code, e.value.message) == (5, message)


@pytest.fixture
def on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    monkeypatch.chdir(tmp_path)

    def use(c: FakeCluster) -> None:
        monkeypatch.setattr(target, "open_cluster", lambda **_: c)

    return use


def test_dashboard_without_a_gateway_exits_5(on: Any, capsys: pytest.CaptureFixture[str]) -> None:
    c = platform(None)
    c.objects.clear()
    on(c)
    assert main(["dashboard"]) == 5
    assert "no Istio Gateway: the cluster does not serve Gateway (networking.istio.io" in capsys.readouterr().err


def test_dashboard_says_which_port_is_in_use(on: Any, capsys: pytest.CaptureFixture[str]) -> None:
    on(platform(None))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["dashboard", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is in use by another program; nothing was forwarded" in err


def test_dashboard_forwards_prints_the_login_not_the_password_and_stops_on_ctrl_c(
    on: Any, gateway: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    on(platform(gateway))
    seen: list[str] = []

    def browse_then_ctrl_c(local: LocalForward, _cluster: Any) -> None:
        with urllib.request.urlopen(local.url + "dex/auth/local/login") as page:
            seen.append(page.read().decode())
        raise KeyboardInterrupt

    monkeypatch.setattr(dashboard_cmd, "wait_until_interrupted", browse_then_ctrl_c)
    assert main(["dashboard", "--port", "0", "-o", "json"]) == 130
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["url"].startswith("http://127.0.0.1:")
    assert doc["login"] == {"username": USER, "passwordSecret": "auth/kfctl-login", "passwordKey": "password"}
    assert doc["ingress"]["pod"] == f"istio-system/{POD}"
    assert seen == [f"<html>{LOGIN_FORM}</html>"]  # the page came through the port-forward
    assert "stopped forwarding" in err
    assert PASSWORD not in out + err


def test_show_password_prints_it(on: Any, gateway: int, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    on(platform(gateway))

    def ctrl_c(_local: LocalForward, _cluster: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(dashboard_cmd, "wait_until_interrupted", ctrl_c)
    assert main(["dashboard", "--port", "0", "--show-password"]) == 130
    out = capsys.readouterr().out
    assert f"Login:    {USER}\nPassword: {PASSWORD}\n" in out


def test_a_connection_the_gateway_pod_refuses_is_said_on_stderr(
    on: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    on(platform(None))  # the gateway's pod exists, nothing listens on its port 8080

    def browse_then_ctrl_c(local: LocalForward, _cluster: Any) -> None:
        with pytest.raises(OSError):  # the browser's view: an empty reply
            urllib.request.urlopen(local.url, timeout=10)
        raise KeyboardInterrupt

    monkeypatch.setattr(dashboard_cmd, "wait_until_interrupted", browse_then_ctrl_c)
    assert main(["dashboard", "--port", "0"]) == 130
    assert (
        f"Warning: the pod's port answered with an error: error forwarding port 8080 to pod {POD}, uid : failed to "
        "connect to localhost:8080 inside namespace: connection refused"
    ) in capsys.readouterr().err
