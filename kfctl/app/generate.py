"""`kfctl generate`: render every enabled, non-external application into APPDIR/{vendor,kustomize,rendered}/.

Everything is written into a temp directory inside APPDIR first and swapped in only when every
application rendered, so a failure leaves the previous output intact. ``check`` renders the same way and
compares instead of swapping. Repos other than the built-in catalog are resolved first through the cache
and the lock file (kfctl.repos); ``offline`` forbids network and git, ``refresh`` ignores the lock. The
lock file is rewritten only after a successful, non-check render (``check`` reports a stale one). The KfDef is
only read.

What is vendored, remote bases included, is kfctl.app.vendor's job; rendering from the vendored copy is what
proves the vendor directory builds (without the network: every remote base is local by then). Mirrors, from
``--mirror`` and the KfDef's ``spec.mirrors``, say where remote repos and bases are fetched from.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kfctl.app.rendered import CACHE_DIR as PARSED_CACHE
from kfctl.app.rendered import remember
from kfctl.app.vendor import (
    add_remote_bases,
    apply_rewrites,
    escape_v3_literals_in,
    measure,
    translate_v3_forms,
    vendor,
)
from kfctl.catalog.model import Catalog
from kfctl.config.model import Application, KfDef
from kfctl.errors import RenderError, StaleOutputError
from kfctl.objects import Obj, key_of, parse_stream
from kfctl.plan.duplicates import merge_copies
from kfctl.render import cache as render_cache
from kfctl.render import kustomize, split
from kfctl.render.cache import CACHE_DIR, RenderCache
from kfctl.render.layout import MIRROR_OVERLAY, AppLayout, container_images, plan_application
from kfctl.repos import v3_fieldspecs
from kfctl.repos.cache import Resolution, resolve_repos
from kfctl.repos.lock import lock_path
from kfctl.repos.mirror import Mirror, Mirrors
from kfctl.repos.remote_bases import CACHE_DIR as REMOTE_CACHE
from kfctl.repos.remote_bases import RemoteResolver
from kfctl.repos.v3_fieldspecs import LeftOut

OUTPUT_DIRS = ("vendor", "kustomize", "rendered")
TMP_PREFIX = ".kfctl-tmp-"


@dataclass(frozen=True)
class GenerateResult:
    app_dir: Path
    applications: tuple[str, ...]
    changed: tuple[str, ...]  # paths relative to APPDIR that differ from what was there before
    objects: int
    kustomize: str
    seconds: float
    fetched: tuple[str, ...] = ()  # repos fetched over the network or with git in this run
    lock_written: bool = False
    vendored_files: int = 0  # in APPDIR/vendor/ as rendered
    vendored_bytes: int = 0
    vendor_fallbacks: tuple[str, ...] = ()  # applications whose whole directory (or repo) was vendored, and why
    remote_bases: int = 0  # remote kustomize bases vendored
    repinned: tuple[str, ...] = ()  # with --refresh: each repo or remote base that now resolves to other content
    warnings: tuple[str, ...] = ()  # what the user should know, though nothing failed
    removed: tuple[str, ...] = ()  # those of ``changed`` that the render no longer has (deleted from APPDIR)
    translated: tuple[str, ...] = ()  # vendored files kfctl rewrote so kustomize v5 renders what v3 did, and what


def insecure_repos(kfdef: KfDef) -> tuple[str, ...]:
    """Repos fetched over plain http:// without a sha256 in the KfDef: whoever is on the way can change what is
    installed (the lock pins what the first fetch got, but nothing checks that first fetch)."""
    return tuple(
        f"repo {r.name}: {r.uri} is fetched over plain http:// and the KfDef gives no sha256 for it; anyone on the "
        "way can change it: use https://, or add sha256: (kfdef.lock has the one this fetch got)"
        for r in kfdef.repos
        if r.uri.lower().startswith("http://") and not r.sha256
    )


def generate(
    kfdef: KfDef,
    catalog: Catalog,
    *,
    check: bool = False,
    jobs: int | None = None,
    find: Callable[[], kustomize.Kustomize] = kustomize.find_kustomize,
    offline: bool = False,
    refresh: bool = False,
    mirrors: tuple[Mirror, ...] = (),
) -> GenerateResult:
    """``mirrors`` (from ``--mirror``) come before the KfDef's ``spec.mirrors`` for the same prefix."""
    start = time.monotonic()
    k = find()
    app_dir = kfdef.app_dir
    apps = kfdef.installed_applications()
    with _fetches(private=check) as fill:
        repos, resolver = _sources(kfdef, offline=offline, refresh=refresh, mirrors=mirrors, fill=fill)
        lock_written = False
        try:
            # --check writes nothing into APPDIR (a CI checkout may be read-only); a real run renders next to
            # the output so that the final renames stay on one file system.
            tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=None if check else app_dir))
        except OSError as e:
            raise _cannot_write(app_dir, e) from e
        try:
            count, fallbacks, translated = _render_all(
                kfdef, catalog, apps, k, tmp, jobs=jobs, sources=repos.paths, use_cache=not check, resolver=resolver
            )
            _record_remote(repos, resolver)
            vendored_files, vendored_bytes = measure(tmp / "vendor")
            changed = _differences(tmp, app_dir)
            removed = sorted(p for p in changed if not (tmp / p).exists() and not (tmp / p).is_symlink())
            if check and repos.lock_stale():
                changed.append(repos.lock_file.name)  # beside the KfDef, so in APPDIR
            if check:
                if changed:
                    raise StaleOutputError(
                        f"{app_dir}: generated output is stale ({len(changed)} file(s) differ from a fresh render)",
                        details=list(changed),
                        hint=f"run `kfctl generate {app_dir}` and commit the result",
                    )
            else:
                _keep_unchanged(tmp, app_dir, changed=set(changed))
                _swap_in(tmp, app_dir)
                lock_written = repos.write_lock()
        except kustomize.KustomizeFailed as e:
            _keep_failed(e, tmp)
            raise
        except OSError as e:
            raise _cannot_write(app_dir, e) from e
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return GenerateResult(
        app_dir=app_dir,
        applications=tuple(a.name for a in apps),
        changed=tuple(changed),
        objects=count,
        kustomize=k.describe(),
        seconds=time.monotonic() - start,
        fetched=tuple(repos.fetched),
        lock_written=lock_written,
        vendored_files=vendored_files,
        vendored_bytes=vendored_bytes,
        vendor_fallbacks=tuple(fallbacks),
        translated=tuple(translated),
        remote_bases=len(repos.remote),
        repinned=tuple(repos.repinned),
        warnings=insecure_repos(kfdef),
        removed=tuple(removed),
    )


@contextmanager
def rendered_privately(
    kfdef: KfDef, catalog: Catalog, *, find: Callable[[], kustomize.Kustomize] = kustomize.find_kustomize
) -> Iterator[Path]:
    """Render every application into a temporary directory outside APPDIR and yield its ``rendered/``, for the
    commands that only read (plan, diff, check --pre): they show what the KfDef means now and write nothing
    into the app directory (a CI checkout may be read-only; ``-f /dev/stdin`` has no directory of its own).
    Repos and remote bases come from APPDIR's cache and the lock, as for generate; what the cache lacks is
    fetched into a private directory (see :func:`_fetches`), not into the cache."""
    with _fetches(private=True) as fill:
        repos, resolver = _sources(kfdef, offline=False, refresh=False, mirrors=(), fill=fill)
        tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX))
        try:
            _render_all(
                kfdef,
                catalog,
                kfdef.installed_applications(),
                find(),
                tmp,
                jobs=None,
                sources=repos.paths,
                use_cache=False,
                resolver=resolver,
            )
            yield tmp / "rendered"
        except kustomize.KustomizeFailed as e:
            _keep_failed(e, tmp)
            raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def _fetches(*, private: bool) -> Iterator[Path | None]:
    """Where a fetch puts a repo or remote base APPDIR's cache lacks: that cache (None), or, for a command that
    only reads (plan, diff, check --pre, generate --check), a temporary directory outside APPDIR, removed
    afterwards. A CI checkout has no .cache/ (it is git-ignored) and may be read-only; the read must still work
    and leave the app dir as it was."""
    if not private:
        yield None
        return
    fill = Path(tempfile.mkdtemp(prefix=TMP_PREFIX + "fetched-"))
    try:
        yield fill
    finally:
        shutil.rmtree(fill, ignore_errors=True)


def _sources(
    kfdef: KfDef, *, offline: bool, refresh: bool, mirrors: tuple[Mirror, ...], fill: Path | None = None
) -> tuple[Resolution, RemoteResolver]:
    """The KfDef's repos, resolved, and the resolver of their remote bases (``mirrors`` before spec.mirrors);
    ``fill``: where to fetch what APPDIR's cache lacks (None: into that cache)."""
    all_mirrors = Mirrors.of(mirrors, kfdef.mirrors)
    repos = resolve_repos(
        kfdef, offline=offline, refresh=refresh, mirrors=all_mirrors, fill=None if fill is None else fill / "repos"
    )
    resolver = RemoteResolver(
        kfdef.app_dir.joinpath(*REMOTE_CACHE),
        locked=repos.locked_remote,
        mirrors=all_mirrors,
        offline=offline,
        refresh=refresh,
        lock_name=lock_path(kfdef.path).name,
        fill=None if fill is None else fill / "remote",
    )
    return repos, resolver


def _record_remote(repos: Resolution, resolver: RemoteResolver) -> None:
    """What the remote bases resolved to goes into the lock beside the repos."""
    repos.remote = dict(resolver.resolved)
    repos.fetched.extend(resolver.fetched)
    repos.repinned.extend(resolver.repinned)


def _keep_failed(e: kustomize.KustomizeFailed, tmp: Path) -> None:
    """Keep the tree kustomize refused (outside APPDIR, whose output stays as it was) and say how to run
    kustomize on it: the person fixing the kustomization needs to see the files it read."""
    try:
        kept = Path(tempfile.mkdtemp(prefix=f"kfctl-failed-{e.app}-"))
        for top in ("kustomize", "vendor"):
            if (tmp / top).is_dir():
                shutil.copytree(tmp / top, kept / top, symlinks=True)
    except OSError:
        e.details = [d.replace(str(tmp), "<render dir>") for d in e.details]
        return
    e.details = [d.replace(str(tmp), str(kept)) for d in e.details]
    command = " ".join([*e.argv, str(kept / "kustomize" / e.app)])
    e.hint = (
        f"the failing kustomization is kept: `{command}` shows the same error; fix the file it names in the repo "
        "(or the KfDef) and run `kfctl generate` again (the previous output is unchanged)"
    )


def _cannot_write(app_dir: Path, e: OSError) -> RenderError:
    where = f": {e.filename}" if e.filename else ""
    return RenderError(
        f"{app_dir}: cannot write the generated output ({e.strerror or e}{where})",
        hint="make APPDIR writable and check the free disk space, then re-run; the previous output is unchanged",
    )


def _render_all(
    kfdef: KfDef,
    catalog: Catalog,
    apps: tuple[Application, ...],
    k: kustomize.Kustomize,
    tmp: Path,
    *,
    jobs: int | None,
    sources: Mapping[str, Path],
    use_cache: bool,
    resolver: RemoteResolver,
) -> tuple[int, list[str], list[str]]:
    """The objects rendered, the vendoring fallbacks, and per vendored file rewritten for kustomize v5 what
    changed in it (a line each)."""
    layouts = [plan_application(kfdef, catalog, app, sources=sources) for app in apps]
    rewrites = add_remote_bases(layouts, resolver)
    fallbacks = vendor(layouts, tmp)
    apply_rewrites(rewrites, tmp)
    translated = translate_v3_forms(layouts, tmp)
    # After the line above: the configurations it reads are v5's by then. Only for kfctl v1's KfDefs: a tree
    # written for kustomize v5 means what v5 makes of its vars.
    escaped = escape_v3_literals_in(layouts, tmp) if kfdef.legacy else []
    for layout in layouts:
        _write_files(layout, tmp)

    cache = RenderCache(kfdef.app_dir / CACHE_DIR if use_cache else None)

    def render(layout: AppLayout) -> tuple[str, list[Obj]]:
        name = layout.app.name
        try:
            # Without the load restrictor only when vendoring followed every reference and found each inside
            # the repo; after a fallback (a reference it could not follow) kustomize's restrictor stays on.
            unrestricted = layout.unrestricted and not any(f.startswith(f"application {name}: ") for f in fallbacks)
            build = _Build(k, tmp, kfdef.app_dir, layout, unrestricted=unrestricted, cache=cache)
            cacheable = use_cache
            out, objects = build.run(
                slot=f"{name}+images" if MIRROR_OVERLAY in layout.app.overlays else name, cacheable=cacheable
            )
            if MIRROR_OVERLAY in layout.app.overlays:
                mirrored = plan_application(
                    kfdef, catalog, layout.app, images=container_images(objects), sources=sources
                )
                _write_files(mirrored, tmp)
                out, objects = build.run(slot=name, cacheable=cacheable, files=mirrored.files)
        except RenderError as e:
            # What vendoring left out (a symlink leading outside the repo) is often why kustomize failed.
            e.details = [*e.details, *(f for f in fallbacks if f.startswith(f"application {name}: "))]
            raise
        return out, objects

    workers = max(1, min(jobs or os.cpu_count() or 2, 8, len(layouts) or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outputs = list(pool.map(render, layouts))

    total = 0
    rendered = tmp / "rendered"
    rendered.mkdir()
    parsed: list[tuple[str, tuple[Obj, ...]]] = []
    for layout, (text, objects) in zip(layouts, outputs, strict=True):
        name = layout.app.name
        parsed.append((name, tuple(objects)))
        total += len(objects)
        (rendered / f"{name}.yaml").write_text(text, encoding="utf-8")
        if use_cache:  # what apply will read back next: keep its objects, parsed already, for it
            remember(kfdef.app_dir / PARSED_CACHE, app=name, text=text, objects=objects)
    _check_left_out(translated, parsed)
    # An object several applications render: identical copies are applied once, differing ones refused now,
    # before anything is written to APPDIR (load_bundle merges the same way when it reads the files back).
    merge_copies(parsed, sources={name: str(kfdef.app_dir / "rendered" / f"{name}.yaml") for name, _ in parsed})
    notes = [(file, [e.describe() for e in left]) for file, left in translated]
    notes += [(file, [e.describe() for e in done]) for file, done in escaped]
    return total, fallbacks, [f"{file}: {'; '.join(what)}" for file, what in sorted(notes)]


def _check_left_out(
    translated: list[tuple[str, tuple[LeftOut, ...]]], parsed: list[tuple[str, tuple[Obj, ...]]]
) -> None:
    """A field spec left out for kustomize v5 changed nothing in v3 only if no object has a field named by its
    number: refuse the render rather than let an object come out otherwise than v3 made it."""
    for file, left in translated:
        for entry in left:
            for app, objects in parsed:
                hit = next((o for o in objects if v3_fieldspecs.reaches(o, entry)), None)
                if hit is not None:
                    raise RenderError(
                        f"application {app}: {file} {entry.describe()}: {key_of(hit)} has a field named by the "
                        "number on that path, which kustomize v3 followed and kustomize v5 cannot name",
                        hint="kustomize v5 field specs read a number as a list index: rename that field in the repo, "
                        "or write the value into it there instead of through a var",
                    )


class _Build:
    """One application's kustomize build: from the render cache when its inputs are unchanged, in chunks
    when it is large and plain (kfctl.render.split), else whole; parsed into objects either way."""

    def __init__(
        self,
        k: kustomize.Kustomize,
        tmp: Path,
        app_dir: Path,
        layout: AppLayout,
        *,
        unrestricted: bool,
        cache: RenderCache,
    ) -> None:
        self.k, self.tmp, self.app_dir, self.layout = k, tmp, app_dir, layout
        self.unrestricted = unrestricted
        self.cache = cache
        self.name = layout.app.name
        self.display = str(app_dir / "kustomize" / self.name)

    def run(self, *, slot: str, cacheable: bool, files: Mapping[str, str] | None = None) -> tuple[str, list[Obj]]:
        wrapper = self.tmp / "kustomize" / self.name
        key = ""
        if cacheable:
            command = [*self.k.argv, *(kustomize.UNRESTRICTED if self.unrestricted else ())]
            trees = [wrapper, *(self.tmp / copy.dest for copy in self.layout.vendor)]
            key = render_cache.digest(command=command, version=self.k.version, trees=trees)
            hit = self.cache.get(slot, key)
            if hit is not None:
                return hit
        pieces = split.plain_pieces(wrapper, dict(files if files is not None else self.layout.files))
        text = split.build_in_chunks(pieces, self._chunk, app=self.name) if pieces else None
        if text is None:
            text = _build(self.k, self.tmp, self.name, self.app_dir, unrestricted=self.unrestricted)
        objects = parse_stream(text, source=f"application {self.name}")
        if key:
            self.cache.put(slot, key, text, objects)
        return text, objects

    def _chunk(self, text: str) -> str:
        (self.tmp / ".chunks").mkdir(exist_ok=True)
        chunk = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=self.tmp / ".chunks"))
        (chunk / "part.yaml").write_text(text, encoding="utf-8")
        (chunk / "kustomization.yaml").write_text("resources: [part.yaml]\n", encoding="utf-8")
        try:
            return kustomize.build(self.k, chunk, app=self.name, display=self.display)
        finally:
            shutil.rmtree(chunk, ignore_errors=True)


def _build(k: kustomize.Kustomize, tmp: Path, app: str, app_dir: Path, *, unrestricted: bool) -> str:
    return kustomize.build(
        k, tmp / "kustomize" / app, app=app, display=str(app_dir / "kustomize" / app), unrestricted=unrestricted
    )


def _write_files(layout: AppLayout, tmp: Path) -> None:
    target = tmp / "kustomize" / layout.app.name
    target.mkdir(parents=True, exist_ok=True)
    for name, text in layout.files.items():
        (target / name).write_text(text, encoding="utf-8")


def _files(root: Path) -> set[str]:
    out: set[str] = set()
    for top in OUTPUT_DIRS:
        base = root / top
        if not base.is_dir():
            continue
        for path in base.rglob("*"):  # does not descend into links to directories
            if path.is_file() or path.is_symlink():
                out.add(path.relative_to(root).as_posix())
    return out


def _same(a: Path, b: Path) -> bool:
    if a.is_symlink() or b.is_symlink():
        return a.is_symlink() and b.is_symlink() and os.readlink(a) == os.readlink(b)
    return filecmp.cmp(a, b, shallow=False)


def _differences(new_root: Path, old_root: Path) -> list[str]:
    new, old = _files(new_root), _files(old_root)
    changed = [p for p in sorted(new | old) if p not in new or p not in old]
    changed += [p for p in sorted(new & old) if not _same(new_root / p, old_root / p)]
    return sorted(changed)


def _keep_unchanged(tmp: Path, app_dir: Path, *, changed: set[str]) -> None:
    """Put each file whose bytes did not change into the fresh tree as the file that is there now (a hard link
    to it), so the swap leaves it as it was, modification time included: a build or a `git status` that goes by
    mtime sees only what changed. Where a link cannot be made (a file system without them), the fresh copy takes
    the old one's times instead."""
    for rel in sorted(_files(app_dir) - changed):
        old, new = app_dir / rel, tmp / rel
        if old.is_symlink() or not new.is_file() or new.is_symlink():
            continue  # a symlink's target is what matters; its own mtime says nothing
        new.unlink()
        try:
            os.link(old, new)
        except OSError:
            shutil.copy2(old, new)


def _swap_in(tmp: Path, app_dir: Path) -> None:
    """Move the fresh output into place; the old output goes into the temp dir and is deleted with it.

    Three directories cannot be renamed at once. If anything interrupts the renames (an error, Ctrl-C),
    the ones already done are undone before re-raising, so the previous output is whole again instead
    of being deleted with the temp dir.
    """
    old = tmp / "old"
    old.mkdir()
    started: list[str] = []
    try:
        for top in OUTPUT_DIRS:
            current = app_dir / top
            started.append(top)
            if current.exists():
                os.replace(current, old / top)
            fresh = tmp / top
            if fresh.exists():
                os.replace(fresh, current)
    except BaseException:
        for top in reversed(started):
            current = app_dir / top
            if not (tmp / top).exists() and current.exists():
                os.replace(current, tmp / top)  # the fresh one, back where it is deleted
            if (old / top).exists():
                os.replace(old / top, current)
        raise
