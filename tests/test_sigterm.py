"""A kfctl stopped mid-fetch leaves nothing behind for long: SIGTERM unwinds as Ctrl-C does, and what a SIGKILL
leaves the next fetch into the same cache removes.

argocd-cmp-server stops a plugin render at the controller's deadline (docs/gitops.md, "Timeouts"): SIGKILL to the
plugin's process (Go's exec.CommandContext), SIGTERM to its process group. Container runtimes and `timeout(1)` send
SIGTERM. Python's default for SIGTERM ended kfctl on the spot, and nothing survives SIGKILL: either way the fetch's
temporary directory, a partial archive, stayed in the repo cache, one more in the plugin's cache volume for every
render stopped. The oracle is the filesystem after the real process has exited.

The archive is served by the test bed's file server on 127.0.0.1, which holds its request unanswered while the
test needs a fetch in flight; nothing leaves the machine.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kfctl_testbed import fileserver
from test_repos import good_members, make_tar, write_kfdef

from kfctl import fsutil
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef

# Ctrl-C as a terminal delivers it: a child of pytest-xdist's workers inherits SIGINT ignored, and Python leaves an
# ignored SIGINT alone, so the child puts Python's own handler back first.
RUN_KFCTL = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from kfctl.cli.main import main; sys.exit(main())"
)


ARCHIVE = "/web.tar.gz"


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[fileserver.FileServer]:
    """A file server on 127.0.0.1 (kfctl_testbed.fileserver) serving tmp_path/www, whose ``stalling`` holds the
    archive's request unanswered; no proxy in the way."""
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    www = tmp_path / "www"
    www.mkdir()
    with fileserver.serve(www) as server:
        yield server


def fetching(app: Path, files: fileserver.FileServer, **pipes: Any) -> tuple[subprocess.Popen[str], Path]:
    """A real kfctl generating ``app`` (its KfDef's repo served by ``files``, stalled), once its fetch has begun:
    the request is at the server and the fetch's temporary directory in the repo cache."""
    proc = subprocess.Popen([sys.executable, "-c", RUN_KFCTL, "generate", str(app)], text=True, **pipes)
    deadline = time.monotonic() + 60
    while not ((filling := sorted(app.glob(".cache/repos/.tmp-web-*"))) and ARCHIVE in files.requests):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no fetch began: {proc.communicate()}")
        time.sleep(0.05)
    return proc, filling[0]


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
    tmp_path: Path, files: fileserver.FileServer, signum: int, exit_code: int, message: str
) -> None:
    app = tmp_path / "app"
    write_kfdef(app, files.base + ARCHIVE)
    with files.stalling(ARCHIVE):
        proc, filling = fetching(app, files, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            proc.send_signal(signum)
            _, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert not filling.exists()
    assert (proc.returncode, stderr) == (exit_code, message)
    assert leftovers(app) == []


def test_a_kfctl_killed_mid_fetch_leaves_a_directory_the_next_fetch_removes(
    tmp_path: Path, files: fileserver.FileServer, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL, as argocd-cmp-server sends at the controller's deadline: nothing runs, the fetch's directory stays;
    the next fetch into the same cache removes it (its lock died with the process)."""
    app = tmp_path / "app"
    write_kfdef(app, files.base + ARCHIVE)
    with files.stalling(ARCHIVE):
        proc, filling = fetching(app, files, stderr=subprocess.DEVNULL)
        proc.kill()
        proc.wait()
    assert filling.exists()  # SIGKILL: kfctl could not remove it
    www = tmp_path / "www"
    write_kfdef(app, files.base + ARCHIVE, make_tar(www / "web.tar.gz", good_members()))
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


@pytest.mark.parametrize(
    ("name", "age", "removed"),
    [
        pytest.param(".render.json.k1ll3d.tmp", 2 * HOUR, True, id="an earlier write of the file, killed"),
        pytest.param(".render.json.wr1t1n.tmp", 60.0, False, id="one another kfctl may be writing"),
        pytest.param(".other.json.k1ll3d.tmp", 2 * HOUR, False, id="another file's: its own write removes it"),
    ],
)
def test_a_write_removes_the_temp_file_a_killed_write_of_the_same_file_left(
    tmp_path: Path, name: str, age: float, removed: bool
) -> None:
    """write_atomic writes through a temp file and a rename; SIGKILL between the two leaves the temp file."""
    cache = tmp_path / "render"
    cache.mkdir()
    left = cache / name
    left.write_text("half a cache entr")
    when = time.time() - age
    os.utime(left, (when, when))
    assert fsutil.write_atomic(cache / "render.json", "{}")
    assert (left.exists(), sorted(p.name for p in cache.iterdir() if p != left)) == (not removed, ["render.json"])
