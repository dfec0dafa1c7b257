"""The files a kustomization needs: what `kfctl generate` vendors from a repo instead of the whole repo.

Starting from the directory (or file) an application points at, follow every kustomization.yaml /
kustomization.yml / Kustomization and collect each local path kustomize may read: ``resources``/``bases``
(a directory is another kustomization), ``components``, ``patches``/``patchesJson6902`` ``path``,
``patchesStrategicMerge`` files, config/secret generator ``files``/``envs``/``env``, ``replacements``
``path``, ``generators``/``transformers``/``validators`` (files or kustomization directories),
``configurations``, ``crds``, ``openapi.path``, and for ``helmCharts`` the chart home directory (whole) and
values files. ``../`` references are followed anywhere inside ``root``. Remote references (URLs, git) are
left for kustomize, as they were; inline patches and transformers need nothing.

Anything this module cannot account for (a kustomization it cannot parse, a referenced path that is
missing or leaves ``root``) is a *problem*: the caller then vendors more rather than produce a directory
that no longer builds. An unreadable kustomization is flagged apart: what it refers to is unknown. This
module only reads files under ``root``; it never copies or fetches.

Symlinks: a repo is untrusted, and a link may point anywhere (``cm.txt -> ~/.ssh/id_rsa``). Every path is
resolved link by link, as kustomize itself does (it evaluates symlinks before it reads or applies its load
restrictor); a link whose real target is outside realpath(``root``) is a problem and nothing behind it is
taken. A link inside is kept in ``links`` (link -> real target, both relative to the real root), for the
caller to recreate as a link, and its target is taken; ``files`` are real paths only, never through a link.
Directory walks never follow links blindly, so a link to ``/`` or a link loop costs nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from kfctl import yamlio
from kfctl.repos.remote import KUSTOMIZATION_FILES, looks_remote

# Never vendored: version-control metadata, kfctl's own caches and generate's temp dirs (TMP_PREFIX).
IGNORED_NAMES = frozenset({".git", ".cache", "__pycache__"})
IGNORED_PREFIX = ".kfctl-tmp-"


@dataclass(frozen=True)
class Closure:
    files: frozenset[PurePosixPath]  # relative to root
    remote: tuple[str, ...] = ()  # remote references, left for kustomize to fetch
    problems: tuple[str, ...] = ()  # why ``files`` may be incomplete; the caller must vendor more
    # A kustomization could not be read: what it refers to, possibly anywhere in root via "../", is unknown.
    unreadable: bool = False
    # Symlinks inside the repo on the way to ``files``: link -> its real target, both relative to root.
    links: Mapping[PurePosixPath, PurePosixPath] = field(default_factory=dict)


def tree_files(directory: Path, *, root: Path) -> Closure:
    """Every file under ``directory`` (a file is itself), skipping IGNORED_NAMES, as ``files`` and ``links``
    relative to realpath(``root``). Links are not descended into: a link inside the repo is kept as a link and
    its target taken too (once, so a loop ends); a link leading outside is a problem and is left out."""
    walk = _Walk(root)
    start = Path(os.path.normpath(directory.absolute())).relative_to(walk.given).as_posix() or "."
    real = walk.locate(walk.root, start, "application path")
    if real is not None:
        walk.tree(real)
    return walk.result()


def kustomization_closure(start: Path, *, root: Path) -> Closure:
    """The files under ``root`` that ``kustomize build`` of ``start`` may read."""
    return _Walk(root).run(start)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class _Walk:
    def __init__(self, root: Path) -> None:
        self.given = Path(os.path.normpath(root.absolute()))  # as the caller names it, for ``start``
        self.root = Path(os.path.realpath(root))  # every path below is real: no link on the way
        self.files: set[PurePosixPath] = set()
        self.links: dict[PurePosixPath, PurePosixPath] = {}
        self.remote: list[str] = []
        self.problems: list[str] = []
        self.visited: set[Path] = set()
        self.walked: set[Path] = set()
        self.unreadable = False

    def run(self, start: Path) -> Closure:
        self.reference(self.root, Path(os.path.normpath(start.absolute())).relative_to(self.given).as_posix() or ".")
        return self.result()

    def result(self) -> Closure:
        links = dict(sorted(self.links.items()))
        return Closure(frozenset(self.files), tuple(self.remote), tuple(self.problems), self.unreadable, links)

    def show(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path != self.root else "."

    def locate(self, directory: Path, entry: str, where: str) -> Path | None:
        """The real path ``entry`` names, or None after recording it as remote or a problem."""
        if looks_remote(entry):
            self.remote.append(entry)
            return None
        # Joined and cleaned first, then links resolved: kustomize's order (filepath.Join, then EvalSymlinks).
        path = Path(os.path.normpath(directory / entry))
        if not _inside(path, self.root):
            self.problems.append(f'{where}: "{entry}" is outside the repo')
            return None
        real = self.resolve(path, entry, where)
        if real is None:
            return None
        if not real.exists():
            self.problems.append(f'{where}: "{entry}" does not exist')
            return None
        return real

    def resolve(self, path: Path, entry: str | None, where: str) -> Path | None:
        """``path`` (cleaned, under root) with each symlink on it resolved and recorded in ``links``; None,
        after recording a problem, when a link leads outside the repo or nowhere (dangling, a loop)."""
        current = self.root
        for part in path.relative_to(self.root).parts:
            current = current / part
            if not current.is_symlink():
                continue
            link, text = self.show(current), os.readlink(current)
            what = f'{where}: "{entry}": symlink' if entry is not None else f"{where}: symlink"
            try:
                real = Path(os.path.realpath(current, strict=True))
            except OSError:
                real = None
            loose = real or Path(os.path.realpath(current))
            if not _inside(loose, self.root):
                self.problems.append(f"{what} {link} -> {text} points outside the repo, to {loose}")
                return None
            if real is None:
                self.problems.append(f"{what} {link} -> {text} leads nowhere (dangling or a loop)")
                return None
            self.links[self.relative(current)] = self.relative(real)
            current = real
        return current

    def tree(self, top: Path) -> None:
        """Every file under the real directory (or file) ``top``; see tree_files."""
        pending = [top]
        while pending:
            directory = pending.pop()
            if any(_inside(directory, w) for w in self.walked):
                continue  # a link back into a tree already taken: a loop, or a second name for it
            if not directory.is_dir():
                if directory.is_file():  # not a FIFO or device: copying one blocks
                    self.files.add(self.relative(directory))
                continue
            self.walked.add(directory)
            for dirpath, dirnames, filenames in os.walk(directory):  # never follows links
                base = Path(dirpath)
                dirnames[:] = sorted(
                    d
                    for d in dirnames
                    if d not in IGNORED_NAMES and not d.startswith(IGNORED_PREFIX) and base / d not in self.walked
                )
                for name in sorted([*dirnames, *filenames]):
                    path = base / name
                    if not path.is_symlink():
                        if name in filenames and path.is_file():  # not a FIFO or device: copying one blocks
                            self.files.add(self.relative(path))
                        continue
                    real = self.resolve(path, None, f"{self.show(directory)}/")
                    if real is not None:
                        pending.append(real)

    def reference(self, directory: Path, entry: str, where: str = "application path") -> None:
        """A resources/bases/components/generators entry: a file, or a directory holding a kustomization."""
        path = self.locate(directory, entry, where)
        if path is None:
            return
        if path.is_dir():
            self.kustomization(path, where)
        else:
            self.files.add(self.relative(path))

    def file(self, directory: Path, entry: Any, where: str) -> None:
        if not isinstance(entry, str) or not entry:
            return
        path = self.locate(directory, entry, where)
        if path is None:
            return
        if path.is_dir():
            self.tree(path)
        else:
            self.files.add(self.relative(path))

    def relative(self, path: Path) -> PurePosixPath:
        return PurePosixPath(path.relative_to(self.root).as_posix())

    def kustomization(self, directory: Path, where: str) -> None:
        if directory in self.visited:  # real paths: a cycle through links ends here too
            return
        self.visited.add(directory)
        kfile = next((directory / n for n in KUSTOMIZATION_FILES if (directory / n).is_file()), None)
        if kfile is None:
            self.problems.append(f"{where}: {self.show(directory)}/ holds no kustomization")
            return
        shown = self.show(kfile)
        real = self.resolve(kfile, kfile.name, where) if kfile.is_symlink() else kfile
        if real is None:
            return
        self.files.add(self.relative(real))
        try:
            # Held to yamlio's limits, so a hostile repo's file costs bounded memory (a YAML bomb, a huge file).
            doc: Any = yamlio.load_kustomization(yamlio.read_text(real))
        except OSError as e:
            self.problems.append(f"{shown}: cannot be read ({e.strerror or e})")
            self.unreadable = True
            return
        except yaml.YAMLError as e:
            self.problems.append(yamlio.describe(e, shown))
            self.unreadable = True
            return
        if not isinstance(doc, dict):
            self.problems.append(f"{shown}: is not a mapping")
            self.unreadable = True
            return
        for field_name in ("resources", "bases", "components", "generators", "transformers", "validators"):
            for entry in _strings(doc.get(field_name)):
                if "\n" not in entry:  # a multi-line entry is an inline transformer config
                    self.reference(directory, entry, f"{shown} {field_name}")
        for entry in _strings(doc.get("patchesStrategicMerge")):
            if "\n" not in entry and not entry.lstrip().startswith("{"):  # else an inline patch
                self.file(directory, entry, f"{shown} patchesStrategicMerge")
        for field_name in ("patches", "patchesJson6902", "replacements"):
            for item in _mappings(doc.get(field_name)):
                self.file(directory, item.get("path"), f"{shown} {field_name}")
        for field_name in ("configurations", "crds"):
            for entry in _strings(doc.get(field_name)):
                self.file(directory, entry, f"{shown} {field_name}")
        openapi = doc.get("openapi")
        if isinstance(openapi, dict):
            self.file(directory, openapi.get("path"), f"{shown} openapi")
        for field_name in ("configMapGenerator", "secretGenerator"):
            for item in _mappings(doc.get(field_name)):
                for entry in _strings(item.get("files")):
                    self.file(directory, entry.split("=", 1)[-1], f"{shown} {field_name} files")
                for entry in [*_strings(item.get("envs")), *_strings([item.get("env")])]:
                    self.file(directory, entry, f"{shown} {field_name} envs")
        self.helm(directory, doc, shown)

    def helm(self, directory: Path, doc: dict[Any, Any], shown: str) -> None:
        charts = list(_mappings(doc.get("helmCharts")))
        if not charts and not doc.get("helmChartInflationGenerator"):
            return
        helm_globals = doc.get("helmGlobals")
        home = helm_globals.get("chartHome") if isinstance(helm_globals, dict) else None
        home = home if isinstance(home, str) and home else "charts"
        home_dir = Path(os.path.normpath(directory / home))
        if home_dir.is_dir() and _inside(home_dir, self.root):
            real = self.resolve(home_dir, home, f"{shown} helmGlobals chartHome")
            if real is not None:
                self.tree(real)  # charts pulled there earlier, taken whole
        for chart in charts:
            self.file(directory, chart.get("valuesFile"), f"{shown} helmCharts valuesFile")
            for entry in _strings(chart.get("additionalValuesFiles")):
                self.file(directory, entry, f"{shown} helmCharts additionalValuesFiles")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, list):
        yield from (v for v in value if isinstance(v, str) and v)


def _mappings(value: Any) -> Iterator[dict[Any, Any]]:
    if isinstance(value, list):
        yield from (v for v in value if isinstance(v, dict))
