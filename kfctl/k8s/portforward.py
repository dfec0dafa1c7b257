"""A local TCP port forwarded to a pod's port through the API server, as `kubectl port-forward` does.

:class:`Tunnel` is one TCP connection to the pod's port (the API server's ``pods/portforward``; the real client
opens it in :mod:`kfctl.k8s.client`). :class:`LocalForward` listens on 127.0.0.1 and, for every connection a
browser or ``curl`` makes to it, opens a tunnel and copies bytes both ways until either side closes. It knows
nothing of HTTP, of Gateways or of Kubeflow: what to forward to is the caller's business (kfctl.app.dashboard).
It never prints: it reports each connection to ``on_event`` and each tunnel that failed to ``on_error``.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kfctl.errors import UsageError

CHUNK = 64 * 1024
ACCEPT_POLL = 0.2  # seconds between checks of close() while nobody connects
HANDSHAKE_STATUS = re.compile(r"Handshake status (\d{3})")


@dataclass
class Tunnel:
    """One TCP connection to a pod's port: ``sock`` sends and receives its bytes; ``error`` reads what the API
    server said on the port's error stream ("connection refused" when nothing listens there), "" if nothing."""

    sock: Any  # a socket.socket, or the client library's wrapper of one
    error: Callable[[], str] = field(default=lambda: "")
    closer: Callable[[], None] | None = None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.closer is not None:
            with contextlib.suppress(Exception):
                self.closer()


def handshake_status(reason: str) -> tuple[int, str]:
    """The HTTP status of a refused WebSocket upgrade and the body the server sent with it (the API server's
    Status, JSON), from the client library's words: "Handshake status 403 Forbidden -+-+- {headers} -+-+- b'…'".
    (0, "") when they say no status."""
    m = HANDSHAKE_STATUS.search(reason)
    if not m:
        return 0, ""
    parts = reason.split(" -+-+- ")
    body = parts[2].strip() if len(parts) > 2 else ""
    if body.startswith(("b'", 'b"')):
        try:
            body = ast.literal_eval(body).decode("utf-8", errors="replace")
        except (ValueError, SyntaxError, AttributeError):
            body = ""
    return int(m.group(1)), "" if body == "None" else body


class LocalForward:
    """Listens on ``host:port`` (0: any free port) and forwards each connection through a new tunnel."""

    def __init__(
        self,
        open_tunnel: Callable[[], Tunnel],
        *,
        port: int,
        host: str = "127.0.0.1",
        on_event: Callable[[str], None] = lambda _text: None,
        on_error: Callable[[str], None] = lambda _text: None,
    ) -> None:
        self._open_tunnel = open_tunnel
        self._on_event = on_event
        self._on_error = on_error
        self._closed = threading.Event()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._listener.bind((host, port))
        except OSError as e:
            self._listener.close()
            if e.errno == errno.EADDRINUSE:
                raise UsageError(
                    f"port {port} on {host} is in use by another program; nothing was forwarded",
                    hint=f"pick another with --port N (--port 0 takes a free one), or stop what listens on {port} "
                    f"(ss -ltnp 'sport = :{port}' names it)",
                ) from e
            raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}", hint="pick another --port") from e
        self._listener.listen(16)
        self._listener.settimeout(ACCEPT_POLL)
        self.host, self.port = self._listener.getsockname()[:2]
        self._thread = threading.Thread(target=self._serve, name=f"forward {self.port}", daemon=True)
        self.connections = 0
        self.failures: list[str] = []

    def start(self) -> LocalForward:
        self._thread.start()
        return self

    def __enter__(self) -> LocalForward:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    def close(self) -> None:
        """Stop listening; connections already forwarded end with their own tunnels."""
        self._closed.set()
        self._listener.close()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2 * ACCEPT_POLL + 1)

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed under accept()
            self.connections += 1
            threading.Thread(target=self._forward, args=(conn,), daemon=True).start()

    def _forward(self, conn: socket.socket) -> None:
        self._on_event(f"handling connection {self.connections} on port {self.port}")
        try:
            tunnel = self._open_tunnel()
        except Exception as e:  # the API server refused or could not be reached: say so, drop this connection
            self.failures.append(str(e))
            self._on_error(f"cannot forward a connection: {e}")
            conn.close()
            return

        def copy(src: Any, dst: Any) -> None:
            try:
                while True:
                    data = src.recv(CHUNK)
                    if not data:
                        break
                    dst.sendall(data)
            except OSError:
                pass

        def upstream() -> None:
            copy(conn, tunnel.sock)
            with contextlib.suppress(OSError):
                tunnel.sock.shutdown(socket.SHUT_WR)

        up = threading.Thread(target=upstream, daemon=True)
        up.start()
        copy(tunnel.sock, conn)
        # What the server said on the error stream is recorded before the client sees the end, so that whoever
        # reads ``failures`` after its request failed finds why.
        said = tunnel.error()
        if said:
            self.failures.append(said)
            self._on_error(f"the pod's port answered with an error: {said.strip()}")
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_WR)
        up.join(timeout=1)  # the pod's side ended: the client's side has nothing more to say to it
        tunnel.close()
        conn.close()
