"""Sockets inside a pod's network namespace, for the process runtime (runtime.py). TEST CODE.

Each process the runtime runs has a network namespace of its own with only `lo`. A socket stays in the
namespace it was made in, so a thread of ours enters the pod's namespace just for socket()/bind()/connect()
and returns: `listen_in_netns` opens a port there (the API server's relay), `connect_in_netns` dials a port
the process serves there (readiness probes, the egress proxy's way to a webhook server), `udp_in_netns` binds
a UDP port there (the pod's DNS server, podnet.py). `Forwarder` pipes each connection made inside to what a
function dials for it: `Relay` to the API server on the host's loopback, podnet's Service proxy to the process
behind a Service.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator

log = logging.getLogger("runtime")

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")


@contextlib.contextmanager
def entered(pid: int) -> Iterator[None]:
    """This thread in the network namespace of `pid` for the duration of the block, then back in its own."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(own)


def listen_in_netns(pid: int, address: tuple[str, int]) -> socket.socket:
    """A listening socket at `address` inside the network namespace of `pid`."""
    with entered(pid):
        return socket.create_server(address)


def connect_in_netns(pid: int, address: tuple[str, int], *, timeout: float) -> socket.socket:
    """A socket connected to `address` inside the network namespace of `pid` (connect() is done inside, so a
    slow peer keeps this thread in the namespace for at most `timeout`)."""
    with entered(pid):
        return socket.create_connection(address, timeout=timeout)


def udp_in_netns(pid: int, address: tuple[str, int]) -> socket.socket:
    """A UDP socket bound at `address` inside the network namespace of `pid`."""
    with entered(pid):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind(address)
        except OSError:
            sock.close()
            raise
        return sock


class Forwarder:
    """A port inside a pod's network namespace whose connections are piped to what `dial` returns for each (a
    socket to a loopback address of the host or of another pod's namespace; `dial` raises OSError when there is
    none: the connection is closed). Each connection is dialled on a thread of its own."""

    def __init__(
        self, pid: int, address: tuple[str, int], *, name: str, dial: Callable[[socket.socket], socket.socket]
    ) -> None:
        self.name = name
        self.dial = dial
        self.server = listen_in_netns(pid, address)
        self.closed = False
        threading.Thread(target=self._accept, name=f"forward {name}", daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                inner, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(inner,), name=f"dial {self.name}", daemon=True).start()

    def _connect(self, inner: socket.socket) -> None:
        try:
            outer = self.dial(inner)
        except OSError as e:
            log.warning("%s: %s", self.name, e)
            inner.close()
            return
        outer.settimeout(None)
        for src, dst in ((inner, outer), (outer, inner)):
            threading.Thread(target=pipe, args=(src, dst), daemon=True).start()

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()


class Relay(Forwarder):
    """The API server's 127.0.0.1:<port> inside a pod's network namespace: each connection made there is
    piped to the real API server (on the host's loopback). TLS passes through untouched, so the pod verifies
    the API server's certificate (SAN 127.0.0.1) with the cluster CA, as in-cluster clients do."""

    def __init__(self, pid: int, address: tuple[str, int], *, name: str) -> None:
        self.address = address
        super().__init__(pid, address, name=f"relay {name}", dial=self._api_server)

    def _api_server(self, _inner: socket.socket) -> socket.socket:
        try:
            return socket.create_connection(self.address, timeout=10)
        except OSError as e:
            raise OSError(f"API server {self.address[0]}:{self.address[1]}: {e}") from e


def pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):
            src.shutdown(socket.SHUT_RD)
