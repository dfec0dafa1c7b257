"""The login path of upstream Kubeflow v1.11.0 as kfctl installs it, with plain HTTP requests through
`kubectl port-forward` to the ingress gateway: the lines of upstream's example/kustomization.yaml a login needs
(Istio, oauth2-proxy, Dex, the kubeflow gateway, the central dashboard, profiles and KFAM, the user's Profile),
scaffolded by `kfctl init --upstream`.

STAND-INS (they say so in their logs, printed below): Istio's ingress gateway (kfctl_testbed.istio_gateway: Envoy
cannot be built here) and Dex (kfctl_testbed.dex_standin: the Go module proxy serves no Dex v2 release), run by the
process runtime for their pods with the installed objects as their configuration. The oracles: the pods' readiness
from their own probes (the API server), the installed Secrets (the client and the password hash kfctl applied), and
what the gateway answers, request by request.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from apply_support import REPO, kfctl, kubectl
from harness import Cluster, poll
from kfctl_testbed import jws, upstream_mirror
from login_support import LOGIN_PATH, USER, Installed, install_part, kfctl_dashboard, login_password, secret

from kfctl.secrets.upstream import CLIENT_SECRET as UPSTREAM_CLIENT_SECRET

pytestmark = pytest.mark.e2e

NAME = "login"
STANDIN_SERVER = "istio-envoy-standin"


@pytest.fixture(scope="module")
def platform(
    module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, release_mirror: upstream_mirror.Mirror
) -> Installed:
    return install_part(module_cluster, tmp_path_factory.mktemp("login") / NAME, release_mirror, LOGIN_PATH)


def pod_of(platform: Installed, namespace: str, selector: str) -> str:
    names = kubectl(platform.kubeconfig, "get", "pods", "-n", namespace, "-l", selector, "-o", "name").split()
    assert len(names) == 1, names
    return names[0].split("/", 1)[1]


def container_log(platform: Installed, namespace: str, pod: str, container: str) -> str:
    logs = subprocess.run(
        [
            str(REPO / "e2e" / "cluster"),
            "--state-dir",
            str(platform.state_dir),
            "logs",
            f"{namespace}/{pod}",
            "-c",
            container,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert logs.returncode == 0, logs.stderr
    return logs.stdout


@pytest.fixture(scope="module")
def gateway(platform: Installed) -> Iterator[str]:
    """127.0.0.1:<port> forwarded to the ingress gateway's Service port 80, as `kubectl port-forward` does it."""
    pod = pod_of(platform, "istio-system", "app=istio-ingressgateway")

    def forwarded() -> bool:  # the runtime names the ports it saw the gateway's process listen on (podports)
        text = kubectl(platform.kubeconfig, "get", "portforward", pod, "-n", "istio-system", "-o", "json", check=False)
        return bool(text) and [8080] in [f["ports"] for f in json.loads(text)["spec"]["forwards"]]

    poll(forwarded, timeout=120, what=f"a PortForward of pod istio-system/{pod} for port 8080")
    proc = subprocess.Popen(
        [
            "kubectl",
            "--kubeconfig",
            platform.kubeconfig,
            "port-forward",
            "-n",
            "istio-system",
            "svc/istio-ingressgateway",
            ":80",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "Forwarding from 127.0.0.1:<port> -> 8080"
        match = re.search(r"127\.0\.0\.1:(\d+) -> (\d+)", line)
        assert match, f"kubectl port-forward: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        assert match.group(2) == "8080"  # the Service's targetPort for port 80
        yield f"127.0.0.1:{match.group(1)}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    cookies: dict[str, str]  # what its Set-Cookie headers set

    def text(self) -> str:
        return self.body.decode(errors="replace")


def call(address: str, method: str, target: str, headers: dict[str, str] | None = None, body: bytes = b"") -> Answer:
    """One request as a browser's or curl's (no redirect followed), Host as the forwarded address."""
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request(method, target, body=body or None, headers={"Host": f"localhost:{port}", **(headers or {})})
        response = connection.getresponse()
        pairs = response.getheaders()
        cookies = dict(
            v.split(";", 1)[0].strip().split("=", 1) for k, v in pairs if k.lower() == "set-cookie" and "=" in v
        )
        return Answer(response.status, {k.lower(): v for k, v in pairs}, response.read(), cookies)
    finally:
        connection.close()


def test_the_gateway_and_dex_pods_are_the_stand_ins_ready_from_their_own_probes(platform: Installed) -> None:
    for namespace, selector, container in (
        ("istio-system", "app=istio-ingressgateway", "istio-proxy"),
        ("auth", "app=dex", "dex"),
    ):
        pod = pod_of(platform, namespace, selector)

        def ready(namespace: str = namespace, pod: str = pod) -> bool:
            obj = json.loads(kubectl(platform.kubeconfig, "get", "pod", pod, "-n", namespace, "-o", "json"))
            return any(c["type"] == "Ready" and c["status"] == "True" for c in obj["status"].get("conditions", []))

        poll(ready, timeout=120, what=f"pod {namespace}/{pod} Ready from its probe")
        log = container_log(platform, namespace, pod, container)
        [standin] = [line for line in log.splitlines() if "STAND-IN for" in line]
        print(f"\n{namespace}/{pod}: {standin.split(' ', 3)[-1]}")
    login_password(platform)  # Dex was given the hash of the password kfctl drew for this install


def test_port_forward_reaches_the_gateway_which_verifies_tokens_by_the_installed_request_authentication(
    gateway: str,
) -> None:
    malformed = call(gateway, "GET", "/", {"Authorization": "Bearer not-a-jwt"})
    assert (malformed.status, malformed.headers.get("server")) == (401, STANDIN_SERVER)
    assert malformed.text() == "Jwt is not in the form of Header.Payload.Signature"
    stranger = jws.SigningKey.generate().sign({"iss": "https://elsewhere.example", "sub": "x", "exp": 4102444800})
    foreign = call(gateway, "GET", "/", {"Authorization": f"Bearer {stranger}"})
    assert (foreign.status, foreign.text()) == (401, "Jwt issuer is not configured")


def test_a_login_at_dex_through_the_gateway_gives_a_token_the_gateway_verifies_and_routes_to_the_dashboard(
    platform: Installed, gateway: str
) -> None:
    client = secret(platform, "auth", "dex-oidc-client")
    password = login_password(platform)
    query = {
        "client_id": client["OIDC_CLIENT_ID"],
        "redirect_uri": "/oauth2/callback",
        "response_type": "code",
        "scope": "openid email profile groups",
        "state": "e2e",
    }
    # /dex/ paths skip oauth2-proxy and the JWT requirement (the installed AuthorizationPolicies' notPaths)
    start = poll(
        lambda: (a := call(gateway, "GET", "/dex/auth?" + urlencode(query))).status == 302 and a,
        timeout=60,
        what="Dex's authorization endpoint through the gateway",
    )
    form_url = start.headers["location"]
    assert call(gateway, "GET", form_url).status == 200
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    wrong = call(gateway, "POST", form_url, form, urlencode({"login": USER, "password": "not it"}).encode())
    assert (wrong.status, "Invalid Email Address and password." in wrong.text()) == (200, True)
    right = call(gateway, "POST", form_url, form, urlencode({"login": USER, "password": password}).encode())
    assert right.status == 303, right.text()
    approved = call(gateway, "GET", right.headers["location"])
    callback = urlsplit(approved.headers["location"])
    assert (approved.status, callback.path, parse_qs(callback.query)["state"]) == (303, "/oauth2/callback", ["e2e"])
    basic = base64.b64encode(f"{client['OIDC_CLIENT_ID']}:{client['OIDC_CLIENT_SECRET']}".encode()).decode()
    token_form = {
        "grant_type": "authorization_code",
        "code": parse_qs(callback.query)["code"][0],
        "redirect_uri": "/oauth2/callback",
    }
    tokens = call(
        gateway, "POST", "/dex/token", {**form, "Authorization": f"Basic {basic}"}, urlencode(token_form).encode()
    )
    assert tokens.status == 200, tokens.text()
    id_token = json.loads(tokens.body)["id_token"]
    # A Bearer request skips oauth2-proxy (the CUSTOM policy's `when`), passes the JWT requirement once the
    # gateway verified the token with Dex's keys, and goes to the dashboard with kubeflow-userid from `email`.
    answer = call(gateway, "GET", "/api/workgroup/env-info", {"Authorization": f"Bearer {id_token}"})
    print(f"\nGET /api/workgroup/env-info as {USER}: {answer.status} {answer.text()[:200]}")
    assert answer.status == 200, answer.text()  # the dashboard's process read the user from kubeflow-userid
    assert json.loads(answer.body)["user"] == USER
    log = container_log(
        platform, "istio-system", pod_of(platform, "istio-system", "app=istio-ingressgateway"), "istio-proxy"
    )
    routed = [line for line in log.splitlines() if "GET /api/workgroup/env-info" in line]
    assert (
        "VirtualService kubeflow/centraldashboard http[0] → centraldashboard.kubeflow.svc.cluster.local:80"
        in routed[-1]
    ), routed


def local(location: str) -> str:
    """A redirect's target as a path through the forwarded port (Dex's issuer names the cluster's host)."""
    parts = urlsplit(location.replace("&amp;", "&"))
    return parts.path + (f"?{parts.query}" if parts.query else "")


def test_kfctl_dashboard_forwards_to_the_gateway_and_curl_like_requests_log_in_with_the_generated_password(
    platform: Installed,
) -> None:
    """Issue 48's must-show: `kfctl dashboard` forwards a local port to the gateway's pod through the API server,
    prints the URL and where the password is kept (never the password), and plain HTTP requests through it log in
    as a browser would: GET / is oauth2-proxy's sign-in page, its button leads to Dex's form, upstream's 12341234
    is refused, the generated password gives a session cookie, and the dashboard answers for the user. Ctrl-C
    ends it with exit 130."""
    with kfctl_dashboard(platform) as dashboard:
        doc = dashboard.document
        assert doc["login"] == {"username": USER, "passwordSecret": "auth/kfctl-login", "passwordKey": "password"}
        assert doc["ingress"]["service"] == "istio-system/istio-ingressgateway"
        password = login_password(platform)
        assert password not in json.dumps(doc)
        gateway = urlsplit(doc["url"]).netloc
        cookies: dict[str, str] = {}

        def step(method: str, target: str, form: dict[str, str] | None = None) -> Answer:
            headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())} if cookies else {}
            body = b""
            if form is not None:
                headers["Content-Type"] = "application/x-www-form-urlencoded"
                body = urlencode(form).encode()
            answer = call(gateway, method, target, headers, body)
            cookies.update(answer.cookies)
            return answer

        def follow(answer: Answer) -> Answer:
            for _ in range(6):
                if answer.status not in (301, 302, 303) or "location" not in answer.headers:
                    return answer
                answer = step("GET", local(answer.headers["location"]))
            raise AssertionError(f"too many redirects, at {answer.status}")

        # oauth2-proxy's sign-in page (upstream's skip_provider_button = false): 403 and a button to /oauth2/start
        first = poll(
            lambda: (a := step("GET", "/")).status == 403 and "/oauth2/start" in a.text() and a,
            timeout=60,
            what="GET / answered with oauth2-proxy's sign-in page",
        )
        assert 'name="rd" value="/"' in first.text(), first.text()[:300]
        page = follow(step("GET", "/oauth2/start?rd=%2F"))
        assert page.status == 200 and 'name="password"' in page.text(), page.text()[:300]
        match = re.search(r'action="([^"]*)"', page.text())
        assert match, page.text()[:300]
        wrong = step("POST", local(match.group(1)), {"login": USER, "password": "12341234"})  # upstream's, not ours
        assert (wrong.status, "Invalid Email Address and password." in wrong.text()) == (200, True)
        right = step("POST", local(match.group(1)), {"login": USER, "password": password})
        assert right.status == 303, right.text()
        follow(right)
        info = step("GET", "/api/workgroup/env-info")
        print(f"\nkfctl dashboard {doc['url']}: env-info as {USER}: {info.status} {info.text()[:200]}")
        assert info.status == 200, info.text()
        assert json.loads(info.body)["user"] == USER
    # Ctrl-C (SIGINT, as the context's end sends it) stops the forward with exit 130
    assert dashboard.proc.returncode == 130, dashboard.proc.stderr.read() if dashboard.proc.stderr else ""


def test_kfctl_check_login_and_dashboard_pass(platform: Installed) -> None:
    run = kfctl("check", str(platform.app), "--only", "login,dashboard", kubeconfig=platform.kubeconfig)
    checks = {c["name"]: c for c in json.loads(run.stdout)["checks"]}
    print("\nkfctl check:", *(f"{n}: {c['verdict']} {c['message']}" for n, c in checks.items()), sep="\n  ")
    assert [(n, c["verdict"]) for n, c in checks.items()] == [("login", "pass"), ("dashboard", "pass")], checks


def test_a_person_logs_in_through_oauth2_proxy_and_dex_and_the_dashboard_knows_them(
    platform: Installed, gateway: str
) -> None:
    """What a browser does: the sign-in page, oauth2-proxy's start, Dex's form, the callback, then the dashboard
    with the session cookie (oauth2-proxy gives the gateway the ID token, the gateway the user's header)."""
    jar: dict[str, str] = {}
    password = login_password(platform)
    # Both ends of the OIDC client hold the one secret kfctl drew for this install, not upstream's: oauth2-proxy's
    # Secret (kustomize's secretGenerator names it oauth2-proxy-<hash>) and Dex's.
    [proxy_secret] = [
        n.split("/", 1)[1]
        for n in kubectl(platform.kubeconfig, "get", "secrets", "-n", "oauth2-proxy", "-o", "name").split()
        if re.fullmatch(r"secret/oauth2-proxy-[a-z0-9]{10}", n)
    ]
    client_secret = secret(platform, "auth", "dex-oidc-client")["OIDC_CLIENT_SECRET"]
    assert secret(platform, "oauth2-proxy", proxy_secret)["client-secret"] == client_secret
    assert client_secret != UPSTREAM_CLIENT_SECRET and len(client_secret) == 32

    def browse(method: str, target: str, body: dict[str, str] | None = None) -> Answer:
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in jar.items())} if jar else {}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        answer = call(gateway, method, target, headers, urlencode(body).encode() if body is not None else b"")
        jar.update(answer.cookies)
        print(f"  {method} {target.split('?')[0]} → {answer.status} {answer.headers.get('location', '')[:60]}")
        return answer

    print()
    first = poll(
        lambda: (a := browse("GET", "/")).status in (302, 403) and a.headers.get("server") != STANDIN_SERVER and a,
        timeout=120,
        what="oauth2-proxy's answer to an unauthenticated GET / through the gateway",
    )
    assert "/oauth2/start" in first.text() + first.headers.get("location", ""), first.text()[:500]
    start = browse("GET", "/oauth2/start?rd=%2F")
    assert start.status == 302 and start.headers["location"].startswith("/dex/auth?"), start.headers
    to_form = browse("GET", start.headers["location"])
    form_url = to_form.headers["location"]
    assert browse("GET", form_url).status == 200
    wrong = browse("POST", form_url, {"login": USER, "password": "not it"})
    assert (wrong.status, "Invalid Email Address and password." in wrong.text()) == (200, True)
    right = browse("POST", form_url, {"login": USER, "password": password})
    approved = browse("GET", right.headers["location"])
    assert urlsplit(approved.headers["location"]).path == "/oauth2/callback"
    callback = browse("GET", approved.headers["location"])
    assert callback.status == 302, callback.text()[:500]
    assert "oauth2_proxy_kubeflow" in jar, jar.keys()
    env = browse("GET", "/api/workgroup/env-info")
    assert env.status == 200, env.text()[:500]
    assert json.loads(env.body)["user"] == USER
