"""What kind of thing a ``spec.repos[].uri`` names — a local directory, an archive (local or over HTTP) or a git
repository — judged from its text alone, with its ``ref`` and ``sha256``.

The KfDef loader reports a uri it cannot use at the uri's line, beside every other problem of the file;
kfctl.repos.source makes the same judgement into a Source (resolving a local path against the KfDef's
directory). No network, no disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
SourceKind = Literal["directory", "archive", "git"]
KINDS_HINT = (
    "a repo uri is a local directory (./dir, /abs/dir, file:///dir), an archive (.tar.gz, .tgz, .tar, .zip: "
    "a local path, file:// or http(s)://, optionally pinned with sha256), or git (git+https://…, git+file://…, "
    "or any URL ending in .git, with ref: for the tag, branch or commit)"
)
PIN_HINT = "pin a git repo with ref: <commit>; a local directory cannot be pinned"
GIT_SCHEMES = ("https", "http", "file", "ssh")


class UriProblem(ValueError):
    """Why a uri cannot be used; ``field`` is the repo's field at fault (uri, ref or sha256)."""

    def __init__(self, message: str, *, field: str = "uri", hint: str | None = KINDS_HINT) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.hint = hint


@dataclass(frozen=True)
class UriKind:
    kind: SourceKind
    location: str  # a URL, or a local path (``path`` True) still to be taken from the KfDef's directory
    local: bool  # no network needed to read it
    path: bool


def uri_kind(uri: str, *, ref: str | None = None, sha256: str | None = None) -> UriKind:
    """Classify ``uri``; UriProblem when kfctl cannot fetch what it names, or ref/sha256 do not fit it."""
    uri = uri.strip()
    if not uri:
        raise UriProblem("uri is empty")
    found: UriKind
    if uri.startswith("git+"):
        url = uri[len("git+") :]
        scheme = urlsplit(url).scheme
        if scheme not in GIT_SCHEMES:
            raise UriProblem(f"unsupported git URL {uri!r}")
        found = UriKind("git", url, scheme == "file", path=False)
    elif uri.rstrip("/").endswith(".git") or uri.startswith("git@"):
        if "://" in uri:
            scheme = urlsplit(uri).scheme
            if scheme not in GIT_SCHEMES:
                raise UriProblem(f"unsupported git URL {uri!r}")
            found = UriKind("git", uri, scheme == "file", path=False)
        elif uri.startswith("git@"):
            found = UriKind("git", uri, False, path=False)
        else:
            found = UriKind("git", uri, True, path=True)
    else:
        parts = urlsplit(uri)
        if "://" in uri and parts.scheme not in ("file", "http", "https"):
            raise UriProblem(f"unsupported uri scheme {parts.scheme!r} in {uri!r}")
        if parts.scheme in ("http", "https"):
            if not is_archive(parts.path):
                raise UriProblem(f"cannot tell what {uri!r} is")
            found = UriKind("archive", uri, False, path=False)
        else:
            text = unquote(parts.path) if parts.scheme == "file" else uri
            found = UriKind("archive" if is_archive(text) else "directory", text, True, path=True)
    if ref is not None and found.kind != "git":
        raise UriProblem(
            f"ref is only meaningful for a git repo, and {uri!r} is {_a(found.kind)}", field="ref", hint=None
        )
    if sha256 is not None and found.kind != "archive":
        raise UriProblem(f"sha256 pins an archive, and {uri!r} is {_a(found.kind)}", field="sha256", hint=PIN_HINT)
    return found


def is_archive(path: str) -> bool:
    return path.lower().endswith(ARCHIVE_SUFFIXES)


def _a(kind: SourceKind) -> str:
    return {"directory": "a local directory", "archive": "an archive", "git": "a git repo"}[kind]
