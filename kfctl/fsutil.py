"""Small file-system operations whose failure must not leave a half-written file."""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FILLING = ".tmp-"  # the prefix of every directory `filling` makes
OWNER = ".owner"  # in such a directory: locked (flock) by the kfctl filling it, for as long as that process lives
# A directory younger than this is left alone whatever its lock says: its kfctl may not have locked it yet.
LOCK_GRACE = 10.0
# One without an OWNER file (made by a kfctl before it had them) is taken for abandoned only after this long.
UNOWNED_AFTER = 24 * 3600.0
# A temp file of write_atomic this old is a killed kfctl's (a write takes well under a second): the next write of
# the same file removes it. SIGKILL at a plugin's deadline can land mid-write of a render cache entry (MBs).
STALE_TEMP = 3600.0


def write_atomic(path: Path, data: str, *, mode: int = 0o644) -> bool:
    """Write ``data`` to ``path`` through a temp file in the same directory and an atomic rename.

    Returns whether the file changed; identical content is left alone (no new mtime, no rewrite), so
    re-running a command on an unchanged input touches nothing.
    """
    try:
        if path.read_text(encoding="utf-8") == data:
            return False
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(data)
        os.chmod(tmp, mode)  # mkstemp makes 0600 files; a KfDef or lock file is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def _remove_stale_temps(path: Path) -> None:
    """Remove the temp files of earlier writes of ``path`` that are STALE_TEMP old: their kfctl was killed."""
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        try:
            if time.time() - tmp.stat().st_mtime >= STALE_TEMP:
                tmp.unlink()
        except OSError:  # removed meanwhile, or not ours to remove: the write goes on
            continue


def place_content_addressed(tree: Path, final: Path) -> None:
    """Rename a freshly filled ``tree`` to its content-addressed name ``final``. Another kfctl that filled the
    same directory first wins: its content is the same by construction, so ours is dropped with its temp dir."""
    try:
        os.rename(tree, final)
    except OSError:
        if not final.is_dir():
            raise


def find_content_addressed(roots: tuple[Path, ...], name: str) -> Path | None:
    """The directory ``name`` in the first of ``roots`` that has it: a content-addressed cache may be read from
    several places (APPDIR's cache, then a private one a read-only command fills) and is the same in each."""
    return next((root / name for root in roots if (root / name).is_dir()), None)


@contextmanager
def filling(root: Path, prefix: str) -> Iterator[Path]:
    """A new directory ``root/PREFIX…`` to fill and rename into place (place_content_addressed), removed after.

    A kfctl killed meanwhile cannot remove it: argocd-cmp-server kills a plugin's render with SIGKILL at the
    controller's deadline (Go's exec.CommandContext), and each such render left a partial archive or tree in the
    plugin's cache volume. So the directory holds a lock for as long as its kfctl lives (the kernel drops it
    when the process dies, however it dies), and the next fill of ``root`` removes what no live process holds
    (:func:`sweep_abandoned`). ``prefix`` must start with FILLING.
    """
    root.mkdir(parents=True, exist_ok=True)
    sweep_abandoned(root)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    fd = os.open(tmp / OWNER, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else can hold it: the file is ours, just made
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        os.close(fd)


def sweep_abandoned(root: Path) -> list[str]:
    """Remove the directories :func:`filling` made in ``root`` whose kfctl is gone (their lock is free); their
    names. Another kfctl's fill in progress holds its lock and is left alone, so caches shared by concurrent
    renders (a plugin sidecar's volume) stay safe."""
    removed: list[str] = []
    for directory in sorted(root.glob(f"{FILLING}*")):
        try:
            age = time.time() - directory.stat().st_mtime
        except OSError:  # removed meanwhile
            continue
        if age < LOCK_GRACE:
            continue
        try:
            fd = os.open(directory / OWNER, os.O_RDONLY)
        except FileNotFoundError:
            if age >= UNOWNED_AFTER:
                shutil.rmtree(directory, ignore_errors=True)
                removed.append(directory.name)
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            shutil.rmtree(directory, ignore_errors=True)
            removed.append(directory.name)
        finally:
            os.close(fd)
    return removed
