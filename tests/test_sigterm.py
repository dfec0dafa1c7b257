"""A kfctl stopped mid-fetch leaves nothing behind for long: SIGTERM unwinds as Ctrl-C does, and what a SIGKILL
leaves the next fetch into the same cache removes.

argocd-cmp-server stops a plugin render at the controller's deadline (docs/gitops.md, "Timeouts"): SIGKILL to the
plugin's process (Go's exec.CommandContext), SIGTERM to its process group. Container runtimes and `timeout(1)` send
SIGTERM. Python's default for SIGTERM ended kfctl on the spot, and nothing survives SIGKILL: either way the fetch's
temporary directory, a partial archive, stayed in the repo cache, one more in the plugin's cache volume for every
render stopped. The oracle is the filesystem after the real process has exited.

The archive is served by a ThreadingHTTPServer on 127.0.0.1 that sends its headers and a first chunk, then
stalls until the test ends; nothing leaves the machine.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
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
from test_repos import good_members, make_tar, served, write_kfdef

from kfctl import fsutil
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef

__all__ = ["served"]  # test_repos' fixture, used here

# Ctrl-C as a terminal delivers it: a child of pytest-xdist's workers inherits SIGINT ignored, and Python leaves an
# ignored SIGINT alone, so the child puts Python's own handler back first.
RUN_KFCTL = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from kfctl.cli.main import main; sys.exit(main())"
)


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


def test_a_kfctl_killed_mid_fetch_leaves_a_directory_the_next_fetch_removes(
    tmp_path: Path,
    stalling_archive: str,
    served: tuple[Path, str],
    catalog: Catalog,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SIGKILL, as argocd-cmp-server sends at the controller's deadline: nothing runs, the partial download stays;
    the next fetch into the same cache removes it (its lock died with the process)."""
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    app = tmp_path / "app"
    write_kfdef(app, stalling_archive)
    proc = subprocess.Popen([sys.executable, "-c", RUN_KFCTL, "generate", str(app)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (downloading := sorted(app.glob(".cache/repos/.tmp-web-*/archive"))):
            assert proc.poll() is None and time.monotonic() < deadline, "no download began"
            time.sleep(0.05)
        proc.kill()
    finally:
        proc.wait()
    assert downloading[0].exists()  # SIGKILL: kfctl could not remove it
    www, base = served
    write_kfdef(app, f"{base}/web.tar.gz", make_tar(www / "web.tar.gz", good_members()))
    monkeypatch.setattr(fsutil, "LOCK_GRACE", 0.0)  # else only a fetch 10 s later removes it
    generate(load_kfdef(app / "kfdef.yaml", catalog), catalog)
    assert sorted(p.name for p in (app / ".cache" / "repos").iterdir()) == [f"web-{sha(www / 'web.tar.gz')[:16]}"]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


HOUR = 3600.0


@pytest.mark.parametrize(
    ("owner", "age", "swept"),
    [
        pytest.param("dead", HOUR, True, id="its kfctl is gone"),
        pytest.param("alive", HOUR, False, id="another kfctl is filling it"),
        pytest.param("dead", 1.0, False, id="too young to tell"),
        pytest.param(None, 25 * HOUR, True, id="no lock file, a day old"),
        pytest.param(None, HOUR, False, id="no lock file, an hour old"),
    ],
)
def test_sweep_removes_only_what_no_live_kfctl_holds(
    tmp_path: Path, owner: str | None, age: float, swept: bool
) -> None:
    directory = tmp_path / ".tmp-web-abc"
    (directory / "tree").mkdir(parents=True)
    held = None
    if owner is not None:
        held = os.open(directory / fsutil.OWNER, os.O_CREAT | os.O_WRONLY)
        if owner == "alive":  # flock is per open file: this open conflicts with the sweep's own
            fcntl.flock(held, fcntl.LOCK_EX)
    when = time.time() - age
    os.utime(directory, (when, when))
    try:
        removed = fsutil.sweep_abandoned(tmp_path)
    finally:
        if held is not None:
            os.close(held)
    assert (removed, directory.exists()) == (([".tmp-web-abc"], False) if swept else ([], True))
