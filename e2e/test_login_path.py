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
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import yaml
from apply_support import REPO, kfctl, kubectl
from full_platform_support import served
from harness import Cluster, poll
from kfctl_testbed import jws, upstream_mirror
from kfctl_testbed.dex_standin import bcrypt_matches

pytestmark = pytest.mark.e2e

NAME = "login"
# The lines of upstream's example/kustomization.yaml the login path needs (kfdef.yaml keeps only these).
LOGIN_PATH = (
    "common/istio/istio-crds/base",
    "common/istio/istio-namespace/base",
    "common/istio/istio-install/overlays/oauth2-proxy",
    "common/oauth2-proxy/overlays/m2m-dex-only",
    "common/dex/overlays/oauth2-proxy",
    "common/kubeflow-namespace/base",
    "common/kubeflow-roles/base",
    "common/istio/kubeflow-istio-resources/base",
    "applications/centraldashboard/overlays/oauth2-proxy",
    "applications/profiles/pss",  # KFAM, which the dashboard asks for the user's namespaces
    "common/user-namespace/base",  # the Profile of user@example.com
)
USER = "user@example.com"  # Dex's static user in upstream's config
STANDIN_SERVER = "istio-envoy-standin"


@dataclass
class Installed:
    kubeconfig: str
    state_dir: Path | None
    app: Path


@pytest.fixture(scope="module")
def platform(
    module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, release_mirror: upstream_mirror.Mirror
) -> Installed:
    kubeconfig = module_cluster.kubeconfig
    app = tmp_path_factory.mktemp("login") / NAME
    with served(release_mirror) as flags:
        init = kfctl("init", str(app), "--upstream", "v1.11.0", *flags, kubeconfig=kubeconfig)
        assert init.code == 0, init.explain()
        kfdef_path = app / "kfdef.yaml"
        kfdef = yaml.safe_load(kfdef_path.read_text())
        apps = kfdef["spec"]["applications"]
        kfdef["spec"]["applications"] = [a for a in apps if a["kustomizeConfig"]["repoRef"]["path"] in LOGIN_PATH]
        assert len(kfdef["spec"]["applications"]) == len(LOGIN_PATH), [a["name"] for a in apps]
        kfdef_path.write_text(yaml.safe_dump(kfdef, sort_keys=False))
        generated = kfctl("generate", str(app), kubeconfig=kubeconfig)
        assert generated.code == 0, generated.explain()
    run = kfctl("apply", str(app), "--wait-timeout", "5m", kubeconfig=kubeconfig, timeout=900)
    assert run.code == 0, run.explain()
    return Installed(kubeconfig, module_cluster.state_dir, app)


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


def secret(platform: Installed, namespace: str, name: str) -> dict[str, str]:
    data = json.loads(kubectl(platform.kubeconfig, "get", "secret", name, "-n", namespace, "-o", "json"))["data"]
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def login_password(platform: Installed) -> str:
    """The password kfctl drew for this install (auth/kfctl-login), checked against the hash Dex was given."""
    login = secret(platform, "auth", "kfctl-login")
    assert login["username"] == USER
    installed_hash = secret(platform, "auth", "dex-passwords")["DEX_USER_PASSWORD"]
    assert bcrypt_matches(login["password"], installed_hash), "auth/dex-passwords does not hash auth/kfctl-login"
    return login["password"]


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
    if answer.status == 200:  # a dashboard process answered: it read the user from kubeflow-userid
        assert json.loads(answer.body)["user"] == USER
    else:  # kwok plays the dashboard's pod: no process behind its Service, the gateway says so (Envoy's 503)
        assert (answer.status, answer.text(), answer.headers.get("server")) == (
            503,
            "no healthy upstream",
            STANDIN_SERVER,
        )
    log = container_log(
        platform, "istio-system", pod_of(platform, "istio-system", "app=istio-ingressgateway"), "istio-proxy"
    )
    routed = [line for line in log.splitlines() if "GET /api/workgroup/env-info" in line]
    assert (
        "VirtualService kubeflow/centraldashboard http[0] → centraldashboard.kubeflow.svc.cluster.local:80"
        in routed[-1]
    ), routed
