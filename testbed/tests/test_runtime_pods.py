"""The process runtime end to end, without an API server: its loop (reconcile → volumes → the prelude's namespaces
→ the relay and the pod network → the process) runs two pods whose "binaries" are scripts, against objects held
in memory. A server pod serves HTTP behind a Service; a client pod, whose volumes go where the host has nothing
(/var/run/secrets/kubernetes.io/serviceaccount, /kfctl-e2e-out: a new root, chrooted), writes what it sees: the
Service's variables, its resolv.conf, the Service by its four DNS names and its cluster IP, and nothing outside the
cluster. The host has none of those paths, before, while the pods run and after. Root only, as the runtime."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from kfctl_testbed import runtime
from kfctl_testbed.kube_rest import JSON
from kfctl_testbed.poll import poll

NS = "kubeflow"
SERVER_IMAGE = "ghcr.io/kubeflow/kubeflow/kfam:v1.10.0"
CLIENT_IMAGE = "ghcr.io/kubeflow/kubeflow/profile-controller:v1.10.0"
OUT = "/kfctl-e2e-out-{tag}"
SA = "/var/run/secrets/kubernetes.io/serviceaccount"

SERVER = """#!/usr/bin/python3
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"kfam " + self.path.encode())
http.server.HTTPServer(("", 8081), H).serve_forever()
"""

CLIENT = """#!/usr/bin/python3
import json, os, socket, sys, time, urllib.request
out = sys.argv[1]
names = ["profiles-kfam", "profiles-kfam.kubeflow", "profiles-kfam.kubeflow.svc",
         "profiles-kfam.kubeflow.svc.cluster.local"]
def attempt(f):
    try:
        return f()
    except socket.gaierror as e:
        return f"gaierror {e.errno}"
    except OSError as e:
        return f"errno {e.errno}"
def get(host):
    with urllib.request.urlopen(f"http://{host}:8081/x", timeout=10) as r:
        return r.read().decode()
def dial(host):
    socket.create_connection((host, 80), timeout=5).close()
    return "connected"
result = {
    "env": {k: v for k, v in os.environ.items() if "_SERVICE_" in k or "_PORT" in k},
    "resolv": open("/etc/resolv.conf").read(),
    "token": open(os.environ["SA"] + "/token").read(),
    "names": {n: attempt(lambda: sorted({a[4][0] for a in socket.getaddrinfo(n, 8081, type=socket.SOCK_STREAM)}))
              for n in names},
    "by_name": attempt(lambda: get("profiles-kfam")),
    "by_ip": attempt(lambda: get(os.environ["PROFILES_KFAM_SERVICE_HOST"])),
    "outside": {h: attempt(lambda: dial(h)) for h in ("example.com", "192.0.2.1", "10.96.9.9")},
}
api = (os.environ["KUBERNETES_SERVICE_HOST"], int(os.environ["KUBERNETES_SERVICE_PORT"]))
with socket.create_connection(api, timeout=10) as c:
    result["api_server"] = c.recv(100).decode()
open(out + "/result.json.tmp", "w").write(json.dumps(result))
os.rename(out + "/result.json.tmp", out + "/result.json")
time.sleep(600)
"""


def pod(
    name: str, image: str, labels: dict[str, str], volumes: list[JSON], mounts: list[JSON], args: list[str]
) -> JSON:
    return {
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "labels": labels},
        "spec": {
            "nodeName": "kwok-node-0",
            "volumes": volumes,
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "args": args,
                    "env": [{"name": "SA", "value": SA}],
                    "ports": [{"name": "http", "containerPort": 8081}],
                    "volumeMounts": mounts,
                }
            ],
        },
        "status": {"phase": "Running", "podIP": f"10.244.0.{len(name)}"},
    }


class Cluster:
    """The objects the runtime reads and the two calls it writes (pod status, token requests) in memory."""

    host = "127.0.0.1"

    def __init__(self, objects: dict[str, list[JSON]], port: int) -> None:
        self.objects = objects
        self.port = port

    def list(self, path: str, **kwargs: Any) -> list[JSON]:
        kind = path.rsplit("/", 1)[1]
        items = self.objects.get(kind, [])
        if "/namespaces/" in path:
            items = [o for o in items if o["metadata"]["namespace"] == path.split("/")[4]]
        selector = (kwargs.get("query") or {}).get("labelSelector")
        if selector:
            wanted = dict(term.split("=", 1) for term in selector.split(","))
            items = [o for o in items if all(o["metadata"].get("labels", {}).get(k) == v for k, v in wanted.items())]
        return items

    def get(self, path: str, **kwargs: Any) -> JSON | None:
        parts = path.split("/")
        if len(parts) < 7 or parts[3] != "namespaces":
            return None
        return next(
            (
                o
                for o in self.objects.get(parts[5], [])
                if [o["metadata"]["namespace"], o["metadata"]["name"]] == [parts[4], parts[6]]
            ),
            None,
        )

    def request(self, *args: Any, **kwargs: Any) -> JSON:
        return {}

    def create(self, path: str, body: JSON) -> JSON:
        return {"status": {"token": "a-token"}}


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root, as the runtime itself does")
def test_the_runtimes_pods_reach_a_service_and_leave_nothing_on_the_host(tmp_path: Path) -> None:
    bin_dir = tmp_path / "cache" / "operators" / "bin"
    bin_dir.mkdir(parents=True)
    for image, script in ((SERVER_IMAGE, SERVER), (CLIENT_IMAGE, CLIENT)):
        binary = bin_dir / str(runtime.binary_name(image))
        binary.write_text(script)
        binary.chmod(0o755)
    out = OUT.format(tag=tmp_path.name)
    watched = [SA, out, "/var/run/secrets", "/srv/overlay0"]
    before = [p for p in watched if os.path.lexists(p)]
    api_server = socket.create_server(("127.0.0.1", 0))  # what the relay leads to: "the API server", on the host
    threading.Thread(target=lambda: api_server.accept()[0].sendall(b"api server\n"), daemon=True).start()
    secret = {"metadata": {"name": "sa", "namespace": NS}, "data": {"token": "YS10b2tlbg=="}}  # "a-token"
    cluster = Cluster(
        {
            "nodes": [{"metadata": {"name": "kwok-node-0", "annotations": {runtime.KWOK_NODE_ANNOTATION: "fake"}}}],
            "pods": [
                pod("kfam", SERVER_IMAGE, {"app": "kfam"}, [], [], []),
                pod(
                    "client",
                    CLIENT_IMAGE,
                    {"app": "client"},
                    [{"name": "out", "emptyDir": {}}, {"name": "sa", "secret": {"secretName": "sa"}}],
                    [{"name": "out", "mountPath": out}, {"name": "sa", "mountPath": SA, "readOnly": True}],
                    [out],
                ),
            ],
            "services": [
                {
                    "metadata": {"name": "profiles-kfam", "namespace": NS},
                    "spec": {
                        "clusterIP": "10.96.7.1",
                        "selector": {"app": "kfam"},
                        "ports": [{"name": "http", "port": 8081, "targetPort": "http", "protocol": "TCP"}],
                    },
                }
            ],
            "secrets": [secret],
        },
        api_server.getsockname()[1],
    )
    rt = runtime.Runtime(cluster, bin_dir=bin_dir, state_dir=tmp_path / "state", read=cluster)  # type: ignore[arg-type]
    result_file = tmp_path / "state" / "pods" / f"{NS}_client" / "volumes" / "out" / "result.json"

    def result() -> JSON | None:
        rt.reconcile()
        return json.loads(result_file.read_text()) if result_file.exists() else None

    try:
        seen: JSON = poll(result, timeout=60, what="the client pod's result", interval=0.5)
        during = [p for p in watched if os.path.lexists(p)]
    finally:
        rt.stop_all()
        api_server.close()
    logs = {p.name: p.read_text() for p in (tmp_path / "state").glob("*.log")}
    assert seen["names"] == {
        name: ["10.96.7.1"]
        for name in (
            "profiles-kfam",
            "profiles-kfam.kubeflow",
            "profiles-kfam.kubeflow.svc",
            "profiles-kfam.kubeflow.svc.cluster.local",
        )
    }, logs
    assert seen["by_name"] == "kfam /x" and seen["by_ip"] == "kfam /x", logs
    # NXDOMAIN; no route off the cluster's ranges; a cluster IP with nothing behind it: accepted, then closed
    assert seen["outside"] == {"example.com": "gaierror -2", "192.0.2.1": "errno 101", "10.96.9.9": "connected"}
    assert seen["api_server"] == "api server\n"  # KUBERNETES_SERVICE_HOST:PORT, the relay to the host's loopback
    assert seen["env"]["PROFILES_KFAM_SERVICE_HOST"] == "10.96.7.1"
    assert seen["env"]["PROFILES_KFAM_PORT_8081_TCP"] == "tcp://10.96.7.1:8081"
    assert seen["env"]["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert seen["resolv"].startswith("search kubeflow.svc.cluster.local svc.cluster.local cluster.local\n")
    assert seen["token"] == "a-token"
    assert during == before and [p for p in watched if os.path.lexists(p)] == before
    assert socket.gethostname() != "client"  # the pod's hostname stayed in its own UTS namespace
