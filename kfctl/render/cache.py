"""The render cache: an application's last build, reused while nothing it reads has changed.

Where: ``APPDIR/.cache/render/<slot>.json``, one entry per build slot (an application; an image-mirrored one
has a second slot for the build that finds its images), holding the digest of the build's inputs, the
output and its parsed objects (so a hit costs neither kustomize nor the YAML parse). Inside the app dir and
not in ``~/.cache``: it is derived state of that directory (as ``.cache/repos/`` is; ``kfctl init``'s
``.gitignore`` already leaves ``.cache/`` out of commits), it goes away with the directory, holds only
one entry per application (no unbounded growth), and rendered output (which may carry credentials a user put
in parameters) is never shared with another app directory.

The digest covers everything the build reads: every file and link of the generated ``kustomize/<app>``
directory and of each vendored tree it refers to (path, type, bytes; a repo's whole vendored tree, a
superset of what the one application reads), the kustomize command and flags, and kustomize's version
string. A build that may reach the network (a remote base) is never cached. ``kfctl generate --check``
does not use the cache at all: it renders everything afresh, so it still sees any difference.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from kfctl.fsutil import write_atomic
from kfctl.objects import Obj

CACHE_DIR = Path(".cache") / "render"
FORMAT = 1


def digest(*, command: Sequence[str], version: str, trees: Iterable[Path]) -> str:
    """sha256 of a build's inputs: the command, kustomize's version and every entry under ``trees``."""
    h = hashlib.sha256()
    h.update(json.dumps({"format": FORMAT, "command": list(command), "version": version}).encode())
    for tree in trees:
        h.update(f"\0tree {tree.name}\0".encode())
        for path in sorted(_entries(tree)):
            rel = path.relative_to(tree).as_posix()
            if path.is_symlink():
                h.update(f"\0link {rel}\0{os.readlink(path)}".encode())
            else:
                data = path.read_bytes()
                h.update(f"\0file {rel}\0{len(data)}\0".encode())
                h.update(data)
    return h.hexdigest()


def _entries(tree: Path) -> Iterable[Path]:
    if tree.is_file() or tree.is_symlink():
        yield tree
        return
    for path in tree.rglob("*"):  # does not descend into links to directories
        if path.is_symlink() or path.is_file():
            yield path


class RenderCache:
    """Reads and writes one app directory's cache; ``None`` root: no cache (every lookup misses)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def get(self, slot: str, key: str) -> tuple[str, list[Obj]] | None:
        if self.root is None:
            return None
        try:
            entry = json.loads((self.root / f"{slot}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        text, objects = entry.get("output"), entry.get("objects")
        if not isinstance(text, str) or not isinstance(objects, list):
            return None
        return text, objects

    def put(self, slot: str, key: str, text: str, objects: list[Obj]) -> None:
        """Best effort: a cache that cannot be written only makes the next run slower."""
        if self.root is None:
            return
        try:
            # Only what JSON carries exactly (no YAML timestamps, binary or non-string keys): a hit must give
            # the very objects a parse would.
            if json.loads(json.dumps(objects)) != objects:
                return
            write_atomic(self.root / f"{slot}.json", json.dumps({"key": key, "output": text, "objects": objects}))
        except (OSError, TypeError, ValueError):
            pass
