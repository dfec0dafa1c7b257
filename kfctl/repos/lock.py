"""The lock file beside the KfDef (``kfdef.yaml`` → ``kfdef.lock``): what each fetched repo resolved to.

It records, per repo, the uri and ref it was resolved from and the archive's sha256 or the git commit, and
per remote kustomize base a repo's kustomizations name (``remoteBases``: the URL as written, and the commit its
ref resolved to or the file's sha256 and size), so a later ``generate`` needs no network and renders the same
bytes. The text is deterministic (repos sorted
by name, fixed key order) so it diffs cleanly in git. Local directories are not recorded: there is
nothing to pin. This module reads and writes only the lock file; it never touches the KfDef.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kfctl import yamlio
from kfctl.errors import ConfigError
from kfctl.fsutil import write_atomic

LOCK_API = "kfctl.kubeflow.org/v1alpha1"
LOCK_KIND = "KfDefLock"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_HINT = "run `kfctl generate --refresh` to resolve the repos again and rewrite the lock file"
HEADER = (
    "# Written by kfctl generate: what each repo of the KfDef, and each remote base their kustomizations\n"
    "# name, resolved to. Commit it with the KfDef; `kfctl generate --refresh` resolves them again and\n"
    "# rewrites it. Do not edit.\n"
)


@dataclass(frozen=True)
class LockEntry:
    name: str
    uri: str
    kind: str  # "archive" | "git"
    ref: str | None = None  # git: the ref as the KfDef said it
    commit: str | None = None  # git: the full commit hash
    sha256: str | None = None  # archive: digest of the archive file

    @property
    def digest(self) -> str:
        """The content address used in the cache directory name."""
        value = self.commit if self.kind == "git" else self.sha256
        assert value is not None
        return value[:16]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "uri": self.uri, "kind": self.kind}
        if self.kind == "git":
            out["ref"] = self.ref
            out["commit"] = self.commit
        else:
            out["sha256"] = self.sha256
        return out


@dataclass(frozen=True)
class RemoteEntry:
    """A remote kustomize base, pinned. ``url`` is the key: exactly what the kustomization wrote."""

    url: str
    kind: str  # "git" | "file"
    repo: str | None = None  # git: the clone URL
    ref: str | None = None  # git: the ref as the URL said it (None: the default branch)
    commit: str | None = None  # git: the full commit hash
    sha256: str | None = None  # file: digest of its bytes
    size: int | None = None  # file: its length in bytes

    @property
    def digest(self) -> str:
        value = self.commit if self.kind == "git" else self.sha256
        assert value is not None
        return value

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"url": self.url, "kind": self.kind}
        if self.kind == "git":
            out.update({"repo": self.repo, "ref": self.ref, "commit": self.commit})
        else:
            out.update({"sha256": self.sha256, "size": self.size})
        return out


@dataclass(frozen=True)
class Lock:
    repos: dict[str, LockEntry]
    remote: dict[str, RemoteEntry]


def lock_path(kfdef_path: Path) -> Path:
    return kfdef_path.with_suffix(".lock")


def render_lock(entries: Iterable[LockEntry], remote: Iterable[RemoteEntry] = ()) -> str:
    doc: dict[str, Any] = {
        "apiVersion": LOCK_API,
        "kind": LOCK_KIND,
        "repos": [e.as_dict() for e in sorted(entries, key=lambda e: e.name)],
    }
    remote_list = [e.as_dict() for e in sorted(remote, key=lambda e: e.url)]
    if remote_list:
        doc["remoteBases"] = remote_list
    return HEADER + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=1000)


def read_lock(path: Path) -> dict[str, LockEntry]:
    """The repo entries of ``path`` by repo name; {} when there is no lock. ConfigError when it is malformed."""
    return read_lock_file(path).repos


def read_lock_file(path: Path) -> Lock:
    """Every entry of ``path``: repos by name, remote bases by URL. Empty when there is no lock; ConfigError
    when it is malformed."""
    try:
        doc = yamlio.safe_load(yamlio.read_text(path))  # within yamlio's limits: size, depth, aliases, keys
    except FileNotFoundError:
        return Lock({}, {})
    except OSError as e:
        raise _bad(path, f"cannot read: {e}") from e
    except yaml.YAMLError as e:
        raise ConfigError(yamlio.describe(e, str(path)), hint=_HINT) from e
    if not isinstance(doc, dict) or doc.get("kind") != LOCK_KIND or doc.get("apiVersion") != LOCK_API:
        raise _bad(path, f"not a {LOCK_KIND} ({LOCK_API})")
    repos = doc.get("repos") or []
    if not isinstance(repos, list):
        raise _bad(path, "repos must be a list")
    out: dict[str, LockEntry] = {}
    for i, item in enumerate(repos):
        entry = _entry(item)
        if entry is None:
            raise _bad(path, f"repos[{i}] is not a valid entry")
        out[entry.name] = entry
    remote_items = doc.get("remoteBases") or []
    if not isinstance(remote_items, list):
        raise _bad(path, "remoteBases must be a list")
    remote: dict[str, RemoteEntry] = {}
    for i, item in enumerate(remote_items):
        remote_entry = _remote_entry(item)
        if remote_entry is None:
            raise _bad(path, f"remoteBases[{i}] is not a valid entry")
        remote[remote_entry.url] = remote_entry
    return Lock(out, remote)


def _remote_entry(item: Any) -> RemoteEntry | None:
    if not isinstance(item, dict) or not isinstance(item.get("url"), str):
        return None
    url, kind = item["url"], item.get("kind")
    if kind == "git":
        repo, ref, commit = item.get("repo"), item.get("ref"), item.get("commit")
        if not isinstance(repo, str) or (ref is not None and not isinstance(ref, str)):
            return None
        if not isinstance(commit, str) or not _HEX40.match(commit):
            return None
        return RemoteEntry(url=url, kind="git", repo=repo, ref=ref, commit=commit)
    if kind == "file":
        sha, size = item.get("sha256"), item.get("size")
        if not isinstance(sha, str) or not _HEX64.match(sha) or not isinstance(size, int) or size < 0:
            return None
        return RemoteEntry(url=url, kind="file", sha256=sha, size=size)
    return None


def _entry(item: Any) -> LockEntry | None:
    if not isinstance(item, dict):
        return None
    name, uri, kind = item.get("name"), item.get("uri"), item.get("kind")
    if not isinstance(name, str) or not isinstance(uri, str):
        return None
    if kind == "git":
        ref, commit = item.get("ref"), item.get("commit")
        if (ref is not None and not isinstance(ref, str)) or not isinstance(commit, str) or not _HEX40.match(commit):
            return None
        return LockEntry(name=name, uri=uri, kind="git", ref=ref, commit=commit)
    if kind == "archive":
        sha = item.get("sha256")
        if not isinstance(sha, str) or not _HEX64.match(sha):
            return None
        return LockEntry(name=name, uri=uri, kind="archive", sha256=sha)
    return None


def _bad(path: Path, why: str) -> ConfigError:
    return ConfigError(f"{path}: {why}", hint=_HINT)


def write_lock(path: Path, entries: Iterable[LockEntry], remote: Iterable[RemoteEntry] = ()) -> bool:
    """Write the lock atomically; return whether its content changed."""
    return write_atomic(path, render_lock(entries, remote))
