"""Safe extraction of a repo archive (.tar, .tar.gz/.tgz, .zip) into a new directory.

Every member is checked before anything is written: no absolute paths, no ``..`` components, no
backslashes or drive letters, no device, FIFO or other special files, symlinks and hard links must stay
inside the root, and the archive must stay under a member count and a total uncompressed size (checked
again on the bytes actually written). Symlinks are created last, after every file, so no write can pass
through one, and each is then resolved on disk to prove it stays inside. The caller verifies the digest
before calling this and extracts into a fresh temp directory it renames into place; this module must not
write anywhere but the directory it is given, and never uses ``tarfile.extractall``.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from kfctl.errors import ConfigError

MAX_BYTES = 1 << 30  # 1 GiB uncompressed; kubeflow/manifests is ~60 MiB
MAX_MEMBERS = 100_000
_CHUNK = 1 << 16
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class Limits:
    max_bytes: int = MAX_BYTES
    max_members: int = MAX_MEMBERS


@dataclass(frozen=True)
class _Entry:
    parts: tuple[str, ...]
    kind: Literal["dir", "file", "symlink", "hardlink"]
    size: int = 0
    link: str = ""  # symlink target as written, or the hard link's target path (normalised)
    executable: bool = False
    ref: tarfile.TarInfo | zipfile.ZipInfo | None = None  # where to read the content from


def _unsafe(what: str, name: str, reason: str) -> ConfigError:
    return ConfigError(
        f"{what}: unsafe archive member {name!r}: {reason}",
        hint="nothing was extracted; use an archive whose members all stay inside it, or fix the uri",
    )


def safe_parts(name: str, *, what: str) -> tuple[str, ...]:
    """The path components of a member name, or ConfigError if the name could leave the root."""
    if name.startswith("/") or _DRIVE.match(name):
        raise _unsafe(what, name, "absolute path")
    if "\\" in name:
        raise _unsafe(what, name, "backslash in the path")
    if "\x00" in name:
        raise _unsafe(what, name, "NUL byte in the path")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        raise _unsafe(what, name, "'..' component")
    return parts


def _check_symlink(parts: tuple[str, ...], target: str, *, name: str, what: str) -> None:
    if not target:
        raise _unsafe(what, name, "symlink with an empty target")
    if target.startswith("/") or _DRIVE.match(target) or "\\" in target:
        raise _unsafe(what, name, f"symlink to absolute path {target!r}")
    resolved = posixpath.normpath(posixpath.join(*parts[:-1], target) if len(parts) > 1 else target)
    if resolved == ".." or resolved.startswith("../"):
        raise _unsafe(what, name, f"symlink {target!r} points outside the archive")


def _tar_entries(tf: tarfile.TarFile, limits: Limits, what: str) -> Iterator[_Entry]:
    count = total = 0
    regular: set[tuple[str, ...]] = set()
    for m in tf:
        count += 1
        if count > limits.max_members:
            raise _too_big(what, f"more than {limits.max_members} members")
        parts = safe_parts(m.name, what=what)
        if not parts:
            continue
        if m.isdir():
            yield _Entry(parts, "dir", ref=m)
        elif m.isreg():
            total += m.size
            if total > limits.max_bytes:
                raise _too_big(what, f"more than {limits.max_bytes} bytes uncompressed")
            regular.add(parts)
            yield _Entry(parts, "file", size=m.size, executable=bool(m.mode & 0o111), ref=m)
        elif m.issym():
            _check_symlink(parts, m.linkname, name=m.name, what=what)
            yield _Entry(parts, "symlink", link=m.linkname, ref=m)
        elif m.islnk():
            if m.linkname.startswith("/") or _DRIVE.match(m.linkname):
                raise _unsafe(what, m.name, f"hard link to absolute path {m.linkname!r}")
            try:
                target = safe_parts(m.linkname, what=what)
            except ConfigError as e:
                raise _unsafe(what, m.name, f"hard link {m.linkname!r} points outside the archive") from e
            if target not in regular:
                raise _unsafe(what, m.name, f"hard link to {m.linkname!r}, which is not an earlier regular file")
            yield _Entry(parts, "hardlink", link="/".join(target), ref=m)
        else:
            kind = "device" if (m.ischr() or m.isblk()) else "FIFO" if m.isfifo() else f"type {m.type!r}"
            raise _unsafe(what, m.name, f"{kind} entries are not allowed")


def _zip_entries(zf: zipfile.ZipFile, limits: Limits, what: str) -> Iterator[_Entry]:
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        raise _too_big(what, f"more than {limits.max_members} members")
    total = 0
    for zi in infos:
        parts = safe_parts(zi.filename, what=what)
        if not parts:
            continue
        mode = zi.external_attr >> 16
        if zi.is_dir():
            yield _Entry(parts, "dir", ref=zi)
        elif stat.S_ISLNK(mode):
            if zi.file_size > 4096:
                raise _unsafe(what, zi.filename, "symlink target longer than 4096 bytes")
            target = zf.read(zi).decode("utf-8", errors="replace")
            _check_symlink(parts, target, name=zi.filename, what=what)
            yield _Entry(parts, "symlink", link=target, ref=zi)
        elif stat.S_IFMT(mode) == 0 or stat.S_ISREG(mode):  # zips made off Unix carry no file type
            total += zi.file_size
            if total > limits.max_bytes:
                raise _too_big(what, f"more than {limits.max_bytes} bytes uncompressed")
            yield _Entry(parts, "file", size=zi.file_size, executable=bool(mode & 0o111), ref=zi)
        else:
            raise _unsafe(what, zi.filename, "special files (devices, FIFOs, sockets) are not allowed")


def _too_big(what: str, reason: str) -> ConfigError:
    return ConfigError(
        f"{what}: archive is too large ({reason})",
        hint="nothing was extracted; use a smaller archive (only the manifests are needed)",
    )


def _copy(src: IO[bytes], dest: Path, *, limit: int, executable: bool, name: str, what: str) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(dest, flags, 0o755 if executable else 0o644)
    written = 0
    with os.fdopen(fd, "wb") as out:
        while chunk := src.read(_CHUNK):
            written += len(chunk)
            if written > limit:
                raise _too_big(what, f"member {name!r} holds more bytes than its header says")
            out.write(chunk)
    return written


def extract(archive: Path, dest: Path, *, what: str, limits: Limits = Limits()) -> None:
    """Extract ``archive`` into ``dest`` (which must not exist yet). ConfigError if any member is unsafe.

    On error ``dest`` may hold a partial tree; the caller extracts into a temp directory and removes it.
    """
    dest.mkdir(parents=True)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                entries = list(_zip_entries(zf, limits, what))

                def open_zip(e: _Entry) -> IO[bytes]:
                    assert isinstance(e.ref, zipfile.ZipInfo)
                    return zf.open(e.ref)

                _write(entries, dest, open_zip, limits, what)
        else:
            with tarfile.open(archive, "r:*") as tf:
                entries = list(_tar_entries(tf, limits, what))

                def open_member(e: _Entry) -> IO[bytes]:
                    assert isinstance(e.ref, tarfile.TarInfo)
                    f = tf.extractfile(e.ref)
                    if f is None:
                        raise _unsafe(what, "/".join(e.parts), "unreadable member")
                    return f

                _write(entries, dest, open_member, limits, what)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, RuntimeError) as e:
        raise ConfigError(
            f"{what}: not a readable .tar, .tar.gz or .zip archive: {e}",
            hint="check that the uri points at the archive itself (not an HTML page) and that it is complete",
        ) from e
    except OSError as e:
        raise ConfigError(f"{what}: cannot extract the archive: {e}") from e


def _write(entries: list[_Entry], dest: Path, opener: Callable[[_Entry], IO[bytes]], limits: Limits, what: str) -> None:
    seen: set[tuple[str, ...]] = set()
    for e in entries:
        name = "/".join(e.parts)
        if e.kind != "dir":
            if e.parts in seen:
                raise _unsafe(what, name, "appears twice")
            seen.add(e.parts)
    written = 0
    for e in entries:
        path = dest.joinpath(*e.parts)
        name = "/".join(e.parts)
        if e.kind == "dir":
            path.mkdir(parents=True, exist_ok=True)
        elif e.kind == "file":
            path.parent.mkdir(parents=True, exist_ok=True)
            with opener(e) as src:
                written += _copy(
                    src,
                    path,
                    limit=min(e.size, limits.max_bytes - written),
                    executable=e.executable,
                    name=name,
                    what=what,
                )
        elif e.kind == "hardlink":
            # A copy, not a link: the tree must not share inodes with anything.
            path.parent.mkdir(parents=True, exist_ok=True)
            with dest.joinpath(*e.link.split("/")).open("rb") as src:
                written += _copy(src, path, limit=limits.max_bytes - written, executable=False, name=name, what=what)
            if written > limits.max_bytes:
                raise _too_big(what, f"more than {limits.max_bytes} bytes uncompressed")
    for e in entries:
        if e.kind == "symlink":
            path = dest.joinpath(*e.parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(e.link, path)
    check_links(dest, what=what)


def check_links(root: Path, *, what: str, names_from: Path | None = None) -> None:
    """ConfigError if any symlink under ``root`` resolves (on disk, through chains) outside ``root``.

    Offending links are named relative to ``names_from`` (default ``root``), e.g. the archive's top."""
    real_root = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                resolved = os.path.realpath(path)
                if resolved != real_root and not resolved.startswith(real_root + os.sep):
                    rel = os.path.relpath(path, names_from or root).replace(os.sep, "/")
                    raise _unsafe(what, rel, f"symlink {os.readlink(path)!r} points outside the tree")


def check_tree_limits(root: Path, *, what: str, limits: Limits = Limits()) -> None:
    """ConfigError if the tree under ``root`` (a fetched remote base) holds more files or bytes than an archive
    may, or anything but directories, regular files and symlinks (links are checked by check_links)."""
    count = total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            count += 1
            if count > limits.max_members:
                raise _tree_too_big(what, f"more than {limits.max_members} files")
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
                if total > limits.max_bytes:
                    raise _tree_too_big(what, f"more than {limits.max_bytes} bytes")
            elif not (stat.S_ISDIR(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                raise _unsafe(what, os.path.relpath(path, root), "special files are not allowed")


def _tree_too_big(what: str, reason: str) -> ConfigError:
    return ConfigError(
        f"{what}: the fetched tree is too large ({reason})",
        hint="nothing was vendored; point the URL at a repository (or mirror) holding the manifests only",
    )
