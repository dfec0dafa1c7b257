"""Fetch a remote kustomize base once, pin it in the lock, and keep it in the cache for every later run.

A git base is fetched at its ref (through a mirror when one maps its URL) and pinned to the commit the ref
resolved to; a plain file is downloaded and pinned to its sha256 and size. Both land in
APPDIR/.cache/remote/ under a content address (the commit or the sha256), filled in a temp directory and
renamed into place, so a cache directory that exists is complete. With a lock entry and its cache
directory, nothing is fetched. A lock entry whose cache directory is missing is fetched again and must
resolve to the same commit or sha256: a moved tag or a changed file is an error naming both values, never a
silent re-pin (``--refresh`` re-resolves and reports what changed). ``offline`` forbids every fetch.

A fetched tree is held to the limits of a repo archive (file count, total size, no symlink leading out);
git trees hold no absolute paths or devices by construction. This module writes only under its cache
directory (or under ``fill``, where a command that only reads has what the cache lacks fetched), and runs git
only through :mod:`kfctl.render.git`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from kfctl.errors import ConfigError, FetchError, KfctlError, RenderError
from kfctl.fsutil import filling, find_content_addressed, place_content_addressed
from kfctl.render import git
from kfctl.repos.archive import check_links, check_tree_limits
from kfctl.repos.download import fetch_archive
from kfctl.repos.lock import RemoteEntry
from kfctl.repos.mirror import Mapped, Mirrors
from kfctl.repos.remote_url import RemoteSpec

CACHE_DIR = (".cache", "remote")
DEFAULT_TIMEOUT = 120.0
FETCH_HINT = (
    "check the URL and its ref; without network, map it to a mirror (`kfctl generate --mirror PREFIX=LOCATION` "
    "or spec.mirrors in the KfDef), or run with --offline from a filled cache (.cache/remote/ and the lock file)"
)
OFFLINE_HINT = (
    "run `kfctl generate` once with network (or with a mirror: --mirror PREFIX=LOCATION) to fetch it into "
    ".cache/remote/ and pin it in the lock file"
)
LINK_HINT = "nothing was vendored; a remote base must not hold a symlink leading out of its repository"
# What git or the HTTP client said, in words a person acts on; the first matching needle wins.
_REASONS = (
    ("could not resolve host", "the host name does not resolve (DNS)"),
    ("name or service not known", "the host name does not resolve (DNS)"),
    ("connection refused", "the connection was refused"),
    ("couldn't connect to server", "the connection was refused"),
    ("failed to connect", "the connection was refused"),
    ("couldn't find remote ref", "the ref does not exist in the repository"),
    ("not our ref", "the ref does not exist in the repository"),
    ("authentication failed", "the server asks for credentials (authentication required)"),
    ("could not read username", "the server asks for credentials (authentication required)"),
    ("http 401", "the server asks for credentials (authentication required)"),
    ("http 403", "access is forbidden (HTTP 403)"),
    ("http 404", "not found (HTTP 404)"),
    ("not found", "the repository was not found"),
    ("does not appear to be a git repository", "the repository was not found"),
    ("did not finish within", "it timed out"),
    ("timed out", "it timed out"),
    ("does not exist", "it does not exist"),
)


class OfflineMiss(ConfigError):
    """A remote base --offline cannot have: not pinned, or pinned but not in the cache. The caller gathers
    them, so one run names every one."""


@dataclass(frozen=True)
class Fetched:
    """A remote base on disk: ``tree`` (a cache directory) holds it, ``start`` is the kustomization inside."""

    spec: RemoteSpec
    entry: RemoteEntry
    tree: Path
    start: PurePosixPath

    @property
    def vendor_name(self) -> PurePosixPath:
        """Its directory under APPDIR/vendor/remote/: the repository's (or file's) URL and the pin, readable."""
        return PurePosixPath(f"{self.spec.slug}@{self.entry.digest[:12]}")


@dataclass
class RemoteResolver:
    cache: Path
    locked: Mapping[str, RemoteEntry]
    mirrors: Mirrors = field(default_factory=Mirrors)
    offline: bool = False
    refresh: bool = False
    lock_name: str = "the lock file"
    resolved: dict[str, RemoteEntry] = field(default_factory=dict)  # by URL, for the lock
    repinned: list[str] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)
    _git: dict[tuple[str, str | None], tuple[str, Path]] = field(default_factory=dict)  # (repo, ref) -> commit, tree
    # Where a fetch puts what ``cache`` lacks (None: ``cache``): a private directory for a command that only reads.
    fill: Path | None = None

    @property
    def _roots(self) -> tuple[Path, ...]:
        return (self.cache,) if self.fill is None else (self.cache, self.fill)

    def resolve(self, spec: RemoteSpec, *, where: str) -> Fetched:
        entry, tree, start = self._git_base(spec, where) if spec.kind == "git" else self._file(spec, where)
        self.resolved[spec.url] = entry
        return Fetched(spec=spec, entry=entry, tree=tree, start=start)

    # -- git --------------------------------------------------------------------------------------------

    def _pinned_commit(self, spec: RemoteSpec) -> str | None:
        """The commit the lock pins this repo and ref to (this URL's entry first, then a sibling's)."""
        if self.refresh:
            return None
        own = self.locked.get(spec.url)
        if own is not None and own.kind == "git" and own.repo == spec.repo and own.ref == spec.ref:
            return own.commit
        for other in self.locked.values():
            if other.kind == "git" and other.repo == spec.repo and other.ref == spec.ref:
                return other.commit
        return None

    def _git_base(self, spec: RemoteSpec, where: str) -> tuple[RemoteEntry, Path, PurePosixPath]:
        key = (spec.repo, spec.ref)
        if key not in self._git:
            self._git[key] = self._git_tree(spec, where)
        commit, tree = self._git[key]
        start = PurePosixPath(spec.path) if spec.path else PurePosixPath()
        if not (tree / start).is_dir():
            raise RenderError(
                f'{where}: remote base {spec.url}: path "{spec.path}" does not exist in {spec.repo} at {commit[:12]}',
                hint="check the path in the URL (after the repository, or after //)",
            )
        entry = RemoteEntry(url=spec.url, kind="git", repo=spec.repo, ref=spec.ref, commit=commit)
        return entry, tree, start

    def _git_tree(self, spec: RemoteSpec, where: str) -> tuple[str, Path]:
        pinned = self._pinned_commit(spec)
        if pinned is None and spec.ref is not None and git.is_full_commit(spec.ref):
            pinned = spec.ref
        name = spec.slug.replace("/", "_")
        if pinned is not None:
            cached = find_content_addressed(self._roots, f"git-{name}-{pinned[:16]}")
            if cached is not None:
                return pinned, cached
        if self.offline:
            raise self._offline_miss(spec, where, pinned=pinned is not None)
        mapped = self.mirrors.map(spec.repo)
        store = self._roots[-1]
        with filling(store, ".tmp-git-") as tmp:
            tree = tmp / "tree"
            ask = spec.ref if spec.ref is not None else "HEAD"
            try:
                got = git.fetch_tree(
                    mapped.location, ask, tree, what=f"{where}: {spec.url}", timeout=spec.timeout or DEFAULT_TIMEOUT
                )
            except RenderError as e:
                raise _cannot_fetch(where, spec, mapped, e) from e
            if pinned is not None and got != pinned:
                raise ConfigError(
                    f"{where}: remote base {spec.url}: ref {spec.ref or 'HEAD'} of {spec.repo} now resolves to "
                    f"commit {got}, but {self.lock_name} pins {pinned}",
                    hint="nothing was changed; if the ref moved on purpose, run `kfctl generate --refresh` to pin the "
                    "new commit, or write the pinned commit as the ref (?ref=COMMIT) to keep the old content",
                )
            try:
                check_links(tree, what=f"{where}: remote base {spec.url}")
            except ConfigError as e:
                raise ConfigError(e.message, hint=LINK_HINT) from e
            check_tree_limits(tree, what=f"{where}: remote base {spec.url}")
            final = store / f"git-{name}-{got[:16]}"
            place_content_addressed(tree, final)
            self.fetched.append(f"{spec.repo}@{spec.ref or 'HEAD'}")
            self._note_repin(spec, got)
            return got, final

    def _offline_miss(self, spec: RemoteSpec, where: str, *, pinned: bool) -> OfflineMiss:
        why = "is pinned but not in the cache" if pinned else f"is not pinned in {self.lock_name}"
        return OfflineMiss(f"{where}: remote base {spec.url} {why}", hint=OFFLINE_HINT)

    def _note_repin(self, spec: RemoteSpec, got: str) -> None:
        old = self.locked.get(spec.url)
        if self.refresh and old is not None and old.kind == "git" and old.commit != got:
            self.repinned.append(f"remote repo {spec.repo}: ref {spec.ref or 'HEAD'} moved from {old.commit} to {got}")

    # -- files ------------------------------------------------------------------------------------------

    def _file(self, spec: RemoteSpec, where: str) -> tuple[RemoteEntry, Path, PurePosixPath]:
        old = self.locked.get(spec.url)
        pinned = old if old is not None and old.kind == "file" and not self.refresh else None
        if pinned is not None:
            cached = find_content_addressed(self._roots, f"file-{pinned.digest[:16]}")
            if cached is not None:
                return pinned, cached, PurePosixPath()
        if self.offline:
            raise self._offline_miss(spec, where, pinned=pinned is not None)
        mapped = self.mirrors.map(spec.repo)
        local = mapped.local
        location = unquote(urlsplit(mapped.location).path) if mapped.location.startswith("file://") else mapped.location
        store = self._roots[-1]
        with filling(store, ".tmp-file-") as tmp:
            tree = tmp / "tree"
            tree.mkdir()
            name = _file_name(spec)
            try:
                sha = fetch_archive(
                    location, tree / name, local=local, what=f"{where}: {spec.url}", timeout=spec.timeout or 60.0
                )
            except KfctlError as e:
                raise _cannot_fetch(where, spec, mapped, e) from e
            size = (tree / name).stat().st_size
            if pinned is not None and sha != pinned.sha256:
                raise ConfigError(
                    f"{where}: remote base {spec.url}: its sha256 is now {sha} ({size} bytes), but {self.lock_name} "
                    f"pins {pinned.sha256} ({pinned.size} bytes)",
                    hint="nothing was changed; if the file changed on purpose, run `kfctl generate --refresh`",
                )
            if self.refresh and old is not None and old.kind == "file" and old.sha256 != sha:
                self.repinned.append(f"remote base {spec.url}: sha256 changed from {old.sha256} to {sha}")
            # kustomize reads the file as one of the referring kustomization's resources; a kustomization of
            # its own holding only that file builds to the same objects, and keeps the reference a directory.
            (tree / "kustomization.yaml").write_text(
                f"# Written by kfctl: {spec.url}, vendored (sha256 {sha}).\nresources:\n- {name}\n", encoding="utf-8"
            )
            final = store / f"file-{sha[:16]}"
            place_content_addressed(tree, final)
            self.fetched.append(spec.url)
            return RemoteEntry(url=spec.url, kind="file", sha256=sha, size=size), final, PurePosixPath()


def _file_name(spec: RemoteSpec) -> str:
    last = urlsplit(spec.repo).path.rstrip("/").rsplit("/", 1)[-1]
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in last)
    return safe if safe and safe not in (".", "..", "kustomization.yaml") else "resource.yaml"


def reason(error: KfctlError) -> str:
    """What went wrong, in a person's words, from the fetcher's message and git's stderr."""
    text = " ".join([error.message, *error.details]).lower()
    for needle, words in _REASONS:
        if needle in text:
            return words
    return error.details[-1] if error.details else error.message


def _cannot_fetch(where: str, spec: RemoteSpec, mapped: Mapped, error: KfctlError) -> FetchError:
    tried = "" if mapped.mirror is None else f" from {mapped.tried()}"
    ref = f" at ref {spec.ref}" if spec.kind == "git" and spec.ref else ""
    return FetchError(
        f"{where}: remote base {spec.url} cannot be fetched{tried}{ref}: {reason(error)}",
        details=[line for line in error.details if line.strip()][-4:],
        hint=FETCH_HINT if mapped.mirror is None else f"check that the mirror holds {mapped.location}",
    )
