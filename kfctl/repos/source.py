"""What kind of thing a ``spec.repos[].uri`` names: a local directory, an archive (local or over HTTP), or
a git repository. Pure string work on the KfDef's values; it must not touch the network or the disk beyond
making relative paths absolute.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from kfctl.config.model import Repo
from kfctl.errors import ConfigError

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
SourceKind = Literal["directory", "archive", "git"]
KINDS_HINT = (
    "a repo uri is a local directory (./dir, /abs/dir, file:///dir), an archive (.tar.gz, .tgz, .tar, .zip: "
    "a local path, file:// or http(s)://, optionally pinned with sha256), or git (git+https://…, git+file://…, "
    "or any URL ending in .git, with ref: for the tag, branch or commit)"
)


@dataclass(frozen=True)
class Source:
    """A repo's location, normalised. ``location`` is a Path for local things, a URL string otherwise."""

    repo: Repo
    kind: SourceKind
    location: str  # absolute path (directory, local archive/git) or URL
    local: bool  # no network needed to read it

    @property
    def where(self) -> str:
        return f'repo "{self.repo.name}" ({self.repo.uri})'


def is_archive(path: str) -> bool:
    return path.lower().endswith(ARCHIVE_SUFFIXES)


def classify(repo: Repo, base_dir: Path, *, kfdef_path: Path) -> Source:
    """Classify ``repo.uri``; relative paths are taken relative to ``base_dir`` (the KfDef's directory)."""
    uri = repo.uri.strip()
    where = f'{kfdef_path}: repo "{repo.name}"'
    if not uri:
        raise ConfigError(f"{where}: uri is empty", hint=KINDS_HINT)
    kind: SourceKind
    if uri.startswith("git+"):
        url = uri[len("git+") :]
        scheme = urlsplit(url).scheme
        if scheme not in ("https", "http", "file", "ssh"):
            raise ConfigError(f"{where}: unsupported git URL {uri!r}", hint=KINDS_HINT)
        kind, location, local = "git", url, scheme == "file"
    elif uri.rstrip("/").endswith(".git") or uri.startswith("git@"):
        scheme = urlsplit(uri).scheme
        if "://" in uri:
            if scheme not in ("https", "http", "file", "ssh"):
                raise ConfigError(f"{where}: unsupported git URL {uri!r}", hint=KINDS_HINT)
            kind, location, local = "git", uri, scheme == "file"
        elif uri.startswith("git@"):
            kind, location, local = "git", uri, False
        else:
            kind, location, local = "git", str(_local_path(uri, base_dir)), True
    else:
        parts = urlsplit(uri)
        if "://" in uri and parts.scheme not in ("file", "http", "https"):
            raise ConfigError(f"{where}: unsupported uri scheme {parts.scheme!r} in {uri!r}", hint=KINDS_HINT)
        if parts.scheme in ("http", "https"):
            if not is_archive(parts.path):
                raise ConfigError(f"{where}: cannot tell what {uri!r} is", hint=KINDS_HINT)
            kind, location, local = "archive", uri, False
        else:
            path = _local_path(unquote(parts.path) if parts.scheme == "file" else uri, base_dir)
            kind = "archive" if is_archive(str(path)) else "directory"
            location, local = str(path), True
    if repo.ref is not None and kind != "git":
        raise ConfigError(f"{where}: ref is only meaningful for a git repo, and {uri!r} is {_a(kind)}")
    if repo.sha256 is not None and kind != "archive":
        raise ConfigError(
            f"{where}: sha256 pins an archive, and {uri!r} is {_a(kind)}",
            hint="pin a git repo with ref: <commit>; a local directory cannot be pinned",
        )
    return Source(repo=repo, kind=kind, location=location, local=local)


def _a(kind: SourceKind) -> str:
    return {"directory": "a local directory", "archive": "an archive", "git": "a git repo"}[kind]


def _local_path(text: str, base_dir: Path) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else base_dir / path
