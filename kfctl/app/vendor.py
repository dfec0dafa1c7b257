"""Copy what each application's kustomization uses into APPDIR/vendor/, remote bases included.

From a repo, only the files the applications' kustomizations use are vendored (kfctl.repos.closure); when
that set cannot be computed for an application (a missing path), that application's whole directory tree
is vendored too, and the whole repo when a kustomization cannot be parsed (its "../" references are
unknown); the result says so.

A remote base a vendored kustomization names (``https://github.com/org/repo//path?ref=v1``, a plain
``https://…/file.yaml``) is resolved once through kfctl.repos.remote_bases (pinned in the lock, kept in the
cache, fetched through a mirror when one maps it), vendored under APPDIR/vendor/remote/<host>/<repo>@<pin>/
by the same closure rules, and the vendored kustomization is rewritten to name that local copy (a header
comment keeps the URL). Remote bases inside remote bases are followed the same way. So ``kustomize build``
of APPDIR/kustomize/<app>/ needs no network.

Nothing from outside a vendored source is ever copied: files are copied from their real path only after
checking it is inside realpath(source) with no link on the way, and a symlink inside the source is recreated
as a relative link to its vendored target (not as a copy), so kustomize resolves and restricts it exactly as
in the source. A link that leads outside is left out (kfctl.repos.closure reports it).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections import defaultdict
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from kfctl import yamlio
from kfctl.errors import ConfigError, KfctlError, RenderError
from kfctl.render.layout import AppLayout, VendorCopy
from kfctl.repos import v3_fieldspecs as v3
from kfctl.repos.closure import Closure, kustomization_closure, tree_files
from kfctl.repos.kustomization_refs import remote_entries, rewrite
from kfctl.repos.remote import KUSTOMIZATION_FILES, remote_references
from kfctl.repos.remote_bases import OfflineMiss, RemoteResolver
from kfctl.repos.remote_url import parse_remote
from kfctl.repos.v3_fieldspecs import Escaped, LeftOut

REMOTE_DIR = PurePosixPath("vendor/remote")
MAX_REMOTE_BASES = 200  # a chain of remote bases naming ever new ones ends here
REWRITE_NOTE = "kfctl generate vendored the remote bases of this file (the lock file pins each):"

Rewrites = dict[PurePosixPath, dict[str, str]]


def add_remote_bases(layouts: list[AppLayout], resolver: RemoteResolver) -> Rewrites:
    """Resolve every remote base reachable from the layouts' vendored kustomizations, add each fetched tree to
    its layout's vendor list, and return the rewrites: vendored kustomization file -> {URL: local path}."""
    rewrites: Rewrites = defaultdict(dict)
    misses: list[OfflineMiss] = []
    count = 0
    for layout in layouts:
        pending = [c for c in layout.vendor if c.start is not None]
        while pending:
            copy = pending.pop(0)
            assert copy.start is not None
            real_source = Path(os.path.realpath(copy.source))
            files = sorted({ref.file for ref in remote_references(copy.source / copy.start, root=copy.source)})
            for kfile in files:
                rel = PurePosixPath(kfile.relative_to(real_source).as_posix())
                for entry in remote_entries(yamlio.read_text(kfile)):
                    count += 1
                    where = f"application {layout.app.name}: {_origin(copy)}{rel}:{entry.line}"
                    if count > MAX_REMOTE_BASES:
                        raise RenderError(f"{where}: more than {MAX_REMOTE_BASES} remote bases; is there a loop?")
                    try:
                        fetched = resolver.resolve(parse_remote(entry.value), where=where)
                    except OfflineMiss as e:
                        misses.append(e)
                        continue
                    except KfctlError as e:
                        if not e.message.startswith(where):
                            e.message = f"{where}: {e.message}"
                            e.args = (e.message,)
                        raise
                    dest = REMOTE_DIR / fetched.vendor_name
                    new = VendorCopy(fetched.tree, dest, start=fetched.start)
                    if new not in layout.vendor:
                        layout.vendor.append(new)
                        pending.append(new)
                    target = dest / fetched.start if str(fetched.start) != "." else dest
                    rewrites[copy.dest / rel][entry.value] = os.path.relpath(target, (copy.dest / rel).parent)
    if misses:
        raise ConfigError(
            f"--offline, but {len(misses)} remote base(s) cannot be had without the network",
            details=[m.message for m in misses],
            hint=misses[0].hint,
        )
    return rewrites


def _origin(copy: VendorCopy) -> str:
    """Where a vendored kustomization comes from, for messages: the repo, or the remote base it is part of."""
    if copy.dest.is_relative_to(REMOTE_DIR):
        return f"remote base {copy.dest.relative_to(REMOTE_DIR)}: "
    if copy.dest.is_relative_to("vendor/repos"):
        return f'repo "{copy.dest.relative_to("vendor/repos")}": '
    return f"{copy.dest}/"


def apply_rewrites(rewrites: Rewrites, tmp: Path) -> None:
    """Point the vendored kustomizations in ``tmp`` at their remote bases' local copies."""
    for rel, replacements in sorted(rewrites.items()):
        path = tmp / rel
        text = path.read_text(encoding="utf-8")
        path.write_text(rewrite(text, replacements, note=REWRITE_NOTE), encoding="utf-8")


def translate_v3_forms(layouts: list[AppLayout], tmp: Path) -> list[tuple[str, tuple[LeftOut, ...]]]:
    """Rewrite, in the vendored copies in ``tmp``, the transformer configurations (``configurations:`` files)
    whose field specs kustomize v3 ignored and kustomize v5 refuses (kfctl.repos.v3_fieldspecs): each file
    rewritten (relative to APPDIR) and what it left out. Only regular files inside ``tmp`` are touched."""
    real_tmp = Path(os.path.realpath(tmp))
    done: set[Path] = set()
    found: list[tuple[str, tuple[LeftOut, ...]]] = []
    for dest in sorted({copy.dest for layout in layouts for copy in layout.vendor}):
        for directory, dirnames, filenames in os.walk(tmp / dest):  # never follows links
            dirnames.sort()
            for kfile in (Path(directory) / n for n in KUSTOMIZATION_FILES if n in filenames):
                for entry in _configurations(kfile):
                    path = Path(os.path.realpath(kfile.parent / entry))
                    if path in done or not path.is_relative_to(real_tmp) or not path.is_file():
                        continue
                    done.add(path)
                    try:
                        text, left_out = v3.rewrite(yamlio.read_text(path))
                    except (OSError, yaml.YAMLError):
                        continue  # kustomize reports it, in its own words
                    if left_out:
                        path.write_text(text, encoding="utf-8")
                        found.append((path.relative_to(real_tmp).as_posix(), left_out))
    return found


def escape_v3_literals_in(layouts: list[AppLayout], tmp: Path) -> list[tuple[str, tuple[Escaped, ...]]]:
    """In the vendored copies in ``tmp``, double the ``$`` of each string that kustomize v3 left as written and
    kustomize v5 would substitute (kfctl.repos.v3_fieldspecs), in the resource and patch files of every
    application whose build has vars (without vars kustomize expands nothing); each file rewritten (relative
    to APPDIR) and what it escaped. A string v3 substituted and v5 would not, a file two builds would rewrite
    differently, or one a build without vars also reads, is an error naming it."""
    real_tmp = Path(os.path.realpath(tmp))
    done: dict[Path, tuple[str, str]] = {}  # file -> (the application that rewrote it, its new text)
    read_plain: dict[Path, str] = {}  # files read by a build without vars -> that application
    found: list[tuple[str, tuple[Escaped, ...]]] = []
    for layout in layouts:
        name = layout.app.name
        files: list[Path] = []
        order: list[Path] = []  # the build's kustomizations, bases before the one naming them
        for copy in layout.vendor:
            if copy.start is not None:
                root = Path(os.path.realpath(tmp / copy.dest))
                files += [root / rel for rel in sorted(kustomization_closure(root / copy.start, root=root).files)]
                _bases_first(root / copy.start, order)
        docs = {k: _kustomization(k) for k in order}
        configs = {
            k: [Path(os.path.realpath(k.parent / e)) for e in _strings_of(d.get("configurations"))]
            for k, d in docs.items()
        }
        objects = [
            f
            for f in files
            if f.suffix in (".yaml", ".yml")
            and f.name not in KUSTOMIZATION_FILES
            and not any(f in c for c in configs.values())
        ]
        if not any(d.get("vars") for d in docs.values()):
            read_plain.update(dict.fromkeys(objects, name))
            continue
        own = [[s for c in configs[k] if c.is_file() for s in v3.var_references(yamlio.read_text(c))] for k in order]
        v3_specs, v5_specs = v3.merged(v3.V3_VAR_REFERENCES, own), v3.merged(v3.V5_VAR_REFERENCES, own)
        for path in objects:
            rel = path.relative_to(real_tmp).as_posix()
            try:
                text, escaped, refused = v3.escape_v3_literals(yamlio.read_text(path), v3_specs, v5_specs)
            except (OSError, yaml.YAMLError):
                continue  # kustomize reports it, in its own words
            if refused:
                raise RenderError(
                    f"application {name}: {rel} {refused[0].describe()}: kustomize v3 substituted vars there and "
                    "kustomize v5 does not (its default field specs drop the build's own for that field)",
                    hint="add a varReference field spec naming that kind and field to the repo's configurations",
                )
            if path in done and done[path][1] != text:
                raise RenderError(
                    f"{rel}: applications {done[path][0]} and {name} build it with different field specs, so "
                    "kustomize v3 substituted otherwise in it for each",
                    hint="give each application its own copy of the file in the repo",
                )
            if escaped and path not in done:
                done[path] = (name, text)
                found.append((rel, escaped))
    for path, (name, text) in done.items():
        if path in read_plain:
            raise RenderError(
                f"{path.relative_to(real_tmp).as_posix()}: application {name} needs $ written $$ in it for "
                f"kustomize v5 and application {read_plain[path]}, whose build has no vars, needs it as written",
                hint="give each application its own copy of the file in the repo",
            )
        path.write_text(text, encoding="utf-8")
    return found


def _bases_first(directory: Path, order: list[Path], seen: set[Path] | None = None) -> None:
    """The kustomization files under ``directory``, as kustomize v3 accumulates them: each one's resources and
    then bases (directories: their kustomizations, first), then itself."""
    seen = set() if seen is None else seen
    kfile = next((directory / n for n in KUSTOMIZATION_FILES if (directory / n).is_file()), None)
    if kfile is None or directory in seen:
        return
    seen.add(directory)
    doc = _kustomization(kfile)
    for entry in [*_strings_of(doc.get("resources")), *_strings_of(doc.get("bases"))]:
        child = Path(os.path.realpath(directory / entry))
        if child.is_dir():
            _bases_first(child, order, seen)
    order.append(kfile)


def _kustomization(path: Path) -> dict[str, Any]:
    try:
        doc = yamlio.load_kustomization(yamlio.read_text(path))
    except (OSError, yaml.YAMLError):
        return {}  # kustomize reports it, in its own words
    return doc if isinstance(doc, dict) else {}


def _strings_of(value: Any) -> list[str]:
    return [e for e in value if isinstance(e, str) and e] if isinstance(value, list) else []


def _configurations(kfile: Path) -> list[str]:
    return _strings_of(_kustomization(kfile).get("configurations"))


def vendor(layouts: list[AppLayout], tmp: Path) -> list[str]:
    """Copy every vendored part into ``tmp``; one line per application whose closure fell back to its tree."""
    picked: dict[PurePosixPath, tuple[str, Path, set[PurePosixPath], dict[PurePosixPath, PurePosixPath]]] = {}
    fallbacks: list[str] = []
    for layout in layouts:
        name = layout.app.name
        for copy in layout.vendor:
            if copy.start is None:  # a catalog part, taken whole: by the same rule as a repo
                tree = tree_files(copy.source, root=copy.source)
                if tree.problems:
                    raise RenderError(f"application {name}: cannot vendor {copy.source}: {tree.problems[0]}")
                _pick(picked, copy.dest, name, copy.source, tree)
                continue
            start = copy.source / copy.start
            closure = kustomization_closure(start, root=copy.source)
            _pick(picked, copy.dest, name, copy.source, closure)
            if closure.problems:
                # An unreadable kustomization may refer anywhere in the repo ("../"): only all of it is safe.
                whole_repo = closure.unreadable
                tree = tree_files(copy.source if whole_repo else start, root=copy.source)
                _pick(picked, copy.dest, name, copy.source, tree)
                what = (
                    f"the whole repo {copy.dest}/" if whole_repo else f"its whole directory {copy.dest / copy.start}/"
                )
                more = f" (and {len(closure.problems) - 1} more)" if len(closure.problems) > 1 else ""
                left_out = f"; left out: {'; '.join(tree.problems)}" if tree.problems else ""
                fallbacks.append(f"application {name}: vendored {what} because {closure.problems[0]}{more}{left_out}")
    for dest, (name, source, files, links) in picked.items():
        real_source = Path(os.path.realpath(source))
        for rel in sorted(files):
            _copy_inside(real_source, rel, tmp / dest / rel, app=name)
        for rel, target in sorted(links.items()):
            link = tmp / dest / rel
            try:
                link.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.path.relpath(target, rel.parent), link)
            except OSError as e:
                raise RenderError(f"application {name}: cannot vendor symlink {source / rel}: {e}") from e
    return fallbacks


def _pick(
    picked: dict[PurePosixPath, tuple[str, Path, set[PurePosixPath], dict[PurePosixPath, PurePosixPath]]],
    dest: PurePosixPath,
    name: str,
    source: Path,
    closure: Closure,
) -> None:
    """Several applications may use one repo: its vendored files and links are the union of their closures."""
    entry = picked.setdefault(dest, (name, source, set(), {}))
    entry[2].update(closure.files)
    entry[3].update(closure.links)


def _copy_inside(real_source: Path, rel: PurePosixPath, target: Path, *, app: str) -> None:
    """Copy ``real_source/rel`` only when no symlink is on its way, so its content comes from inside the source
    (closure reports real paths; checked again here because this is where content leaves the repo)."""
    path = real_source / rel
    if os.path.realpath(path) != str(path) or not stat.S_ISREG(os.lstat(path).st_mode):
        raise RenderError(f"application {app}: refusing to vendor {path}: not a regular file inside {real_source}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target, follow_symlinks=False)
    except OSError as e:
        raise RenderError(f"application {app}: cannot copy {path}: {e}") from e


def measure(root: Path) -> tuple[int, int]:
    """Files and bytes under ``root``."""
    files = size = 0
    for path in root.rglob("*") if root.is_dir() else ():
        if path.is_file() and not path.is_symlink():  # a link's target is counted where it is
            files += 1
            size += path.stat().st_size
    return files, size
