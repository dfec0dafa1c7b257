"""`kubectl port-forward` to the processes the runtime runs. TEST CODE: kfctl never imports it.

The API server serves a pod's `portforward` subresource by calling the kubelet of its node: kwok's, on 127.0.0.1.
kwok forwards a pod's port as its `PortForward` object (kwok.x-k8s.io/v1alpha1, one per pod, named as the pod)
says: to `target.address:target.port`. `e2e/cluster up` starts kwok with `--enable-crds=PortForward` and installs
that kind's CRD first (`CRD`, a definition of ours: kwok's own lives in its module's source); the runtime
(runtime.py) keeps, for each pod it runs, a `PortForward` naming every TCP port its processes listen on (read from
/proc/<pid>/net/tcp{,6} of each process, i.e. in the pod's network namespace) and, for each, a listener on the
host's 127.0.0.1 that pipes each connection to that port inside the pod (`HostRelay`). The object is owned by
the pod, so the garbage collector deletes it with the pod; the runtime deletes it too when it stops the pod.

So `kubectl port-forward pod/<p> 8080` and `svc/<s> 8080:80` (kubectl picks the pod and targetPort) reach the
process, whatever the port, declared in the pod spec or not. A pod of kwok's (no process) has no PortForward: kwok
answers `no forward found for port …`, and the port-forward fails as it would with no container listening.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from kfctl_testbed import kube_rest
from kfctl_testbed.kube_rest import JSON, ApiError
from kfctl_testbed.netns import connect_in_netns, pipe

log = logging.getLogger("runtime")

GROUP = "kwok.x-k8s.io"
PATH = f"/apis/{GROUP}/v1alpha1"
LISTEN_STATE = "0A"  # TCP_LISTEN in /proc/net/tcp
DIAL_SECONDS = 5.0

# The PortForward kind as kwok v0.7.0 reads it (pkg/apis/v1alpha1: spec.forwards[].ports, .target.port/.address,
# .command); kwok validates nothing more, so neither does this schema.
CRD: JSON = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"portforwards.{GROUP}"},
    "spec": {
        "group": GROUP,
        "names": {
            "kind": "PortForward",
            "listKind": "PortForwardList",
            "plural": "portforwards",
            "singular": "portforward",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


def listening_ports(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """The TCP ports process `pid`'s network namespace listens on (IPv4 and IPv6)."""
    ports = set()
    for name in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in (proc / str(pid) / "net" / name).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 3 and fields[3] == LISTEN_STATE:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


class HostRelay:
    """127.0.0.1:<ephemeral> on the host: each connection is piped to 127.0.0.1:`port` inside the network namespace
    of the process `pid_of()` names now (a restarted process has a new pid and namespace)."""

    def __init__(self, pid_of: Callable[[], int | None], port: int, *, name: str) -> None:
        self.pid_of = pid_of
        self.target = port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        self.closed = False
        threading.Thread(target=self._accept, name=f"port-forward {name}", daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                outer, _ = self.server.accept()
            except OSError:
                return
            pid = self.pid_of()
            try:
                if pid is None:
                    raise OSError("no process runs for it now")
                inner = connect_in_netns(pid, ("127.0.0.1", self.target), timeout=DIAL_SECONDS)
            except OSError as e:
                log.warning("port-forward to port %d: %s", self.target, e)
                outer.close()
                continue
            inner.settimeout(None)
            for src, dst in ((outer, inner), (inner, outer)):
                threading.Thread(target=pipe, args=(src, dst), daemon=True).start()

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()


def port_forward(pod: JSON, relays: dict[int, HostRelay]) -> JSON:
    """The PortForward object for `pod`: each port to its host relay."""
    meta = pod["metadata"]
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "PortForward",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}],
        },
        "spec": {
            "forwards": [
                {"ports": [port], "target": {"address": "127.0.0.1", "port": relays[port].port}}
                for port in sorted(relays)
            ]
        },
    }


class PodPorts:
    """The runtime's part: relays and a PortForward object per pod it runs, following what its processes listen on."""

    def __init__(self, api: kube_rest.Client, *, skip: set[int]) -> None:
        self.api = api
        self.skip = skip  # ports that are the runtime's own in every pod (the API server's relay)
        self.relays: dict[str, dict[int, HostRelay]] = {}  # "<ns>/<pod>" → port → relay
        self.published: dict[str, JSON] = {}  # "<ns>/<pod>" → the spec last written
        self.served = True  # False once the API server said it has no PortForward kind (a cluster of before)

    def sync(self, pod: JSON, pids: dict[str, Callable[[], int | None]]) -> None:
        """`pids`: container → a getter of its process's pid (None while none runs, or before it has its netns)."""
        meta = pod["metadata"]
        ref = f"{meta['namespace']}/{meta['name']}"
        relays = self.relays.setdefault(ref, {})
        for container, pid_of in pids.items():
            pid = pid_of()
            if pid is None:
                continue
            for port in sorted(listening_ports(pid) - self.skip - set(relays)):
                relays[port] = HostRelay(pid_of, port, name=f"{ref} {container}:{port}")
                log.info(
                    "pod %s: port %d (container %s) forwarded from 127.0.0.1:%d",
                    ref,
                    port,
                    container,
                    relays[port].port,
                )
        if not relays:
            return
        wanted = port_forward(pod, relays)
        if not self.served or self.published.get(ref) == wanted["spec"]:
            return
        path = f"{PATH}/namespaces/{meta['namespace']}/portforwards"
        try:
            existing = self.api.get(f"{path}/{meta['name']}")
            if existing is None:
                self.api.create(path, wanted)
            else:
                wanted["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
                self.api.replace(f"{path}/{meta['name']}", wanted)
        except ApiError as e:
            if e.status != 404 or "portforwards" not in e.body:
                raise
            self.served = False
            log.warning("no PortForward kind served (a cluster started before it was installed): no port-forward")
            return
        self.published[ref] = wanted["spec"]

    def forget(self, ref: str) -> None:
        for relay in self.relays.pop(ref, {}).values():
            relay.close()
        if self.published.pop(ref, None) is not None:
            namespace, name = ref.split("/")
            with contextlib.suppress(ApiError):
                self.api.delete(f"{PATH}/namespaces/{namespace}/portforwards/{name}")

    def close(self) -> None:
        for relays in self.relays.values():
            for relay in relays.values():
                relay.close()
        self.relays.clear()
