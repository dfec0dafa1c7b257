"""A git server on 127.0.0.1 for the GitOps e2e tests: git's own smart HTTP (`git http-backend`) behind a small
threaded HTTP server, serving the bare repositories of one directory, fetch and push, without authentication.

Flux's source-controller clones over it (go-git, smart HTTP protocol v0/v1) and the tests push to it with the
git CLI, exactly as to any hosted repository. `git http-backend` is run as a CGI program per request (RFC 3875
variables; the body passed on stdin, de-chunked when the client streams it, as git's CLI does for packs over
http.postBuffer). It listens on 127.0.0.1 only and dials nothing. Test code only.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

LOOPBACK = "127.0.0.1"


def init_bare(root: Path, name: str) -> Path:
    """A bare repository <root>/<name>.git that accepts pushes over HTTP (receive-pack is off without a user)."""
    repo = root / f"{name}.git"
    git("init", "--bare", "--quiet", "--initial-branch=main", str(repo))
    git("-C", str(repo), "config", "http.receivepack", "true")
    return repo


def git(*args: str, cwd: Path | None = None) -> str:
    """Run the git CLI with a fixed identity and no user or system configuration; its stdout."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "kfctl e2e",
        "GIT_AUTHOR_EMAIL": "e2e@kfctl.invalid",
        "GIT_COMMITTER_NAME": "kfctl e2e",
        "GIT_COMMITTER_EMAIL": "e2e@kfctl.invalid",
        "GIT_TERMINAL_PROMPT": "0",
    }
    exe = shutil.which("git")
    if exe is None:
        raise RuntimeError("the GitOps e2e tests need the git CLI (git http-backend serves the repositories)")
    result = subprocess.run([exe, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}")
    return result.stdout


def _backend() -> list[str]:
    exe = shutil.which("git")
    if exe is None:
        raise RuntimeError("the GitOps e2e tests need the git CLI (git http-backend serves the repositories)")
    return [exe, "http-backend"]


class _Handler(BaseHTTPRequestHandler):
    server: _GitHTTPServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._cgi()

    def do_POST(self) -> None:
        self._cgi()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()  # the empty trailer
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _cgi(self) -> None:
        path, _, query = self.path.partition("?")
        body = self._body() if self.command == "POST" else b""
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/nonexistent",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "SERVER_NAME": LOOPBACK,
            "SERVER_PORT": str(self.server.server_address[1]),
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REMOTE_ADDR": self.client_address[0],
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        result = subprocess.run(_backend(), input=body, env=env, capture_output=True, check=False, timeout=300)
        head, _, payload = result.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = result.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.server.requests.append(f"{self.command} {self.path} {status}")
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass  # the requests are kept in server.requests instead


class _GitHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path) -> None:
        super().__init__((LOOPBACK, 0), _Handler)
        self.root = root
        self.requests: list[str] = []


class GitServer:
    """A running server: `url(name)` is the HTTP URL of <root>/<name>.git; `requests` lists what was asked."""

    def __init__(self, server: _GitHTTPServer) -> None:
        self._server = server

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, name: str) -> str:
        return f"http://{LOOPBACK}:{self.port}/{name}.git"

    @property
    def requests(self) -> list[str]:
        return list(self._server.requests)


@contextmanager
def serve(root: Path) -> Iterator[GitServer]:
    """Serve the bare repositories under ``root`` on 127.0.0.1:<free port> until the block ends."""
    server = _GitHTTPServer(root)
    thread = threading.Thread(target=server.serve_forever, name="git-http", daemon=True)
    thread.start()
    try:
        yield GitServer(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
