"""Small file-system operations whose failure must not leave a half-written file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
