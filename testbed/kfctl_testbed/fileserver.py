"""A static HTTP server on 127.0.0.1 for tests that fetch files (repo tarballs, release assets), with the two
unkind answers real servers give: a path that asks for credentials (401) and a path that never answers.

It serves one directory, listens on loopback only and dials nothing. Test code only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"
STALL_SECONDS = 30.0  # how long a stalled request is held before the server gives up on it


@dataclass(frozen=True)
class Behaviour:
    """Path prefixes that answer 401 with a Basic challenge, and prefixes that hold the request unanswered."""

    auth: tuple[str, ...] = ()
    stall: tuple[str, ...] = ()


class _Handler(SimpleHTTPRequestHandler):
    server: _FileServer

    def __init__(self, *args: Any, behaviour: Behaviour, **kwargs: Any) -> None:
        self.behaviour = behaviour
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        self.server.requests.append(self.path)
        if any(self.path.startswith(p) for p in (*self.behaviour.stall, *self.server.stalling)):
            self.server.stalled.wait(STALL_SECONDS)
            return
        if any(self.path.startswith(p) for p in self.behaviour.auth):
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="mirror"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass  # kept in server.requests instead


class _FileServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path, behaviour: Behaviour) -> None:
        super().__init__((LOOPBACK, 0), partial(_Handler, directory=str(root), behaviour=behaviour))
        self.requests: list[str] = []
        self.stalled = threading.Event()  # set at shutdown, so stalled requests end with the server
        self.stalling: tuple[str, ...] = ()  # prefixes held unanswered for now (FileServer.stalling)


@dataclass
class FileServer:
    base: str  # http://127.0.0.1:<port>
    _server: _FileServer = field(repr=False)

    @property
    def requests(self) -> list[str]:
        return list(self._server.requests)

    @contextmanager
    def stalling(self, prefix: str) -> Iterator[None]:
        """Hold the requests under ``prefix`` unanswered while inside (a mirror too slow for a deadline); those
        already held stay so until STALL_SECONDS have passed."""
        self._server.stalling = (*self._server.stalling, prefix)
        try:
            yield
        finally:
            self._server.stalling = tuple(p for p in self._server.stalling if p != prefix)


@contextmanager
def serve(root: Path, behaviour: Behaviour = Behaviour()) -> Iterator[FileServer]:
    """Serve ``root`` on 127.0.0.1:<free port> until the block ends."""
    server = _FileServer(root, behaviour)
    thread = threading.Thread(target=server.serve_forever, name="file-http", daemon=True)
    thread.start()
    try:
        yield FileServer(f"http://{LOOPBACK}:{server.server_address[1]}", server)
    finally:
        server.stalled.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
