"""The first thing `generate` checks of an application from a repo: that its path names a kustomization there.

Without this check, a typo (``path: ap``) reaches kustomize, whose ``lstat … no such file`` comes first and buries
the cause. Here it is one error naming the application, the repo, the path, the KfDef field to fix and the
nearest existing kustomization directories (kustomize would report the same problem, later and less clearly):

- the path does not exist in the repo;
- it leaves the repo, itself or through a symlink;
- it is a directory without a kustomization file (the kustomizations below it are named).

This module only reads the repo's directory tree; it never copies, fetches or runs anything.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path, PurePosixPath

from kfctl.errors import ConfigError
from kfctl.repos.closure import IGNORED_NAMES
from kfctl.repos.remote import KUSTOMIZATION_FILES

SUGGESTIONS = 3
# A repo bigger than this is not walked for suggestions (the error is still raised, without them).
MAX_DIRECTORIES = 50_000


def check_application_path(app: str, repo: str, root: Path, path: PurePosixPath, *, kfdef: Path) -> None:
    """Raise ConfigError unless ``root/path`` is a kustomization directory (or a file) inside ``root``."""
    field = f"{kfdef.name}: spec.applications[{app}].kustomizeConfig.repoRef.path"
    shown = path.as_posix()
    real_root = Path(os.path.realpath(root))
    target = Path(os.path.normpath(root / path))
    real = Path(os.path.realpath(target))
    if real != real_root and real_root not in real.parents:
        raise ConfigError(
            f'application {app}: path "{shown}" leaves repo {repo} (it resolves to {real})',
            hint=f"fix {field}: an application's path must stay inside its repo",
        )
    if not real.exists():
        near = _nearest(real_root, shown)
        suggestion = f"; did you mean {_quoted(near, ' or ')}?" if near else ""
        raise ConfigError(
            f'application {app}: path "{shown}" does not exist in repo {repo}{suggestion}',
            hint=f"fix {field} (a directory of the repo holding a kustomization.yaml)",
        )
    if real.is_dir() and not any((real / name).is_file() for name in KUSTOMIZATION_FILES):
        below = _kustomizations(real_root, real)[:SUGGESTIONS]
        inside = f"; kustomizations below it: {_quoted(below, ', ')}" if below else ""
        raise ConfigError(
            f'application {app}: path "{shown}" in repo {repo} is a directory without a kustomization.yaml{inside}',
            hint=f"fix {field}: point it at one of the kustomization directories",
        )


def _kustomizations(root: Path, under: Path) -> list[str]:
    """Directories below ``under`` (inside ``root``) that hold a kustomization file, relative to ``root``,
    shallowest first; links are not followed."""
    found: list[str] = []
    for seen, (directory, dirs, files) in enumerate(os.walk(under)):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_NAMES)
        if seen >= MAX_DIRECTORIES:
            break
        if any(name in files for name in KUSTOMIZATION_FILES):
            found.append(Path(directory).relative_to(root).as_posix() or ".")
    return sorted(found, key=lambda p: (p.count("/"), p))


def _nearest(root: Path, wanted: str) -> list[str]:
    """The kustomization directories of the repo whose paths are closest to ``wanted``."""
    return difflib.get_close_matches(wanted.strip("/"), _kustomizations(root, root), n=SUGGESTIONS, cutoff=0.6)


def _quoted(paths: list[str], sep: str) -> str:
    return sep.join(f'"{p}"' for p in paths)
