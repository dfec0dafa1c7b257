"""Pod networking for the process runtime (runtime.py): Services by DNS name and cluster IP, loopback only. TEST CODE.

Each process the runtime runs has a network namespace of its own with only `lo`. What a kubelet, kube-proxy and
cluster DNS give a pod, the runtime gives it there, and nothing leaves the namespace but through the runtime:

- routes: the cluster's Service range (localcluster.SERVICE_CIDR) and pod range (POD_CIDR) are *local* routes on
  `lo` (`ip route add local …`, the prelude's), so a connect to a cluster IP or pod IP stays in the namespace;
  anything else has no route (ENETUNREACH at once);
- kube-proxy: an nftables rule (nat, output hook; written over netlink with pyroute2, there is no nft binary)
  redirects TCP to those ranges to 127.0.0.1:PROXY_PORT, where the runtime listens (`ServiceProxy`, a
  netns.Forwarder). It reads the destination the client dialled (SO_ORIGINAL_DST) and routes it as the API
  server's egress proxy does (egress.route): a Service's cluster IP and port → 127.0.0.1:<targetPort> inside the
  network namespace of the process serving it; `kubernetes` → its endpoint, the API server on 127.0.0.1; a pod IP →
  that pod's process. Nothing is dialled outside 127.0.0.0/8 (egress.Backend.dial); a destination with no
  process behind it is closed at once (kube-proxy would reject);
- cluster DNS: /etc/resolv.conf in the pod's mount namespace is the kubelet's (`nameserver 127.0.0.10`, `search
  <ns>.svc.cluster.local svc.cluster.local cluster.local`, `options ndots:5`), and the runtime answers UDP on
  127.0.0.10:53 inside the namespace (`DnsServer`): `<svc>.<ns>.svc.cluster.local` is the Service's cluster IP
  (a headless Service's: its Running pods' IPs), with no AAAA; any other name is NXDOMAIN (there is no upstream
  resolver: nothing outside the cluster resolves). The resolver is the client's own (Go's, glibc's for Node and
  Python), reading the same files a pod's would;
- the Service environment variables (`service_env`): the kubelet's `<SVC>_SERVICE_HOST`, `<SVC>_SERVICE_PORT`,
  `<SVC>_SERVICE_PORT_<NAME>`, `<SVC>_PORT`, `<SVC>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]`, for the Services of
  the pod's namespace known when its process starts, unless `enableServiceLinks: false`; `kubernetes`' always, as
  the API server's loopback address and port (what the runtime's relay serves).

A pod binding PROXY_PORT itself, or 127.0.0.10:53, would clash with the runtime's listeners there.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

from kfctl_testbed import egress, informer
from kfctl_testbed.kube_rest import JSON
from kfctl_testbed.netns import Forwarder, entered, udp_in_netns

log = logging.getLogger("runtime")

SERVICE_CIDR = "10.96.0.0/12"  # localcluster's --service-cluster-ip-range
POD_CIDR = "10.244.0.0/16"  # kwok's pod IPs
CLUSTER_RANGES = (SERVICE_CIDR, POD_CIDR)
PROXY_PORT = 15001
DNS_ADDRESS = "127.0.0.10"
CLUSTER_DOMAIN = "cluster.local"
DNS_TTL = 5
SO_ORIGINAL_DST = 80  # linux/netfilter_ipv4.h
NFT_TABLE = "kfctl-e2e-pod"


def resolv_conf(namespace: str) -> str:
    """The kubelet's resolv.conf for a pod of `namespace` (ClusterFirst), naming the runtime's DNS server."""
    search = f"{namespace}.svc.{CLUSTER_DOMAIN} svc.{CLUSTER_DOMAIN} {CLUSTER_DOMAIN}"
    return f"search {search}\nnameserver {DNS_ADDRESS}\noptions ndots:5\n"


def prelude_lines() -> list[str]:
    """Shell lines of the runtime's prelude, inside the new network namespace: lo up, the cluster's ranges local."""
    return ["ip link set lo up", *(f"ip route add local {cidr} dev lo" for cidr in CLUSTER_RANGES)]


# --- the Service environment variables -------------------------------------------------------------------


def _env_name(name: str) -> str:
    return name.upper().replace("-", "_")


def service_env(services: list[JSON], namespace: str, *, links: bool, api_host: str, api_port: int) -> dict[str, str]:
    """The kubelet's Service variables (pkg/kubelet/envvars FromServices) for a pod of `namespace`: its namespace's
    Services when `links` (enableServiceLinks), `kubernetes` always, as the API server on loopback."""
    chosen: dict[str, JSON] = {}
    if links:
        for service in services:
            if service["metadata"]["namespace"] == namespace:
                chosen[service["metadata"]["name"]] = service
    if "kubernetes" not in chosen:
        chosen["kubernetes"] = {
            "metadata": {"name": "kubernetes", "namespace": "default"},
            "spec": {"clusterIP": api_host, "ports": [{"name": "https", "port": api_port, "protocol": "TCP"}]},
        }
    env: dict[str, str] = {}
    for name in sorted(chosen):
        spec = chosen[name].get("spec") or {}
        ip, ports = spec.get("clusterIP"), spec.get("ports") or []
        if not ip or ip == "None" or not ports:
            continue
        prefix = _env_name(name)
        env[f"{prefix}_SERVICE_HOST"] = ip
        env[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
        for port in ports:
            if port.get("name"):
                env[f"{prefix}_SERVICE_PORT_{_env_name(port['name'])}"] = str(port["port"])
        for i, port in enumerate(ports):
            protocol = port.get("protocol") or "TCP"
            url = f"{protocol.lower()}://{ip}:{port['port']}"
            if i == 0:
                env[f"{prefix}_PORT"] = url
            each = f"{prefix}_PORT_{port['port']}_{protocol.upper()}"
            env[each] = url
            env[f"{each}_PROTO"] = protocol.lower()
            env[f"{each}_PORT"] = str(port["port"])
            env[f"{each}_ADDR"] = ip
    return env


# --- DNS ----------------------------------------------------------------------------------------------------

A, AAAA, IN = 1, 28, 1
NOERROR, FORMERR, NXDOMAIN, NOTIMP = 0, 1, 3, 4


def lookup(name: str, read: informer.Reader) -> list[str] | None:
    """The A records of `name` (no trailing dot) in the cluster's zone; None when the name does not exist."""
    name = name.lower().rstrip(".")
    suffix = f".svc.{CLUSTER_DOMAIN}"
    if not name.endswith(suffix):
        return None
    labels = name[: -len(suffix)].split(".")
    if len(labels) != 2:
        return None
    svc, namespace = labels
    service = read.get(f"/api/v1/namespaces/{namespace}/services/{svc}")
    if service is None:
        return None
    spec = service.get("spec") or {}
    ips = [ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None"]
    if ips:
        return [ip for ip in ips if ipaddress.ip_address(ip).version == 4]
    selector = spec.get("selector") or {}
    if not selector:
        return []
    return sorted(
        pod["status"]["podIP"]
        for pod in read.list("/api/v1/pods")
        if pod["metadata"]["namespace"] == namespace
        and all((pod["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
        and (pod.get("status") or {}).get("phase") == "Running"
        and (pod.get("status") or {}).get("podIP")
        and not pod["metadata"].get("deletionTimestamp")
    )


def _question(packet: bytes) -> tuple[str, int, int, int]:
    """(name, type, class, offset after the question) of a query's first question; ValueError when malformed."""
    labels, offset = [], 12
    while True:
        length = packet[offset]
        offset += 1
        if length == 0:
            break
        if length & 0xC0:
            raise ValueError("compressed name in a question")
        labels.append(packet[offset : offset + length].decode("ascii"))
        offset += length
    qtype, qclass = struct.unpack("!HH", packet[offset : offset + 4])
    return ".".join(labels), qtype, qclass, offset + 4


def answer(packet: bytes, resolve: Callable[[str], list[str] | None]) -> bytes | None:
    """The response to one DNS query (RFC 1035): A records from `resolve`, NODATA for other types of a name that
    exists, NXDOMAIN for a name that does not; None for what is not a query."""
    if len(packet) < 12:
        return None
    ident, flags, qdcount = struct.unpack("!HHH", packet[:6])
    if flags & 0x8000:
        return None  # a response, not a query
    opcode = (flags >> 11) & 0xF
    reply = 0x8000 | (flags & 0x7900) | 0x0400 | 0x0080  # QR, opcode and RD echoed, AA, RA
    try:
        name, qtype, qclass, end = _question(packet)
    except (IndexError, ValueError, struct.error):
        return struct.pack("!HHHHHH", ident, reply | FORMERR, 0, 0, 0, 0)
    question = packet[12:end]
    if opcode != 0 or qdcount != 1:
        return struct.pack("!HHHHHH", ident, reply | NOTIMP, 1, 0, 0, 0) + question
    addresses = resolve(name) if qclass == IN else None
    if addresses is None:
        return struct.pack("!HHHHHH", ident, reply | NXDOMAIN, 1, 0, 0, 0) + question
    records = [] if qtype != A else addresses
    body = b"".join(struct.pack("!HHHIH", 0xC00C, A, IN, DNS_TTL, 4) + socket.inet_aton(ip) for ip in records)
    return struct.pack("!HHHHHH", ident, reply | NOERROR, 1, len(records), 0, 0) + question + body


class DnsServer:
    """UDP on DNS_ADDRESS:53 inside the network namespace of `pid`, answering from the runtime's cache."""

    def __init__(self, pid: int, read: informer.Reader, *, name: str) -> None:
        self.read = read
        self.sock = udp_in_netns(pid, (DNS_ADDRESS, 53))
        threading.Thread(target=self._serve, name=f"dns {name}", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                packet, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            try:
                response = answer(packet, lambda n: lookup(n, self.read))
            except Exception:  # an API error, say: the client retries, the server lives on
                log.exception("dns: query from %s", peer)
                continue
            if response is not None:
                with contextlib.suppress(OSError):
                    self.sock.sendto(response, peer)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


# --- kube-proxy ----------------------------------------------------------------------------------------------


def _nft_expr(name: str, **data: Any) -> JSON:
    return {
        "attrs": [
            ("NFTA_EXPR_NAME", name),
            ("NFTA_EXPR_DATA", {"attrs": [(f"NFTA_{name.upper()}_{k.upper()}", v) for k, v in data.items()]}),
        ]
    }


def _nft_value(value: bytes) -> JSON:
    return {"attrs": [("NFTA_DATA_VALUE", value)]}


def redirect_rule(cidr: str, port: int) -> list[JSON]:
    """`ip daddr <cidr> meta l4proto tcp redirect to :<port>` as nftables expressions."""
    network = ipaddress.ip_network(cidr)
    return [
        _nft_expr("payload", dreg=1, base=1, offset=16, len=4),  # the IPv4 header's destination
        _nft_expr("bitwise", sreg=1, dreg=1, len=4, mask=_nft_value(network.netmask.packed), xor=_nft_value(bytes(4))),
        _nft_expr("cmp", sreg=1, op=0, data=_nft_value(network.network_address.packed)),
        _nft_expr("meta", key=16, dreg=1),  # NFT_META_L4PROTO
        _nft_expr("cmp", sreg=1, op=0, data=_nft_value(bytes([socket.IPPROTO_TCP]))),
        _nft_expr("immediate", dreg=1, data=_nft_value(struct.pack("!H", port))),
        _nft_expr("redir", reg_proto_min=1),
    ]


def redirect_cluster_ranges(pid: int) -> None:
    """In the network namespace of `pid`: TCP to the cluster's ranges goes to 127.0.0.1:PROXY_PORT. Without
    pyroute2 (a virtualenv made before it was a dependency) only that is missing, and the log says how to fix it."""
    try:
        from pyroute2.nftables.main import NFTables  # type: ignore[import-untyped]
    except ImportError as e:
        log.error("pod network: no cluster IPs for pid %d: %s; run `make setup` (pip install -e ./testbed)", pid, e)
        return
    with entered(pid):
        nft = NFTables(nfgen_family=socket.AF_INET)
    try:
        nft.table("add", name=NFT_TABLE)
        nft.chain("add", table=NFT_TABLE, name="output", hook="output", type="nat", policy=1, priority=-100)
        for cidr in CLUSTER_RANGES:
            nft.rule("add", table=NFT_TABLE, chain="output", expressions=(redirect_rule(cidr, PROXY_PORT),))
    finally:
        nft.close()


def original_destination(sock: socket.socket) -> str:
    """The `ip:port` a redirected connection was dialled to."""
    raw = sock.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, ip = struct.unpack("!2xH4s8x", raw)
    return f"{socket.inet_ntoa(ip)}:{port}"


class ServiceProxy(Forwarder):
    """127.0.0.1:PROXY_PORT inside the network namespace of `pid`: each redirected connection goes where
    egress.route sends its original destination."""

    def __init__(self, pid: int, route: Callable[[str], egress.Backend | egress.Refusal], *, name: str) -> None:
        self.route = route
        super().__init__(pid, ("127.0.0.1", PROXY_PORT), name=f"services {name}", dial=self._dial)

    def _dial(self, inner: socket.socket) -> socket.socket:
        destination = original_destination(inner)
        decision = self.route(destination)
        if isinstance(decision, egress.Refusal):
            raise OSError(f"{destination}: {decision.reason}")
        try:
            return decision.dial()
        except OSError as e:
            raise OSError(f"{destination} → {decision.what}: {e}") from e


class PodNetwork:
    """What one process's network namespace gets besides the API server's relay: the redirect, the Service proxy
    and the DNS server; closed with the process."""

    def __init__(
        self, pid: int, read: informer.Reader, route: Callable[[str], egress.Backend | egress.Refusal], *, name: str
    ) -> None:
        redirect_cluster_ranges(pid)
        self.proxy = ServiceProxy(pid, route, name=name)
        try:
            self.dns = DnsServer(pid, read, name=name)
        except OSError:
            self.proxy.close()
            raise

    def close(self) -> None:
        self.proxy.close()
        self.dns.close()


def router(read: informer.Reader, pid_of: egress.PidLookup) -> Callable[[str], egress.Backend | egress.Refusal]:
    """egress.route over the runtime's cache: what a pod's connection to `ip:port` leads to."""
    return lambda authority: egress.route(authority, api=read, pid_of=pid_of)
