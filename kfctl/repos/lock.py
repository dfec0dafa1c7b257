"""The lock file beside the KfDef (``kfdef.yaml`` → ``kfdef.lock``): what each fetched repo resolved to.

It records, per repo, the uri and ref it was resolved from and the archive's sha256 or the git commit, so
a later ``generate`` needs no network and renders the same bytes. The text is deterministic (repos sorted
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
    "# Written by kfctl generate: what each repo of the KfDef resolved to. Commit it with the KfDef;\n"
    "# `kfctl generate --refresh` resolves the repos again and rewrites it. Do not edit.\n"
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


def lock_path(kfdef_path: Path) -> Path:
    return kfdef_path.with_suffix(".lock")


def render_lock(entries: Iterable[LockEntry]) -> str:
    doc = {
        "apiVersion": LOCK_API,
        "kind": LOCK_KIND,
        "repos": [e.as_dict() for e in sorted(entries, key=lambda e: e.name)],
    }
    return HEADER + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=1000)


def read_lock(path: Path) -> dict[str, LockEntry]:
    """The entries of ``path`` by repo name; {} when there is no lock. ConfigError when it is malformed."""
    try:
        doc = yamlio.safe_load(yamlio.read_text(path))  # within yamlio's limits: size, depth, aliases, keys
    except FileNotFoundError:
        return {}
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
    return out


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


def write_lock(path: Path, entries: Iterable[LockEntry]) -> bool:
    """Write the lock atomically; return whether its content changed."""
    return write_atomic(path, render_lock(entries))
