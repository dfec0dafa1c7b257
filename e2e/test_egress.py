"""The API server's egress proxy (kfctl_testbed.egress), with the session's real API server.

kube-apiserver sends its `cluster` traffic (Service webhooks, kubelet calls, the proxy subresources) and its
`controlplane` traffic (`url` webhooks) through the proxy the process runtime serves. Here: loopback targets pass
straight through (kubectl logs reaches kwok; an HTTPS request to the API server goes through a tunnel untouched); a
target that is no Service's cluster IP is refused at once and never dialled, and kube-apiserver quotes the refusal
(a `url` webhook's too); a webhook Service whose pod no process serves is refused fast; cert-manager's webhook,
played by the stand-in (kfctl_testbed.standin_webhook), admits an Issuer and a Certificate through it; no socket of ours
leaves loopback meanwhile (`e2e/cluster check-loopback`). The proxy leading to an operator the runtime runs is in
test_runtime.py (the training operator's TFJob validator).
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from apply_support import install, kfctl
from harness import Cluster, poll, run_cluster
from kfctl_testbed import egress, kube_rest, localcluster
from kfctl_testbed.kube_rest import JSON, ApiError
from test_apply_webhooks import webhook_configuration

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def state(cluster: Cluster, pod_runtime: Path) -> localcluster.State:
    """The session cluster's state, when it is a local one with the egress proxy (the runtime serves it)."""
    loaded = localcluster.State.load(cluster.state_dir) if cluster.state_dir else None
    if loaded is None or loaded.backend != "local":
        pytest.skip("the egress proxy belongs to e2e/cluster's local control plane")
    assert "egress" in loaded.ports, f"{cluster.state_dir}: started before the egress proxy existed; `down` and `up`"
    return loaded


def kubectl(kubeconfig: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, *args], capture_output=True, text=True, timeout=60, check=False
    )


def runtime_log(state: localcluster.State, since: int = 0) -> str:
    """The runtime's log from byte `since` on (a `log_size` taken at a test's start: only what it caused)."""
    with open(Path(state.state_dir) / "logs" / "runtime.log", "rb") as f:
        f.seek(since)
        return f.read().decode(errors="replace")


def log_size(state: localcluster.State, name: str = "runtime") -> int:
    return (Path(state.state_dir) / "logs" / f"{name}.log").stat().st_size


def connect(state: localcluster.State, authority: str) -> tuple[str, ssl.SSLSocket]:
    """CONNECT through the proxy as kube-apiserver does (its client certificate); the status line and the socket."""
    pki_dir = Path(state.state_dir) / "pki"
    tls = ssl.create_default_context(cafile=str(pki_dir / "ca.crt"))
    tls.load_cert_chain(pki_dir / egress.CLIENT_CERT, pki_dir / egress.CLIENT_KEY)
    raw = socket.create_connection(("127.0.0.1", state.ports["egress"]), timeout=10)
    sock = tls.wrap_socket(raw, server_hostname="127.0.0.1")
    sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        if not chunk:
            break
        head += chunk
    return head.split(b"\r\n", 1)[0].decode(), sock


def https_through(tunnel: ssl.SSLSocket, tls: ssl.SSLContext, request: bytes) -> bytes:
    """An HTTPS exchange inside the TLS connection `tunnel` (ssl cannot wrap an SSLSocket: memory BIOs do)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    inner = tls.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")

    def exchange() -> bool:
        if data := outgoing.read():
            tunnel.sendall(data)
        data = tunnel.recv(65536)
        if data:
            incoming.write(data)
        else:
            incoming.write_eof()
        return bool(data)

    while True:
        try:
            inner.do_handshake()
            break
        except ssl.SSLWantReadError:
            exchange()
    inner.write(request)
    answer = b""
    while True:
        try:
            chunk = inner.read(65536)
        except ssl.SSLWantReadError:
            if exchange():
                continue
            break
        except ssl.SSLZeroReturnError:
            break
        if not chunk:
            break
        answer += chunk
    return answer


def running_pod(api: kube_rest.Client, namespace: str, name: str, **container: Any) -> JSON:
    """A pod of one container (kwok's: no process runs for it), once Running."""
    api.create(
        f"/api/v1/namespaces/{namespace}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10", **container}]},
        },
    )

    def running() -> JSON | None:
        pod = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}") or {}
        return pod if pod.get("status", {}).get("phase") == "Running" else None

    result: JSON = poll(running, timeout=60, what=f"pod {namespace}/{name} to run")
    return result


def webhook_refusal(api: kube_rest.Client, namespace: str, client_config: JSON) -> tuple[str, str, float]:
    """Register a failurePolicy Fail webhook at `client_config` for ConfigMaps with its label, create those until one
    is refused (a new configuration takes a moment to be in force), delete the webhook: its name, the API server's
    message and how long the refused create took."""
    name = f"e2e-{uuid.uuid4().hex[:8]}.kfctl.test"
    selector = {"e2e.kfctl.dev/webhook": name}
    api.create(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        webhook_configuration(name, client_config=client_config, selector=selector),
    )
    attempts = iter(range(1000))
    # The API server finds a webhook's Service through its own informer, which may not have seen a Service created a
    # moment before (seen under load: `service "no-process" not found`): that refusal is not the webhook's yet.
    service = client_config.get("service")
    not_seen = f'service "{service["name"]}" not found' if service else None

    def refused() -> tuple[str, float] | None:
        started = time.monotonic()
        try:
            api.create(
                f"/api/v1/namespaces/{namespace}/configmaps",
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"cm-{next(attempts)}", "labels": selector},
                },
            )
        except ApiError as e:
            message = str(json.loads(e.body)["message"])
            return None if not_seen and not_seen in message else (message, time.monotonic() - started)
        return None  # the configuration is not in force yet

    try:
        message, seconds = poll(refused, timeout=30, what="the webhook to be called")
    finally:
        api.delete(f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{name}")
    return name, message, seconds


def assert_loopback_only(state: localcluster.State) -> None:
    assert localcluster.non_loopback_sockets(state) == []
    check = run_cluster("check-loopback", "--state-dir", state.state_dir)
    assert check.returncode == 0, check.stdout + check.stderr


def test_loopback_targets_pass_straight_through(
    state: localcluster.State, kubeconfig: str, namespace: str, api: kube_rest.Client
) -> None:
    # kubectl logs: API server → kubelet is `cluster` traffic; kwok's kubelet port is on 127.0.0.1.
    since = log_size(state)
    running_pod(api, namespace, "logs")
    logs = kubectl(kubeconfig, "logs", "-n", namespace, "logs")
    # kwok's own answer (it keeps no logs), so the request got there and back.
    assert 'no logs found for container "main"' in logs.stderr, logs.stderr
    assert f"egress: CONNECT 127.0.0.1:{state.ports['kwok']} → loopback 127.0.0.1:{state.ports['kwok']}" in (
        runtime_log(state, since)
    )

    # A tunnel carries TLS untouched: HTTPS to the API server through it, with the admin's certificate.
    status, sock = connect(state, f"127.0.0.1:{state.ports['apiserver']}")
    pki_dir = Path(state.state_dir) / "pki"
    tls = ssl.create_default_context(cafile=str(pki_dir / "ca.crt"))
    tls.load_cert_chain(pki_dir / "admin.crt", pki_dir / "admin.key")
    with sock:
        assert status == "HTTP/1.1 200 Connection established"
        answer = https_through(sock, tls, b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok"), answer
    assert_loopback_only(state)


def test_a_target_that_is_no_service_is_refused_and_never_dialled(
    state: localcluster.State, kubeconfig: str, namespace: str, api: kube_rest.Client
) -> None:
    since = log_size(state)
    started = time.monotonic()
    status, sock = connect(state, "10.1.2.3:443")
    sock.close()
    # The refusal's reason is the proof that nothing was dialled; the time only bounds it (a loaded machine).
    assert time.monotonic() - started < 10
    assert status == (
        "HTTP/1.1 403 10.1.2.3:443 is no Service's cluster IP and port, nor a pod's IP; the proxy dials only loopback"
    )
    status, sock = connect(state, "example.invalid:443")
    sock.close()
    assert status.startswith("HTTP/1.1 403 CONNECT example.invalid:443: not an IP address")
    assert "egress: refused (403): 10.1.2.3:443 is no Service's cluster IP and port" in runtime_log(state, since)

    # kube-apiserver dials a pod's IP for the pods/proxy subresource: a pod kwok plays has no process behind its
    # IP, so it is refused, and the refusal reaches the user.
    pod_ip = running_pod(api, namespace, "target")["status"]["podIP"]
    proxied = kubectl(kubeconfig, "get", "--raw", f"/api/v1/namespaces/{namespace}/pods/target:80/proxy/")
    assert proxied.returncode != 0
    assert (
        f"proxy error from 127.0.0.1:{state.ports['egress']} while dialing {pod_ip}:80, code 502: "
        f"502 pod {namespace}/target port 80: no process runs for container"
    ) in proxied.stderr, proxied.stderr
    assert_loopback_only(state)


def test_a_webhook_service_without_a_process_is_refused_fast(
    state: localcluster.State, namespace: str, api: kube_rest.Client
) -> None:
    """A failurePolicy Fail webhook whose Service's pod runs no process (kwok only pretends): the proxy says so,
    within a moment, and the API server fails the request quoting it (the pipelines cache-server's case)."""
    pod = running_pod(
        api,
        namespace,
        "no-process",
        image="example.invalid/webhook:1",
        ports=[{"name": "webhook", "containerPort": 8443}],
    )
    api.create(
        f"/api/v1/namespaces/{namespace}/services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "no-process"},
            "spec": {"selector": {"app": "no-process"}, "ports": [{"port": 443, "targetPort": "webhook"}]},
        },
    )
    client_config = {"service": {"name": "no-process", "namespace": namespace, "path": "/validate"}}
    name, message, seconds = webhook_refusal(api, namespace, client_config)
    assert f'failed calling webhook "configmaps.{name}"' in message, message
    assert (
        f"code 502: 502 Service {namespace}/no-process port 443: pod {pod['metadata']['name']}: no process runs "
        "for it (image example.invalid/webhook:1)"
    ) in message, message
    assert seconds < 10, f"refused after {seconds:.1f} s: {message}"
    assert_loopback_only(state)


def test_a_url_webhook_off_loopback_is_refused_and_never_dialled(
    state: localcluster.State, namespace: str, api: kube_rest.Client
) -> None:
    """A `url` webhook is kube-apiserver's `controlplane` traffic: it too goes through the proxy, which refuses an
    address that is not loopback (nor a Service's), and the API server fails the request quoting the refusal."""
    since = log_size(state)
    name, message, _ = webhook_refusal(api, namespace, {"url": "https://10.1.2.3:443/validate"})
    assert f'failed calling webhook "configmaps.{name}"' in message, message
    assert (
        f"proxy error from 127.0.0.1:{state.ports['egress']} while dialing 10.1.2.3:443, code 403: "
        "403 10.1.2.3:443 is no Service's cluster IP and port, nor a pod's IP; the proxy dials only loopback"
    ) in message, message
    assert "egress: refused (403): 10.1.2.3:443 is no Service's cluster IP and port" in runtime_log(state, since)
    assert_loopback_only(state)


def test_cert_manager_objects_are_admitted_through_the_standin_webhook(
    state: localcluster.State, kubeconfig: str, namespace: str, api: kube_rest.Client, tmp_path: Path
) -> None:
    app = tmp_path / "app"
    # kfctl makes its inventory namespace (kubeflow) when it is missing and leaves it; a later install of the
    # `common` application would then find it existing (test_ownership.py's drift test).
    kubeflow_existed = api.get("/api/v1/namespaces/kubeflow") is not None
    since, standin_since = log_size(state), log_size(state, "standin")
    install(app, "cert-manager", kubeconfig=kubeconfig, wait_timeout="3m")
    try:
        issuer = {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": {"name": "selfsigned", "namespace": namespace},
            "spec": {"selfSigned": {}},
        }
        certificate = {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": "demo", "namespace": namespace},
            "spec": {
                "secretName": "demo-tls",
                "dnsNames": [f"demo.{namespace}.svc"],
                "issuerRef": {"name": "selfsigned"},
            },
        }
        # failurePolicy Fail: both are created only once the webhook (the stand-in, through the proxy) admits them.
        poll(
            lambda: api.create(f"/apis/cert-manager.io/v1/namespaces/{namespace}/issuers", issuer),
            timeout=60,
            what="the Issuer to be admitted",
        )
        api.create(f"/apis/cert-manager.io/v1/namespaces/{namespace}/certificates", certificate)
        with open(Path(state.state_dir) / "logs" / "standin.log", "rb") as f:
            f.seek(standin_since)
            standin_log = f.read().decode(errors="replace")
        for kind, name in (("Issuer", "selfsigned"), ("Certificate", "demo")):
            assert f"allowed CREATE cert-manager.io/{kind} {namespace}/{name}" in standin_log, standin_log[-2000:]
        assert "→ Service cert-manager/cert-manager-webhook port 443 → pod cert-manager-webhook-" in runtime_log(
            state, since
        )
        poll(
            lambda: any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in (
                    (api.get(f"/apis/cert-manager.io/v1/namespaces/{namespace}/certificates/demo") or {})
                    .get("status", {})
                    .get("conditions")
                    or []
                )
            ),
            timeout=30,
            what="the Certificate to become Ready",
        )
        assert_loopback_only(state)
    finally:
        # The session's cluster is shared: later tests install cert-manager as their own app (Helm's too). kfctl
        # keeps a CRD while objects of its kind that it did not apply exist: ours go first.
        for plural, name in (("certificates", "demo"), ("issuers", "selfsigned")):
            with contextlib.suppress(ApiError):
                api.delete(f"/apis/cert-manager.io/v1/namespaces/{namespace}/{plural}/{name}")
        run = kfctl("delete", str(app), "--wait-timeout", "3m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        assert not [e for e in run.events if e["event"] == "Kept"], run.explain()
        if not kubeflow_existed:
            api.delete("/api/v1/namespaces/kubeflow")
            poll(lambda: api.get("/api/v1/namespaces/kubeflow") is None, timeout=120, what="namespace kubeflow gone")
