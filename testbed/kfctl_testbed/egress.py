"""The API server's egress proxy for the local cluster: the way in to the processes the runtime runs. TEST CODE.

kube-apiserver dials everything of its `cluster` and `controlplane` egress selections through this proxy
(e2e/cluster up writes an EgressSelectorConfiguration, `selector_config`): `cluster` is admission and
CRD-conversion webhooks given as a Service, aggregated APIs, the kubelet's port for logs/exec/port-forward (kwok's,
on 127.0.0.1), and the pods/services/nodes `proxy` subresources; `controlplane` is webhooks given as a `url`
(127.0.0.1 in our tests), and would be authentication/authorization/audit webhooks and tracing, which this cluster
does not configure. Each dial is one mutually authenticated TLS connection to 127.0.0.1:<egress port> (the cluster
CA signs both ends: kube-apiserver 1.33 cannot speak HTTP CONNECT over plain TCP) carrying `CONNECT <ip>:<port>`;
`route` decides where it leads:

- a loopback address: dialled as it is (kwok's kubelet port; the stand-in; a test's `url` webhook); the literal
  name `localhost` counts as 127.0.0.1 (never looked up: no other name is resolved, DNS included);
- a Service's cluster IP and port: the Service's selector picks a Running pod; the Service port's targetPort
  (a number, or a name looked up in the pod's container ports) is dialled at 127.0.0.1 inside the network namespace
  of the process the runtime runs for that container (`connect_in_netns`), or, for a Service the stand-in plays
  (cert-manager's webhook: its live Lease names the address, see standin.webhook_addresses; only a loopback
  IP:port is taken from it), at the stand-in's port;
- a pod's IP and port (the API server's service and pod `proxy` subresources dial an endpoint, not the cluster
  IP): 127.0.0.1:<port> inside the network namespace of the process the runtime runs for the container that
  declares that port (`pod_backend`);
- anything else: refused with an HTTP error whose status line says why (kube-apiserver quotes it in its own
  error), and logged. It is never dialled: there is no code path here that connects to a non-loopback address.

Bytes are then piped both ways untouched, so TLS inside the tunnel is end to end: the API server verifies the
operator's own serving certificate for <service>.<namespace>.svc against the webhook's caBundle.

It runs inside runtime.py (which knows the pids) on a thread of its own with an asyncio loop; routing and
dialling happen on worker threads (API lookups block, and entering a network namespace is per thread). It does
not load-balance (the first Running pod with a process wins), routes a pod IP (10.244.0.0/16, kwok's) only to a
process the runtime runs, and follows a Service without a selector (`kubernetes`) only to a loopback endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import socket
import ssl
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kfctl_testbed import informer, kube_rest, pki, standin
from kfctl_testbed.kube_rest import JSON
from kfctl_testbed.netns import connect_in_netns

log = logging.getLogger("runtime")

LOOPBACK = "127.0.0.1"
# The TLS material in the cluster's pki dir: the proxy's serving certificate (SAN 127.0.0.1) and the client
# certificate kube-apiserver presents to it, both signed by the cluster CA (ca.crt), which each side trusts.
SERVER_CERT, SERVER_KEY = "egress-proxy.crt", "egress-proxy.key"
CLIENT_CERT, CLIENT_KEY = "egress-client.crt", "egress-client.key"
DIAL_SECONDS = 5.0
HEADER_SECONDS = 10.0
MAX_HEADER_BYTES = 8192

# (namespace, pod, pod uid, container) → the pid of the process the runtime runs for it, or None.
PidLookup = Callable[[str, str, str, str], "int | None"]


@dataclass(frozen=True)
class Refusal:
    status: int  # 403: not ours to dial at all; 502: a Service with no process behind it (yet)
    reason: str


@dataclass(frozen=True)
class Backend:
    """Where a tunnel leads: port `port` on the loopback of the network namespace of process `pid`, or, without a
    pid, at `host` (a loopback address) in ours, the host's."""

    port: int
    what: str
    pid: int | None = None
    host: str = LOOPBACK

    def dial(self) -> socket.socket:
        if self.pid is not None:
            return connect_in_netns(self.pid, (LOOPBACK, self.port), timeout=DIAL_SECONDS)
        if not ipaddress.ip_address(self.host).is_loopback:  # the one guard every host dial passes
            raise OSError(f"refusing to dial {self.host}: not loopback")
        return socket.create_connection((self.host, self.port), timeout=DIAL_SECONDS)


# --- routing ----------------------------------------------------------------------------------------------


def parse_authority(authority: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int] | Refusal:
    host, sep, port = authority.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    try:
        number = int(port)
    except ValueError:
        number = 0
    if not sep or not 0 < number < 65536:
        return Refusal(400, f"CONNECT {authority}: expected <ip>:<port>")
    if host.lower() == "localhost":  # by name, never resolved: what a `url: https://localhost:<port>` webhook dials
        host = LOOPBACK
    try:
        return ipaddress.ip_address(host), number
    except ValueError:
        return Refusal(403, f"CONNECT {authority}: not an IP address; only loopback and Service cluster IPs are served")


def loopback_address(address: str) -> tuple[str, int] | None:
    """(ip, port) when `address` is a loopback IP:port (the stand-in's webhook address); None otherwise."""
    parsed = parse_authority(address)
    if isinstance(parsed, Refusal) or not parsed[0].is_loopback or address.split(":", 1)[0].lower() == "localhost":
        return None
    return str(parsed[0]), parsed[1]


def route(authority: str, *, api: informer.Reader, pid_of: PidLookup) -> Backend | Refusal:
    """Where a CONNECT to `authority` leads, or why it leads nowhere."""
    parsed = parse_authority(authority)
    if isinstance(parsed, Refusal):
        return parsed
    ip, port = parsed
    if ip.is_loopback:
        return Backend(port, f"loopback {authority}", host=str(ip))
    found = service_at(api.list("/api/v1/services"), str(ip), port)
    if found is None:
        pods = api.list("/api/v1/pods", query={"fieldSelector": f"status.podIP={ip}"})
        if pods:
            return pod_backend(pods[0], port, pid_of)
        return Refusal(
            403, f"{ip}:{port} is no Service's cluster IP and port, nor a pod's IP; the proxy dials only loopback"
        )
    service, service_port = found
    meta = service["metadata"]
    ref = f"{meta['namespace']}/{meta['name']}"
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return endpoints_backend(api, service, service_port, f"{ip}:{port}")
    pods = api.list(
        f"/api/v1/namespaces/{meta['namespace']}/pods",
        query={"labelSelector": ",".join(f"{k}={v}" for k, v in sorted(selector.items()))},
    )
    running = [
        p
        for p in pods
        if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]
    if not running:
        return Refusal(502, f"Service {ref} port {port}: no Running pod")
    running.sort(key=lambda p: not _ready(p))  # Ready pods first, as a Service's endpoints would have them
    played = standin.webhook_addresses(api).get(ref)  # a Service the live stand-in plays: its address
    reasons = []
    for pod in running:
        target = target_port(pod, service_port)
        if target is None:
            reasons.append(f"pod {pod['metadata']['name']} has no port {service_port.get('targetPort')!r}")
            continue
        container, number = target
        pod_meta = pod["metadata"]
        what = f"Service {ref} port {port} → pod {pod_meta['name']}"
        pid = pid_of(meta["namespace"], pod_meta["name"], pod_meta["uid"], container) if container else None
        if pid is not None:
            if not in_own_netns(pid):
                reasons.append(f"pod {pod_meta['name']} container {container}: its process is still starting")
                continue
            return Backend(number, f"{what} container {container} (pid {pid}) {LOOPBACK}:{number}", pid=pid)
        if played:
            address = loopback_address(str(played))
            if address is None:
                return Refusal(403, f"{what}: the stand-in's address {played!r} is no loopback IP:port")
            return Backend(address[1], f"{what}, played by the stand-in at {played}", host=address[0])
        images = ", ".join(sorted({c["image"] for c in pod["spec"]["containers"]}))
        reasons.append(f"pod {pod_meta['name']}: no process runs for it (image {images})")
    return Refusal(502, f"Service {ref} port {port}: " + "; ".join(reasons))


def endpoints_backend(api: informer.Reader, service: JSON, service_port: JSON, authority: str) -> Backend | Refusal:
    """A Service without a selector (`default/kubernetes`) leads to its Endpoints' address, when it is loopback (the
    API server advertises 127.0.0.1); any other address is refused, never dialled."""
    meta = service["metadata"]
    ref = f"{meta['namespace']}/{meta['name']}"
    endpoints = api.get(f"/api/v1/namespaces/{meta['namespace']}/endpoints/{meta['name']}") or {}
    for subset in endpoints.get("subsets") or []:
        ports = [p for p in subset.get("ports") or [] if p.get("name", "") == service_port.get("name", "")]
        for address in subset.get("addresses") or []:
            if ports and ipaddress.ip_address(address["ip"]).is_loopback:
                number = int(ports[0]["port"])
                return Backend(
                    number, f"Service {ref} {authority} → endpoint {address['ip']}:{number}", host=address["ip"]
                )
    return Refusal(502, f"Service {ref} has no selector and no loopback endpoint: nothing to route {authority} to")


def pod_backend(pod: JSON, port: int, pid_of: PidLookup) -> Backend | Refusal:
    """A pod's IP and port (what the API server's service and pod `proxy` subresources dial: an endpoint, not the
    cluster IP): 127.0.0.1:<port> in the network namespace of the runtime's process for the container that
    declares the port (or the pod's only container)."""
    meta = pod["metadata"]
    what = f"pod {meta['namespace']}/{meta['name']} port {port}"
    containers = pod["spec"]["containers"]
    declaring = [c["name"] for c in containers if any(p.get("containerPort") == port for p in c.get("ports") or [])]
    names = declaring or ([containers[0]["name"]] if len(containers) == 1 else [])
    if not names:
        return Refusal(502, f"{what}: no container declares it")
    pid = pid_of(meta["namespace"], meta["name"], meta["uid"], names[0])
    if pid is None or not in_own_netns(pid):
        return Refusal(502, f"{what}: no process runs for container {names[0]} (yet)")
    return Backend(port, f"{what} container {names[0]} (pid {pid}) {LOOPBACK}:{port}", pid=pid)


def service_at(services: list[JSON], ip: str, port: int) -> tuple[JSON, JSON] | None:
    """The Service whose cluster IP is `ip` and one of whose TCP ports is `port`, with that port."""
    for service in services:
        spec = service.get("spec") or {}
        if ip not in (spec.get("clusterIPs") or [spec.get("clusterIP")]):
            continue
        for service_port in spec.get("ports") or []:
            if service_port.get("port") == port and service_port.get("protocol", "TCP") == "TCP":
                return service, service_port
    return None


def target_port(pod: JSON, service_port: JSON) -> tuple[str | None, int] | None:
    """(container, port) the Service port leads to in `pod`: a named targetPort is looked up in the containers'
    ports; a number is the container's that declares it (None when none does: any process could serve it)."""
    target = service_port.get("targetPort", service_port["port"])
    containers = pod["spec"]["containers"]
    for container in containers:
        for declared in container.get("ports") or []:
            if declared.get("name") == target or declared.get("containerPort") == target:
                return container["name"], int(declared["containerPort"])
    if isinstance(target, int) or (isinstance(target, str) and target.isdigit()):
        return (containers[0]["name"] if len(containers) == 1 else None), int(target)
    return None


def _ready(pod: JSON) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def in_own_netns(pid: int) -> bool:
    """Whether `pid` already left our network namespace (between fork and `unshare --net` it has not)."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return False


def runtime_pids(runtime: Any) -> PidLookup:
    """A PidLookup over an runtime.py Runtime: its live process for that container of that pod (by uid)."""

    def pid_of(namespace: str, pod: str, uid: str, container: str) -> int | None:
        state = runtime.pods.get(f"{namespace}/{pod}")
        if state is None or state.uid != uid:
            return None
        process = state.processes.get(f"{namespace}_{pod}_{container}")
        proc = process.proc if process is not None else None
        # returncode, not poll(): reaping is the runtime's own thread's business.
        return proc.pid if proc is not None and proc.returncode is None else None

    return pid_of


# --- the proxy --------------------------------------------------------------------------------------------


class EgressProxy:
    """HTTP CONNECT over mutually authenticated TLS on 127.0.0.1:`port`, routed by `router`."""

    def __init__(self, port: int, *, tls: ssl.SSLContext, router: Callable[[str], Backend | Refusal]) -> None:
        self.router = router
        self.tls = tls
        # Bound now, so a taken port fails the caller rather than a thread.
        self.sock = socket.create_server((LOOPBACK, port))
        self.workers = ThreadPoolExecutor(max_workers=16, thread_name_prefix="egress")
        self.loop = asyncio.new_event_loop()
        self.server: asyncio.Server | None = None
        self.start_error: BaseException | None = None
        started = threading.Event()
        threading.Thread(target=self._run, args=(started,), name="egress proxy", daemon=True).start()
        if not started.wait(10) or self.server is None:
            self.close()
            self.sock.close()
            why = repr(self.start_error) if self.start_error is not None else "not serving after 10 s"
            raise RuntimeError(f"egress proxy on {LOOPBACK}:{port} did not start: {why}") from self.start_error

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.server = self.loop.run_until_complete(
                asyncio.start_server(self._serve, sock=self.sock, ssl=self.tls, ssl_handshake_timeout=HEADER_SECONDS)
            )
        except BaseException as e:  # the constructor raises it
            self.start_error = e
            return
        finally:
            started.set()
        self.loop.run_forever()

    def close(self) -> None:
        def stop() -> None:
            if self.server is not None:
                self.server.close()
            self.loop.stop()

        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(stop)
        self.workers.shutdown(wait=False, cancel_futures=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        inner: asyncio.StreamWriter | None = None
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEADER_SECONDS)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, OSError):
                return
            request = head.split(b"\r\n", 1)[0].decode("latin-1")
            method, _, rest = request.partition(" ")
            authority = rest.partition(" ")[0]
            if method != "CONNECT" or len(head) > MAX_HEADER_BYTES:
                await self._refuse(writer, Refusal(405, f"{request!r}: only CONNECT is served"))
                return
            try:
                decision = await loop.run_in_executor(self.workers, self.router, authority)
            except Exception as e:  # the API server restarting, say: the dial fails, the caller retries
                decision = Refusal(502, f"CONNECT {authority}: routing failed: {e}")
            if isinstance(decision, Refusal):
                await self._refuse(writer, decision)
                return
            try:
                sock = await loop.run_in_executor(self.workers, decision.dial)
            except Exception as e:  # OSError, or ValueError etc. from a bad address: the dial fails, never the proxy
                await self._refuse(writer, Refusal(502, f"{decision.what}: {type(e).__name__}: {e}"))
                return
            log.info("egress: CONNECT %s → %s", authority, decision.what)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            sock.settimeout(None)
            sock.setblocking(False)
            inner_reader, inner = await asyncio.open_connection(sock=sock)
            await asyncio.gather(
                _copy(reader, inner, half_close=True),
                # TLS has no half-close (asyncio cannot write_eof on it): the pod's end closes the whole tunnel.
                _copy(inner_reader, writer, half_close=False),
            )
        finally:
            for w in (inner, writer):
                if w is not None:
                    w.close()
                    with contextlib.suppress(Exception):
                        await w.wait_closed()

    @staticmethod
    async def _refuse(writer: asyncio.StreamWriter, refusal: Refusal) -> None:
        log.warning("egress: refused (%d): %s", refusal.status, refusal.reason)
        # The reason is the status line's text: kube-apiserver quotes the status line in its error.
        reason = refusal.reason.replace("\r", " ").replace("\n", " ")
        writer.write(f"HTTP/1.1 {refusal.status} {reason}\r\nContent-Length: 0\r\n\r\n".encode("utf-8", "replace"))
        with contextlib.suppress(Exception):
            await writer.drain()


async def _copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter, *, half_close: bool) -> None:
    try:
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()
    except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
        pass
    finally:
        if half_close and dst.can_write_eof():
            with contextlib.suppress(OSError):
                dst.write_eof()
        else:
            dst.close()


# --- set-up: e2e/cluster up and runtime.py ---------------------------------------------------------------


def write_tls(pki_dir: Path) -> None:
    """The proxy's serving and kube-apiserver's client certificate, signed by the cluster CA in `pki_dir`."""
    ca = pki.KeyPair((pki_dir / "ca.crt").read_bytes(), (pki_dir / "ca.key").read_bytes())
    server = pki.issue(common_name="kfctl-e2e-egress-proxy", ip_addresses=[LOOPBACK], ca=ca)
    client = pki.issue(common_name="kube-apiserver-egress", ca=ca, server=False, client=True)
    for name, data in (
        (SERVER_CERT, server.cert_pem),
        (SERVER_KEY, server.key_pem),
        (CLIENT_CERT, client.cert_pem),
        (CLIENT_KEY, client.key_pem),
    ):
        path = pki_dir / name
        path.touch(mode=0o600)
        path.write_bytes(data)


def selector_config(*, port: int, pki_dir: Path) -> str:
    """kube-apiserver's --egress-selector-config-file: `cluster` and `controlplane` through the proxy (a `url`
    webhook is `controlplane`: k8s.io/apiserver pkg/util/webhook/authentication.go:67); `etcd` is not listed, so
    it dials etcd directly (loopback). The API server's own loopback client uses no egress selection. An http://
    URL would pass validation but crash 1.33 at start (getTLSConfig dereferences the absent tlsConfig), hence TLS."""
    return "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\negressSelections:\n" + "".join(
        f"""\
- name: {name}
  connection:
    proxyProtocol: HTTPConnect
    transport:
      tcp:
        url: https://{LOOPBACK}:{port}
        tlsConfig:
          caBundle: {pki_dir / "ca.crt"}
          clientCert: {pki_dir / CLIENT_CERT}
          clientKey: {pki_dir / CLIENT_KEY}
"""
        for name in ("cluster", "controlplane")
    )


def server_tls(pki_dir: Path) -> ssl.SSLContext:
    """Only clients with a certificate of the cluster CA (kube-apiserver, a test with the admin's) get in."""
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pki_dir / SERVER_CERT, pki_dir / SERVER_KEY)
    tls.load_verify_locations(cafile=str(pki_dir / "ca.crt"))
    tls.verify_mode = ssl.CERT_REQUIRED
    return tls


def start(port: int, *, pki_dir: Path, kubeconfig: str, runtime: Any) -> EgressProxy:
    """The proxy for runtime.py's main(): its own API client (the runtime's loop keeps the other busy)."""
    api = kube_rest.Client(kubeconfig, timeout=10)
    pid_of = runtime_pids(runtime)
    proxy = EgressProxy(port, tls=server_tls(pki_dir), router=lambda target: route(target, api=api, pid_of=pid_of))
    log.info("egress: proxy for kube-apiserver's `cluster` and `controlplane` traffic on %s:%d", LOOPBACK, port)
    return proxy
