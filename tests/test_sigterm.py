"""A kfctl stopped by a signal mid-fetch leaves nothing half-written: SIGTERM unwinds as Ctrl-C does.

argocd-cmp-server stops a plugin render past the controller's deadline with SIGTERM (docs/gitops.md,
"Timeouts"), as do container runtimes and `timeout(1)`. Python's default for SIGTERM ended kfctl on the spot and
left the fetch's temporary directory, a partial archive, in the repo cache: one more in the plugin's cache
volume for every render stopped. The oracle is the filesystem after the real process has exited.

The archive is served by a ThreadingHTTPServer on 127.0.0.1 that sends its headers and a first chunk, then
stalls until the test ends; nothing leaves the machine.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from test_repos import write_kfdef

RUN_KFCTL = "import sys; from kfctl.cli.main import main; sys.exit(main())"


@pytest.fixture
def stalling_archive() -> Iterator[str]:
    """The URL of an archive whose download never finishes (a first chunk, then nothing until the test ends)."""
    release = threading.Event()

    class Stalling(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/gzip")
            self.send_header("Content-Length", str(1 << 20))
            self.end_headers()
            self.wfile.write(b"\x1f\x8b" + b"\0" * 4094)
            self.wfile.flush()
            release.wait(60)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Stalling)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/web.tar.gz"
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def leftovers(app: Path) -> list[str]:
    """Temporary files and directories of kfctl's under the app directory, and what a finished run writes."""
    temporary = [p for p in app.rglob("*") if p.name.startswith((".tmp-", ".kfctl-tmp-"))]
    written = [p for p in (app / "kfdef.lock", app / "rendered") if p.exists()]
    return sorted(str(p.relative_to(app)) for p in [*temporary, *written])


@pytest.mark.parametrize(
    ("signum", "exit_code", "message"),
    [
        (signal.SIGTERM, 143, "Error (interrupted): terminated (SIGTERM)\n"),
        (signal.SIGINT, 130, "Error (interrupted): interrupted by the user\n"),
    ],
)
def test_a_signal_mid_fetch_removes_the_partial_download(
    tmp_path: Path, stalling_archive: str, monkeypatch: pytest.MonkeyPatch, signum: int, exit_code: int, message: str
) -> None:
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    app = tmp_path / "app"
    write_kfdef(app, stalling_archive)
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN_KFCTL, "generate", str(app)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (downloading := sorted(app.glob(".cache/repos/.tmp-web-*/archive"))):
            assert proc.poll() is None and time.monotonic() < deadline, f"no download began: {proc.communicate()}"
            time.sleep(0.05)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=30)
        assert not downloading[0].exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, stderr) == (exit_code, message)
    assert leftovers(app) == []
