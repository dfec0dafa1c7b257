"""kfctl_testbed.podnet: what a pod the runtime runs gets of the cluster's network, as a kubelet, kube-proxy and
cluster DNS give it. Tables for the environment and the DNS answers; then a real network namespace (root, as the
runtime): the client's own resolver (glibc's, through the pod's resolv.conf) finds Services by every name, a
cluster IP leads to the process behind it, and nothing outside the cluster is reachable."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kfctl_testbed import egress, podnet
from kfctl_testbed.kube_rest import JSON
from kfctl_testbed.poll import poll


def service(name: str, ns: str, ip: str, *ports: tuple[str, int], selector: dict[str, str] | None = None) -> JSON:
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "clusterIP": ip,
            "clusterIPs": [ip],
            "ports": [{"name": n, "port": p, "protocol": "TCP"} for n, p in ports],
            **({"selector": selector} if selector else {}),
        },
    }


SERVICES = [
    service("profiles-kfam", "kubeflow", "10.96.7.1", ("http-kfam", 8081)),
    service("ml-pipeline", "kubeflow", "10.96.7.2", ("", 8888), ("grpc", 8887)),
    service("headless", "kubeflow", "None", ("http", 80), selector={"app": "h"}),
    service("autoscaler", "knative-serving", "10.96.9.9", ("http", 8080)),
    service("kubernetes", "default", "10.96.0.1", ("https", 443)),
]
API = {
    "KUBERNETES_SERVICE_HOST": "127.0.0.1",
    "KUBERNETES_SERVICE_PORT": "6443",
    "KUBERNETES_SERVICE_PORT_HTTPS": "6443",
    "KUBERNETES_PORT": "tcp://127.0.0.1:6443",
    "KUBERNETES_PORT_6443_TCP": "tcp://127.0.0.1:6443",
    "KUBERNETES_PORT_6443_TCP_PROTO": "tcp",
    "KUBERNETES_PORT_6443_TCP_PORT": "6443",
    "KUBERNETES_PORT_6443_TCP_ADDR": "127.0.0.1",
}
KUBEFLOW = {
    "PROFILES_KFAM_SERVICE_HOST": "10.96.7.1",
    "PROFILES_KFAM_SERVICE_PORT": "8081",
    "PROFILES_KFAM_SERVICE_PORT_HTTP_KFAM": "8081",
    "PROFILES_KFAM_PORT": "tcp://10.96.7.1:8081",
    "PROFILES_KFAM_PORT_8081_TCP": "tcp://10.96.7.1:8081",
    "PROFILES_KFAM_PORT_8081_TCP_PROTO": "tcp",
    "PROFILES_KFAM_PORT_8081_TCP_PORT": "8081",
    "PROFILES_KFAM_PORT_8081_TCP_ADDR": "10.96.7.1",
    "ML_PIPELINE_SERVICE_HOST": "10.96.7.2",
    "ML_PIPELINE_SERVICE_PORT": "8888",
    "ML_PIPELINE_SERVICE_PORT_GRPC": "8887",
    "ML_PIPELINE_PORT": "tcp://10.96.7.2:8888",
    "ML_PIPELINE_PORT_8888_TCP": "tcp://10.96.7.2:8888",
    "ML_PIPELINE_PORT_8888_TCP_PROTO": "tcp",
    "ML_PIPELINE_PORT_8888_TCP_PORT": "8888",
    "ML_PIPELINE_PORT_8888_TCP_ADDR": "10.96.7.2",
    "ML_PIPELINE_PORT_8887_TCP": "tcp://10.96.7.2:8887",
    "ML_PIPELINE_PORT_8887_TCP_PROTO": "tcp",
    "ML_PIPELINE_PORT_8887_TCP_PORT": "8887",
    "ML_PIPELINE_PORT_8887_TCP_ADDR": "10.96.7.2",
}


@pytest.mark.parametrize(
    ("namespace", "links", "expected"),
    [
        pytest.param("kubeflow", True, {**API, **KUBEFLOW}, id="its-namespaces-services-no-headless-no-other-ns"),
        pytest.param("kubeflow", False, API, id="enableServiceLinks-false-only-kubernetes"),
        pytest.param("nowhere", True, API, id="a-namespace-without-services"),
        pytest.param(
            "knative-serving",
            True,
            {
                **API,
                "AUTOSCALER_SERVICE_HOST": "10.96.9.9",
                "AUTOSCALER_SERVICE_PORT": "8080",
                "AUTOSCALER_SERVICE_PORT_HTTP": "8080",
                "AUTOSCALER_PORT": "tcp://10.96.9.9:8080",
                "AUTOSCALER_PORT_8080_TCP": "tcp://10.96.9.9:8080",
                "AUTOSCALER_PORT_8080_TCP_PROTO": "tcp",
                "AUTOSCALER_PORT_8080_TCP_PORT": "8080",
                "AUTOSCALER_PORT_8080_TCP_ADDR": "10.96.9.9",
            },
            id="knative",
        ),
    ],
)
def test_service_env_is_the_kubelets(namespace: str, links: bool, expected: dict[str, str]) -> None:
    assert podnet.service_env(SERVICES, namespace, links=links, api_host="127.0.0.1", api_port=6443) == expected


class Reader:
    """An informer.Reader over fixed objects."""

    def __init__(self, services: list[JSON], pods: list[JSON]) -> None:
        self.services, self.pods = services, pods

    def get(self, path: str, **kwargs: Any) -> JSON | None:
        parts = path.split("/")  # /api/v1/namespaces/<ns>/services/<name>
        return next(
            (s for s in self.services if [s["metadata"]["namespace"], s["metadata"]["name"]] == [parts[4], parts[6]]),
            None,
        )

    def list(self, path: str, **kwargs: Any) -> list[JSON]:
        return self.services if path.endswith("/services") else self.pods


def pod(name: str, ip: str, phase: str = "Running") -> JSON:
    return {
        "metadata": {"name": name, "namespace": "kubeflow", "labels": {"app": "h"}},
        "status": {"phase": phase, "podIP": ip},
    }


READER = Reader(SERVICES, [pod("h-1", "10.244.0.9"), pod("h-0", "10.244.0.8"), pod("h-2", "10.244.0.7", "Pending")])


def query(name: str, qtype: int = podnet.A, ident: int = 0x1234) -> bytes:
    labels = b"".join(bytes([len(label)]) + label.encode() for label in name.split("."))
    return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + labels + b"\0" + struct.pack("!HH", qtype, 1)


def parse(response: bytes) -> tuple[int, int, list[str]]:
    """(id, rcode, the A records' addresses)."""
    ident, flags, _qd, count = struct.unpack("!HHHH", response[:8])
    _name, _qtype, _qclass, offset = podnet._question(response)
    addresses = []
    for _ in range(count):
        assert response[offset : offset + 2] == b"\xc0\x0c"
        rtype, _rclass, _ttl, length = struct.unpack("!HHIH", response[offset + 2 : offset + 12])
        assert (rtype, length) == (podnet.A, 4)
        addresses.append(socket.inet_ntoa(response[offset + 12 : offset + 16]))
        offset += 16
    assert flags & 0x8000 and flags & 0x0400  # a response, authoritative
    return ident, flags & 0xF, addresses


@pytest.mark.parametrize(
    ("name", "qtype", "rcode", "addresses"),
    [
        pytest.param("profiles-kfam.kubeflow.svc.cluster.local", podnet.A, 0, ["10.96.7.1"], id="a-service"),
        pytest.param("Profiles-KFAM.kubeflow.svc.cluster.local", podnet.A, 0, ["10.96.7.1"], id="any-case"),
        pytest.param("profiles-kfam.kubeflow.svc.cluster.local", podnet.AAAA, 0, [], id="no-aaaa-but-the-name-is"),
        pytest.param("headless.kubeflow.svc.cluster.local", podnet.A, 0, ["10.244.0.8", "10.244.0.9"], id="headless"),
        pytest.param("kubernetes.default.svc.cluster.local", podnet.A, 0, ["10.96.0.1"], id="kubernetes"),
        pytest.param("nothing.kubeflow.svc.cluster.local", podnet.A, 3, [], id="no-such-service"),
        pytest.param(
            "profiles-kfam.kubeflow.svc.cluster.local.kubeflow.svc.cluster.local", podnet.A, 3, [], id="search-tried"
        ),
        pytest.param("profiles-kfam.kubeflow", podnet.A, 3, [], id="short-names-are-the-resolvers-search"),
        pytest.param("example.com", podnet.A, 3, [], id="nothing-outside-the-cluster"),
    ],
)
def test_dns_answers(name: str, qtype: int, rcode: int, addresses: list[str]) -> None:
    response = podnet.answer(query(name, qtype), lambda n: podnet.lookup(n, READER))
    assert response is not None
    assert parse(response) == (0x1234, rcode, addresses)


def test_dns_ignores_responses_and_refuses_garbage() -> None:
    response = podnet.answer(query("example.com"), lambda n: None)
    assert response is not None
    assert podnet.answer(response, lambda n: None) is None  # a response is not answered
    assert podnet.answer(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x05abc", lambda n: None) == (
        b"\x12\x34\x85\x81\x00\x00\x00\x00\x00\x00\x00\x00"  # FORMERR
    )


# --- a real namespace ----------------------------------------------------------------------------------------


@pytest.fixture
def pod_netns(tmp_path: Path) -> Iterator[int]:
    """A process in a network namespace of its own, set up as the runtime's prelude sets it up."""
    ready = tmp_path / "ready"
    script = "; ".join([*podnet.prelude_lines(), f"touch {ready}", "exec sleep 120"])
    proc = subprocess.Popen(["unshare", "--net", "/bin/sh", "-c", script])
    try:
        poll(ready.exists, timeout=10, what="the namespace's prelude")
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root, as the runtime itself does")
def test_a_pod_reaches_a_service_by_name_and_cluster_ip_and_nothing_else(pod_netns: int, tmp_path: Path) -> None:
    served = socket.create_server(("127.0.0.1", 0))  # the process behind the Service, on the host's loopback
    port = served.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = served.accept()
            except OSError:
                return
            conn.sendall(b"backend\n")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    reader = Reader([service("kfam", "kubeflow", "10.96.7.1", ("http", 8081))], [])

    def route(authority: str) -> egress.Backend | egress.Refusal:
        if authority == "10.96.7.1:8081":
            return egress.Backend(port, "the test's server")
        return egress.Refusal(502, f"nothing at {authority}")

    network = podnet.PodNetwork(pod_netns, reader, route, name="test")
    resolv = tmp_path / "resolv.conf"
    resolv.write_text(podnet.resolv_conf("kubeflow"))
    client = """
import socket, sys
for name in ("kfam", "kfam.kubeflow", "kfam.kubeflow.svc", "kfam.kubeflow.svc.cluster.local"):
    print(name, sorted({a[4][0] for a in socket.getaddrinfo(name, 8081, type=socket.SOCK_STREAM)}))
for host in ("kfam", "10.96.7.1"):
    with socket.create_connection((host, 8081), timeout=5) as c:
        print(host, c.recv(100).decode().strip())
for host, port in (("example.com", 80), ("192.0.2.1", 80), ("10.96.7.2", 80)):
    try:
        with socket.create_connection((host, port), timeout=5) as c:
            print(host, "closed" if c.recv(100) == b"" else "answered")
    except OSError as e:
        print(host, type(e).__name__, e.errno)
"""
    try:
        run = subprocess.run(
            [
                "nsenter",
                f"--net=/proc/{pod_netns}/ns/net",
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "/bin/sh",
                "-c",
                f'mount --bind {resolv} /etc/resolv.conf && exec "$@"',
                "client",
                sys.executable,
                "-c",
                client,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        network.close()
        served.close()
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "kfam ['10.96.7.1']",
        "kfam.kubeflow ['10.96.7.1']",
        "kfam.kubeflow.svc ['10.96.7.1']",
        "kfam.kubeflow.svc.cluster.local ['10.96.7.1']",
        "kfam backend",
        "10.96.7.1 backend",
        "example.com gaierror -2",  # NXDOMAIN: EAI_NONAME
        "192.0.2.1 OSError 101",  # ENETUNREACH: no route outside the cluster
        "10.96.7.2 closed",  # a cluster IP with nothing behind it
    ]
