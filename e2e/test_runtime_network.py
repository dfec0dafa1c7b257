"""Pod networking in the process runtime (kfctl_testbed/podnet.py, issue 48 item 1), and the host left as it was
(issue 51 row 21), on a cluster of the module's own.

The real training operator, installed by kfctl, serves its metrics behind the Service `training-operator`. Clients
run inside the operator pod's own network and mount namespaces (nsenter: the pod's resolv.conf, its routes and
nftables rule), each with its own resolver: Python's (glibc), Go's (kubectl) and Node's. They reach the Service by
its four DNS names and by its cluster IP; nothing outside the cluster resolves or has a route. Pods made from the
operator's own pod spec get the kubelet's Service environment variables of their namespace (none with
enableServiceLinks: false, and none of a Service made after they started). The runtime's own connections on the host
are loopback only. Last, `e2e/cluster down`, and the host's directories the runtime could touch and its mount table
are as they were before `e2e/cluster up` (the runtime once left /var/run/secrets/kubernetes.io/serviceaccount
behind, and the Kubeflow SDK took the host for a pod).
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apply_support import kfctl
from harness import Cluster, poll, run_cluster
from kfctl_testbed import kube_rest, localcluster, podnet
from kfctl_testbed.kube_rest import JSON
from runtime_support import OPERATOR_SELECTOR, live_operator_pods, runtime_pid

pytestmark = pytest.mark.e2e

NS = "kubeflow"
SERVICE = "training-operator"
NAMES = (SERVICE, f"{SERVICE}.{NS}", f"{SERVICE}.{NS}.svc", f"{SERVICE}.{NS}.svc.cluster.local")
# What the runtime could touch on the host: mountPaths (missing ones included), its stage, the kubelet's usual
# places. (/tmp's top level is left out: other tests' files come and go there; its webhook-cert path is checked.)
WALKED = {"/": 1, "/run": 5, "/var/lib": 2, "/etc": 2, "/mnt": 1, "/srv": 1, "/media": 1, "/opt": 1}
CHECKED = ("/var/run/secrets", "/tmp/k8s-webhook-server", "/var/lib/kubelet")


def host_view() -> tuple[set[str], list[str]]:
    """The paths under WALKED (to their depth, links not followed) and CHECKED, and the host's mount points."""
    seen = {p for p in CHECKED if os.path.lexists(p)}
    for top, depth in WALKED.items():
        base = len(Path(top).parts)
        for root, dirs, files in os.walk(top):
            seen.update(os.path.join(root, name) for name in [*dirs, *files])  # one level below root
            if len(Path(root).parts) - base + 1 >= depth:
                dirs.clear()
    seen = {p for p in seen if not p.startswith(("/proc", "/sys", "/dev", "/tmp"))}
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return seen, mounts


@pytest.fixture(scope="module")
def host_before() -> tuple[set[str], list[str]]:
    return host_view()


@pytest.fixture(scope="module")
def installed(host_before: tuple[set[str], list[str]], module_cluster: Cluster, tmp_path_factory: Any) -> Cluster:
    """The training operator installed by kfctl on the module's cluster (after the host was looked at)."""
    app = tmp_path_factory.mktemp("network") / "app"
    for args in (
        ("init", str(app), "--platform", "kind", "--components", "training-operator"),
        ("generate", str(app)),
        ("apply", str(app), "--wait-timeout", "4m"),
    ):
        run = kfctl(*args, kubeconfig=module_cluster.kubeconfig)
        assert run.code == 0, run.explain()
    return module_cluster


@pytest.fixture(scope="module")
def net_api(installed: Cluster) -> Iterator[kube_rest.Client]:
    client = kube_rest.Client(installed.kubeconfig)
    yield client
    client.close()


def runtime_dir(cluster: Cluster) -> Path:
    assert cluster.state_dir is not None
    return localcluster.runtime_dir(cluster.state_dir)


def process_of(cluster: Cluster, pod: str, container: str = "training-operator") -> int:
    """The pid the runtime runs for `pod` (once it has started it, in a network namespace of its own)."""
    log = runtime_dir(cluster) / f"{NS}_{pod}_{container}.log"

    def started() -> int | None:
        text = log.read_text(errors="replace") if log.exists() else ""
        if "--- runtime: start #" not in text:
            return None
        pid = runtime_pid(text)
        own = os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
        return pid if own and Path(f"/proc/{pid}/exe").exists() else None

    pid: int = poll(started, timeout=90, what=f"the runtime to start {NS}/{pod}")
    return pid


def in_pod(pid: int, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`argv` inside the pod's network and mount namespaces: its routes, nftables rule and resolv.conf."""
    return subprocess.run(
        ["nsenter", "-t", str(pid), "-n", "-m", *argv], capture_output=True, text=True, timeout=timeout, check=False
    )


def operator_pid(cluster: Cluster, api: kube_rest.Client) -> int:
    [pod] = live_operator_pods(api)
    return process_of(cluster, pod["metadata"]["name"])


def cluster_ip(api: kube_rest.Client) -> str:
    service = api.get(f"/api/v1/namespaces/{NS}/services/{SERVICE}")
    assert service is not None
    ip: str = service["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(podnet.SERVICE_CIDR)
    return ip


PYTHON_CLIENT = """
import json, socket, sys, urllib.request
names, ip, outside = json.loads(sys.argv[1])
result = {"names": {n: sorted({a[4][0] for a in socket.getaddrinfo(n, 8080, type=socket.SOCK_STREAM)}) for n in names}}
with urllib.request.urlopen(f"http://{ip}:8080/metrics", timeout=10) as r:
    result["cluster_ip"] = [r.status, "controller_runtime_" in r.read().decode()]
def dial(host, port):
    try:
        socket.create_connection((host, port), timeout=5).close()
        return "connected"
    except socket.gaierror as e:
        return f"gaierror {e.errno}"
    except OSError as e:
        return f"errno {e.errno}"
result["outside"] = {h: dial(h, 80) for h in outside}
print(json.dumps(result))
"""


def host_addresses() -> list[str]:
    """The host's own IPv4 addresses off loopback (a pod must not reach them either)."""
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=True).stdout
    return [f.split()[3].split("/")[0] for f in out.splitlines() if not f.split()[3].startswith("127.")]


def test_a_pod_reaches_a_service_by_its_dns_names_and_cluster_ip_with_python_go_and_node(
    installed: Cluster, net_api: kube_rest.Client
) -> None:
    pid, ip = operator_pid(installed, net_api), cluster_ip(net_api)
    resolv = in_pod(pid, "cat", "/etc/resolv.conf")
    assert resolv.stdout == podnet.resolv_conf(NS), resolv.stderr
    outside = ["example.com", "192.0.2.1", *host_addresses()]
    python = in_pod(pid, sys.executable, "-c", PYTHON_CLIENT, json.dumps([NAMES, ip, outside]))
    assert python.returncode == 0, python.stderr
    result = json.loads(python.stdout)
    print("python (glibc's resolver):", result)
    assert result["names"] == {name: [ip] for name in NAMES}
    assert result["cluster_ip"] == [200, True]
    # NXDOMAIN (EAI_NONAME), and no route (ENETUNREACH) to anything off the cluster's ranges, the host's own too
    assert result["outside"] == {"example.com": "gaierror -2", **{a: "errno 101" for a in outside[1:]}}

    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (Go's resolver) is not on PATH"
    for name in (SERVICE, f"{SERVICE}.{NS}.svc.cluster.local"):
        go = in_pod(pid, kubectl, "--kubeconfig=/dev/null", f"--server=http://{name}:8080", "get", "--raw", "/metrics")
        assert go.returncode == 0 and "controller_runtime_" in go.stdout, go.stderr
        print(f"go (kubectl) http://{name}:8080/metrics: {len(go.stdout)} bytes")

    node = shutil.which("node")
    assert node, "node is not on PATH"
    script = (
        "require('http').get(process.argv[1], r => { let b = ''; r.on('data', d => b += d); "
        "r.on('end', () => console.log(r.statusCode, b.includes('controller_runtime_'))); })"
        ".on('error', e => { console.log('error', e.code); process.exit(1); })"
    )
    for name in (f"{SERVICE}.{NS}", f"{SERVICE}.{NS}.svc"):
        js = in_pod(pid, node, "-e", script, f"http://{name}:8080/metrics")
        assert js.stdout.strip() == "200 true", js.stdout + js.stderr
        print(f"node http://{name}:8080/metrics:", js.stdout.strip())


def probe_pod(operator: JSON, name: str, *, links: bool) -> JSON:
    """A pod of the operator's own spec (a second operator, which waits for the lease)."""
    spec = {k: v for k, v in operator["spec"].items() if k not in ("nodeName", "priority")}
    spec["enableServiceLinks"] = links
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_a_pod_gets_the_service_variables_of_its_namespace_as_a_kubelet_gives_them(
    installed: Cluster, net_api: kube_rest.Client
) -> None:
    ip = cluster_ip(net_api)
    [operator] = net_api.list(f"/api/v1/namespaces/{NS}/pods", query={"labelSelector": OPERATOR_SELECTOR})
    names = {True: "netprobe-links", False: "netprobe-no-links"}
    for links, name in names.items():
        net_api.create(f"/api/v1/namespaces/{NS}/pods", probe_pod(operator, name, links=links))
    try:
        pids = {links: process_of(installed, name) for links, name in names.items()}
        late = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "late-service", "namespace": NS},
            "spec": {"selector": {"app": "none"}, "ports": [{"port": 80}]},
        }
        net_api.create(f"/api/v1/namespaces/{NS}/services", late)
        envs = {links: environ(pid) for links, pid in pids.items()}
    finally:
        for name in names.values():
            net_api.delete(f"/api/v1/namespaces/{NS}/pods/{name}")
        net_api.delete(f"/api/v1/namespaces/{NS}/services/late-service")
    expected = {
        "TRAINING_OPERATOR_SERVICE_HOST": ip,
        "TRAINING_OPERATOR_SERVICE_PORT": "8080",
        "TRAINING_OPERATOR_SERVICE_PORT_MONITORING_PORT": "8080",
        "TRAINING_OPERATOR_SERVICE_PORT_WEBHOOK_SERVER": "443",
        "TRAINING_OPERATOR_PORT": f"tcp://{ip}:8080",
        "TRAINING_OPERATOR_PORT_8080_TCP": f"tcp://{ip}:8080",
        "TRAINING_OPERATOR_PORT_8080_TCP_PROTO": "tcp",
        "TRAINING_OPERATOR_PORT_8080_TCP_PORT": "8080",
        "TRAINING_OPERATOR_PORT_8080_TCP_ADDR": ip,
        "TRAINING_OPERATOR_PORT_443_TCP": f"tcp://{ip}:443",
        "TRAINING_OPERATOR_PORT_443_TCP_PROTO": "tcp",
        "TRAINING_OPERATOR_PORT_443_TCP_PORT": "443",
        "TRAINING_OPERATOR_PORT_443_TCP_ADDR": ip,
    }
    for links, env in envs.items():
        services = {k: v for k, v in env.items() if "_SERVICE_" in k or "_PORT" in k}
        assert not any(k.startswith("LATE_SERVICE_") for k in env), "a Service made after the pod started"
        assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1", "the API server, on loopback, always"
        operator_vars = {k: v for k, v in services.items() if k.startswith("TRAINING_OPERATOR_")}
        assert operator_vars == (expected if links else {}), f"enableServiceLinks {links}"


def test_the_runtimes_own_connections_on_the_host_are_loopback_only(installed: Cluster) -> None:
    """Every TCP socket of the runtime's in the host's network namespace is bound to, or connected to, 127.0.0.0/8."""
    state = localcluster.State.load(installed.state_dir) if installed.state_dir else None
    runtime = next(p for p in (state.procs if state else []) if p.name == "runtime")
    inodes = set()
    for fd in Path(f"/proc/{runtime.pid}/fd").iterdir():
        with_target = os.readlink(fd) if fd.is_symlink() else ""
        if with_target.startswith("socket:["):
            inodes.add(with_target[8:-1])
    addresses = []
    for line in Path(f"/proc/{runtime.pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[9] in inodes:
            for hexaddr in (fields[1], fields[2]):
                ip = ipaddress.IPv4Address(bytes.fromhex(hexaddr.split(":")[0])[::-1])
                addresses.append(str(ip))
    assert addresses, "the runtime has no TCP socket on the host (its API client, its egress proxy)"
    assert {a for a in addresses if not (a.startswith("127.") or a == "0.0.0.0")} == set()


def test_cluster_down_leaves_the_host_as_it_found_it(
    host_before: tuple[set[str], list[str]], installed: Cluster
) -> None:
    during = host_view()[0]
    assert during - host_before[0] == set(), "made on the host while the cluster ran"
    down = run_cluster("down", "--state-dir", str(installed.state_dir))
    assert down.returncode == 0, down.stderr
    after, mounts = host_view()
    assert after - host_before[0] == set()
    assert mounts == host_before[1]
