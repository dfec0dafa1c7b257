"""Resolve the KfDef's repos to local directory trees, through the cache and the lock file.

Fetched repos live in APPDIR/.cache/repos/<name>-<digest>/ where the digest is the first 16 hex digits of
the archive's sha256 or of the git commit, so a cache directory is immutable: it is filled in a temp
directory inside the cache and renamed into place, and its existence means it is complete. The lock
file (:mod:`kfctl.repos.lock`) says which digest each repo resolved to; with it, a repo whose cache
directory exists needs neither network nor git. ``offline`` forbids both (a cache miss is a ConfigError
that says how to fill the cache); ``refresh`` ignores the lock and resolves everything again.

This module never writes the KfDef, writes nothing outside the cache except the lock file (only from
:meth:`Resolution.write_lock`), and runs git only through :mod:`kfctl.render.git`. A command that only reads
passes ``fill``: it reads APPDIR's cache and fetches what is missing into that private directory instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from kfctl.config.model import KfDef, Repo
from kfctl.errors import ConfigError, RenderError
from kfctl.fsutil import filling, find_content_addressed, place_content_addressed
from kfctl.render import git
from kfctl.repos.archive import check_links, extract
from kfctl.repos.download import fetch_archive
from kfctl.repos.lock import LockEntry, RemoteEntry, lock_path, read_lock_file, render_lock, write_lock
from kfctl.repos.mirror import Mapped, Mirrors
from kfctl.repos.source import Source, classify

CACHE_DIR = (".cache", "repos")
OFFLINE_HINT = "run `kfctl generate` once without --offline (with network) to fill the cache and write the lock file"


@dataclass
class Resolution:
    """Where each used repo lives on disk, and the lock entries that describe them."""

    lock_file: Path
    paths: dict[str, Path] = field(default_factory=dict)
    entries: dict[str, LockEntry] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)  # repos fetched (network or git) in this run
    had_lock: bool = False
    mirrors: Mirrors = field(default_factory=Mirrors)
    # Remote kustomize bases: what the lock said (by URL) and what this run resolved them to.
    locked_remote: dict[str, RemoteEntry] = field(default_factory=dict)
    remote: dict[str, RemoteEntry] = field(default_factory=dict)
    repinned: list[str] = field(default_factory=list)  # with --refresh: what now resolves to something else

    def lock_stale(self) -> bool:
        """Whether the lock file on disk differs from what this resolution would write (``--check``)."""
        if not self.entries and not self.remote and not self.had_lock:
            return False
        try:
            text = self.lock_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return True
        return text != render_lock(self.entries.values(), self.remote.values())

    def write_lock(self) -> bool:
        """Write the lock file when there is something to record (or one exists); True if it changed."""
        if not self.entries and not self.remote and not self.had_lock:
            return False
        return write_lock(self.lock_file, self.entries.values(), self.remote.values())


def cache_root(kfdef: KfDef) -> Path:
    return kfdef.app_dir.joinpath(*CACHE_DIR)


def used_repos(kfdef: KfDef) -> list[Repo]:
    """Non-builtin repos that an enabled application reads from, in KfDef order."""
    names = {a.repo.name for a in kfdef.installed_applications() if not a.repo.builtin}
    return [r for r in kfdef.repos if r.name in names]


def resolve_repos(
    kfdef: KfDef,
    *,
    offline: bool = False,
    refresh: bool = False,
    mirrors: Mirrors | None = None,
    fill: Path | None = None,
) -> Resolution:
    """Resolve every used repo; ConfigError/RenderError naming the repo when one cannot be had. ``mirrors``
    say where a remote repo's bytes come from; the lock records its own uri either way. ``fill``: where a fetch
    puts what APPDIR's cache lacks, instead of that cache (a command that only reads passes a private directory,
    so that it writes nothing into the app dir)."""
    lock_file = lock_path(kfdef.path)
    lock = read_lock_file(lock_file)
    locked = {} if refresh else lock.repos
    result = Resolution(
        lock_file=lock_file,
        had_lock=lock_file.exists(),
        mirrors=mirrors or Mirrors(),
        locked_remote=dict(lock.remote),
    )
    used = used_repos(kfdef)
    for repo in used:
        source = classify(repo, kfdef.app_dir, kfdef_path=kfdef.path)
        paths = [a.path for a in kfdef.installed_applications() if a.repo.name == repo.name]
        roots = (cache_root(kfdef),) if fill is None else (cache_root(kfdef), fill)
        path, entry = _resolve(source, locked.get(repo.name), roots, offline=offline, result=result, app_paths=paths)
        result.paths[repo.name] = path
        if entry is not None:
            result.entries[repo.name] = entry
            old = lock.repos.get(repo.name)
            if refresh and old is not None and old.uri == entry.uri and old.digest != entry.digest:
                pinned = "commit" if entry.kind == "git" else "sha256"
                old_value, new_value = (old.commit, entry.commit) if entry.kind == "git" else (old.sha256, entry.sha256)
                result.repinned.append(f'repo "{repo.name}" ({repo.uri}): {pinned} {old_value} -> {new_value}')
    # Keep what is pinned for repos that are defined but unused now (a disabled application's).
    used_names = {r.name for r in used}
    for repo in kfdef.repos:
        old = locked.get(repo.name)
        if repo.name not in used_names and old is not None and old.uri == repo.uri:
            result.entries[repo.name] = old
    return result


def _resolve(
    source: Source,
    locked: LockEntry | None,
    roots: tuple[Path, ...],
    *,
    offline: bool,
    result: Resolution,
    app_paths: list[str],
) -> tuple[Path, LockEntry | None]:
    """``roots``: the cache directories looked in, in order; a fetch fills the last."""
    if source.kind == "directory":
        path = Path(source.location)
        if not path.is_dir():
            raise ConfigError(f"{source.where}: directory {path} does not exist")
        return path, None
    if source.kind == "archive":
        return _archive(source, locked, roots, offline=offline, result=result, app_paths=app_paths)
    return _git(source, locked, roots, offline=offline, result=result)


def _archive(
    source: Source,
    locked: LockEntry | None,
    roots: tuple[Path, ...],
    *,
    offline: bool,
    result: Resolution,
    app_paths: list[str],
) -> tuple[Path, LockEntry]:
    repo = source.repo
    match = (
        locked
        if locked is not None
        and locked.kind == "archive"
        and locked.uri == repo.uri
        and (repo.sha256 is None or locked.sha256 == repo.sha256)
        else None
    )
    expected = repo.sha256 or (match.sha256 if match else None)
    if expected is not None:
        cached = find_content_addressed(roots, f"{repo.name}-{expected[:16]}")
        if cached is not None:
            entry = LockEntry(name=repo.name, uri=repo.uri, kind="archive", sha256=expected)
            return _archive_root(cached, app_paths, what=source.where), entry
    if offline and not source.local:
        raise _offline_miss(source, locked, match is not None or repo.sha256 is not None)
    root = roots[-1]
    with filling(root, f".tmp-{repo.name}-") as tmp:
        archive = tmp / "archive"
        mapped = _mapped(source, result)
        actual = fetch_archive(mapped.location, archive, local=mapped.local, what=_where(source, mapped))
        if expected is not None and actual != expected:
            pinned_by = "spec.repos[].sha256 in the KfDef" if repo.sha256 else lock_path_name(result)
            raise ConfigError(
                f"{source.where}: sha256 mismatch: expected {expected} ({pinned_by}), got {actual}",
                hint=(
                    "nothing was extracted; if the archive changed on purpose, update spec.repos[].sha256"
                    if repo.sha256
                    else "nothing was extracted; if the archive changed on purpose, run `kfctl generate --refresh`"
                ),
            )
        final = root / f"{repo.name}-{actual[:16]}"
        if not final.is_dir():
            tree = tmp / "tree"
            extract(archive, tree, what=source.where)
            top = _single_top(tree)
            if top is not None:  # it may become the repo root: its links must stay inside it, too
                check_links(top, what=source.where, names_from=tree)
            place_content_addressed(tree, final)
        result.fetched.append(repo.name)
        return _archive_root(final, app_paths, what=source.where), LockEntry(
            name=repo.name, uri=repo.uri, kind="archive", sha256=actual
        )


def _git(
    source: Source, locked: LockEntry | None, roots: tuple[Path, ...], *, offline: bool, result: Resolution
) -> tuple[Path, LockEntry]:
    repo = source.repo
    ref = repo.ref or "HEAD"
    match = (
        locked
        if locked is not None and locked.kind == "git" and locked.uri == repo.uri and locked.ref == repo.ref
        else None
    )
    commit = match.commit if match else (ref if git.is_full_commit(ref) else None)
    if commit is not None:
        cached = find_content_addressed(roots, f"{repo.name}-{commit[:16]}")
        if cached is not None:
            return cached, LockEntry(name=repo.name, uri=repo.uri, kind="git", ref=repo.ref, commit=commit)
    if offline:
        raise _offline_miss(source, locked, commit is not None)
    root = roots[-1]
    with filling(root, f".tmp-{repo.name}-") as tmp:
        tree = tmp / "tree"
        mapped = _mapped(source, result)
        got = git.fetch_tree(mapped.location, commit or ref, tree, what=_where(source, mapped))
        if commit is not None and got != commit:
            raise RenderError(f"{source.where}: fetched commit {got}, but {commit} was asked for")
        check_links(tree, what=source.where)
        final = root / f"{repo.name}-{got[:16]}"
        if not final.is_dir():
            place_content_addressed(tree, final)
        result.fetched.append(repo.name)
        return final, LockEntry(name=repo.name, uri=repo.uri, kind="git", ref=repo.ref, commit=got)


def _mapped(source: Source, result: Resolution) -> Mapped:
    """Where a repo's bytes come from: its own location, or a mirror's when one maps its uri."""
    if source.local:
        return Mapped(original=source.location, location=source.location, local=True)
    mapped = result.mirrors.map(source.location)
    if mapped.local and mapped.location.startswith("file://") and source.kind == "archive":
        return Mapped(mapped.original, unquote(urlsplit(mapped.location).path), True, mapped.mirror)
    return mapped


def _where(source: Source, mapped: Mapped) -> str:
    return source.where if mapped.mirror is None else f"{source.where}, from {mapped.tried()}"


def lock_path_name(result: Resolution) -> str:
    return result.lock_file.name


def _offline_miss(source: Source, locked: LockEntry | None, pinned: bool) -> ConfigError:
    repo = source.repo
    if pinned:
        why = "is pinned but not in the cache"
    elif locked is None:
        why = "is not in the lock file"
    elif locked.uri != repo.uri:
        why = f"changed uri since the lock file was written (locked: {locked.uri})"
    elif source.kind == "git" and locked.ref != repo.ref:
        why = f"changed ref since the lock file was written (locked: {locked.ref}, now: {repo.ref})"
    else:
        why = "does not match its lock file entry"
    return ConfigError(f"{source.where} {why}, and --offline forbids fetching it", hint=OFFLINE_HINT)


def _archive_root(tree: Path, app_paths: list[str], *, what: str) -> Path:
    """GitHub-style archives wrap everything in one directory (manifests-1.10.0/): when that is the only
    entry and the applications' paths are not found from the archive's own top, the repo is inside it."""
    top = _single_top(tree)
    if top is None or (app_paths and all((tree / p.strip("/")).exists() for p in app_paths)):
        return tree
    check_links(top, what=what, names_from=tree)  # cheap, and the cache may have been tampered with
    return top


def _single_top(tree: Path) -> Path | None:
    children = list(tree.iterdir())
    if len(children) == 1 and children[0].is_dir() and not children[0].is_symlink():
        return children[0]
    return None
