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
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
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


def tree_files(directory: Path, *, root: Path) -> set[PurePosixPath]:
    """Every file under ``directory`` (relative to ``root``), skipping IGNORED_NAMES; a file is itself."""
    if directory.is_file():
        return {PurePosixPath(directory.relative_to(root).as_posix())}
    out: set[PurePosixPath] = set()
    for dirpath, dirnames, filenames in os.walk(directory, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES and not d.startswith(IGNORED_PREFIX))
        for name in filenames:
            out.add(PurePosixPath(Path(dirpath, name).relative_to(root).as_posix()))
    return out


def kustomization_closure(start: Path, *, root: Path) -> Closure:
    """The files under ``root`` that ``kustomize build`` of ``start`` may read."""
    return _Walk(root).run(start)


class _Walk:
    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.normpath(root.absolute()))
        self.files: set[PurePosixPath] = set()
        self.remote: list[str] = []
        self.problems: list[str] = []
        self.visited: set[Path] = set()
        self.unreadable = False

    def run(self, start: Path) -> Closure:
        self.reference(self.root, Path(os.path.normpath(start.absolute())).relative_to(self.root).as_posix() or ".")
        return Closure(frozenset(self.files), tuple(self.remote), tuple(self.problems), self.unreadable)

    def show(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path != self.root else "."

    def locate(self, directory: Path, entry: str, where: str) -> Path | None:
        """The local path ``entry`` names, or None after recording it as remote or a problem."""
        if looks_remote(entry):
            self.remote.append(entry)
            return None
        path = Path(os.path.normpath(directory / entry))
        if path != self.root and self.root not in path.parents:
            self.problems.append(f'{where}: "{entry}" is outside the repo')
            return None
        if not path.exists():
            self.problems.append(f'{where}: "{entry}" does not exist')
            return None
        return path

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
            self.files |= tree_files(path, root=self.root)
        else:
            self.files.add(self.relative(path))

    def relative(self, path: Path) -> PurePosixPath:
        return PurePosixPath(path.relative_to(self.root).as_posix())

    def kustomization(self, directory: Path, where: str) -> None:
        if directory in self.visited:
            return
        self.visited.add(directory)
        kfile = next((directory / n for n in KUSTOMIZATION_FILES if (directory / n).is_file()), None)
        if kfile is None:
            self.problems.append(f"{where}: {self.show(directory)}/ holds no kustomization")
            return
        self.files.add(self.relative(kfile))
        shown = self.show(kfile)
        try:
            # Held to yamlio's limits, so a hostile repo's file costs bounded memory (a YAML bomb, a huge file).
            doc: Any = yamlio.safe_load(yamlio.read_text(kfile))
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
        home_dir = Path(os.path.normpath(directory / (home if isinstance(home, str) and home else "charts")))
        if home_dir.is_dir() and (home_dir == self.root or self.root in home_dir.parents):
            self.files |= tree_files(home_dir, root=self.root)  # charts pulled there earlier, taken whole
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
