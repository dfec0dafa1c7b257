"""The real client's port-forward (kfctl.k8s.client.KubeClient.port_forward) against a small WebSocket server on
127.0.0.1 that speaks the API server's pods/portforward protocol as Kubernetes documents it (subprotocol
v4.channel.k8s.io; per port a data channel 0 and an error channel 1, each opened by a frame holding the port
number, little-endian): the request it makes, the bytes through the tunnel both ways, what the server says on the
error channel, and a refused upgrade as kfctl's error types."""

from __future__ import annotations

import base64
import hashlib
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import kubernetes.client
import pytest

from kfctl.k8s.api import ClusterInfo, NotFound
from kfctl.k8s.client import KubeClient
from kfctl.k8s.errors import Forbidden

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
STATUS = (
    '{{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \\"gw-1\\" is forbidden: User '
    '\\"dev\\" cannot create resource \\"pods/portforward\\" in API group \\"\\" in the namespace '
    '\\"istio-system\\"","reason":"Forbidden","code":{code}}}'
)


@dataclass
class Server:
    """What the WebSocket server does and saw."""

    refuse: int = 0  # answer the upgrade with this HTTP status (and the API server's Status) instead
    error: bytes = b""  # say this on the error channel after the first data
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    port: int = 0


def frame(payload: bytes) -> bytes:
    head = bytes([0x82])  # FIN, binary
    if len(payload) < 126:
        return head + bytes([len(payload)]) + payload
    return head + bytes([126]) + struct.pack(">H", len(payload)) + payload


def read_frame(conn: socket.socket) -> bytes | None:
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = conn.recv(n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return out

    try:
        b0, b1 = exactly(2)
        size = b1 & 0x7F
        if size == 126:
            size = struct.unpack(">H", exactly(2))[0]
        elif size == 127:
            size = struct.unpack(">Q", exactly(8))[0]
        mask = exactly(4) if b1 & 0x80 else b"\0\0\0\0"
        data = bytes(c ^ mask[i % 4] for i, c in enumerate(exactly(size)))
    except EOFError:
        return None
    return None if b0 & 0x0F == 0x8 else data  # a close frame ends it


def serve_one(server: Server, conn: socket.socket) -> None:
    with conn:
        raw = b""
        while b"\r\n\r\n" not in raw:
            raw += conn.recv(4096)
        lines = raw.split(b"\r\n\r\n")[0].decode().split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        server.requests.append((lines[0], headers))
        if server.refuse:
            status = STATUS.format(code=server.refuse).encode()
            conn.sendall(f"HTTP/1.1 {server.refuse} Refused\r\nContent-Length: {len(status)}\r\n\r\n".encode() + status)
            return
        accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + GUID).encode()).digest()).decode()
        conn.sendall(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n".encode()
        )
        port = struct.pack("<H", 8080)
        conn.sendall(frame(b"\0" + port) + frame(b"\1" + port))
        data = read_frame(conn)
        if data is None:
            return
        if server.error:
            conn.sendall(frame(b"\1" + server.error))
        else:
            conn.sendall(frame(b"\0" + b"echo: " + data[1:]))
        conn.sendall(bytes([0x88, 0]))  # close


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    state.port = listener.getsockname()[1]

    def loop() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve_one, args=(state, conn), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    yield state
    listener.close()


def client(port: int) -> KubeClient:
    cfg = kubernetes.client.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    cfg.api_key = {"BearerToken": "t0ken"}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    return KubeClient(kubernetes.client.ApiClient(cfg), ClusterInfo(cfg.host, "test", "-"))


def test_a_tunnel_carries_bytes_both_ways_to_the_pods_port(server: Server) -> None:
    tunnel = client(server.port).port_forward(namespace="istio-system", pod="gw-1", port=8080)
    tunnel.sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
    got = b""
    while chunk := tunnel.sock.recv(4096):
        got += chunk
    tunnel.close()
    assert got == b"echo: GET / HTTP/1.1\r\n\r\n"
    assert tunnel.error() == ""
    [(line, headers)] = server.requests
    assert line == "GET /api/v1/namespaces/istio-system/pods/gw-1/portforward?ports=8080 HTTP/1.1"
    assert headers["authorization"] == "Bearer t0ken"
    assert "v4.channel.k8s.io" in headers["sec-websocket-protocol"]


def test_what_the_server_says_on_the_error_channel_is_the_tunnels_error(server: Server) -> None:
    server.error = b"error forwarding port 8080 to pod gw-1: connection refused"
    tunnel = client(server.port).port_forward(namespace="istio-system", pod="gw-1", port=8080)
    tunnel.sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
    assert tunnel.sock.recv(4096) == b""
    tunnel.close()
    assert tunnel.error() == "error forwarding port 8080 to pod gw-1: connection refused"


REFUSED = [
    (404, NotFound, "pod istio-system/gw-1 not found (port-forward)"),
    (403, Forbidden, 'pods "gw-1" is forbidden: User "dev" cannot create resource "pods/portforward" in API group "" '
        'in the namespace "istio-system"'),
]  # fmt: skip


@pytest.mark.parametrize(("status", "error", "message"), REFUSED, ids=["404", "403"])
def test_a_refused_upgrade_is_kfctls_api_error(server: Server, status: int, error: type, message: str) -> None:
    server.refuse = status
    with pytest.raises(error) as e:
        client(server.port).port_forward(namespace="istio-system", pod="gw-1", port=8080)
    assert (e.value.status, e.value.message) == (status, message)
