"""Find kustomize references that need the network (remote bases) in a kustomization tree.

kustomize treats a ``resources``/``bases``/``components`` entry that is not a local file or directory as a
URL and fetches it (``github.com/org/repo/path?ref=v1``, ``https://…/x.yaml``, ``git@…``). With
``--offline`` those must be found before kustomize runs. This module only reads files under the tree it
is given (it never follows a reference out of it) and never fetches anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kfctl import yamlio

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
REFERENCE_FIELDS = ("resources", "bases", "components")
_HOSTLIKE = re.compile(r"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+(:[0-9]+)?/")


@dataclass(frozen=True)
class RemoteReference:
    file: Path  # the kustomization that names it
    field: str  # resources | bases | components
    value: str


def looks_remote(value: str) -> bool:
    return "://" in value or value.startswith("git@") or bool(_HOSTLIKE.match(value))


def remote_references(start: Path, *, root: Path) -> list[RemoteReference]:
    """Every remote reference reachable from the kustomization in ``start``, staying inside ``root``."""
    found: list[RemoteReference] = []
    seen: set[Path] = set()
    real_root = root.resolve()

    def visit(directory: Path) -> None:
        directory = directory.resolve()
        if directory in seen or not (directory == real_root or real_root in directory.parents):
            return
        seen.add(directory)
        kfile = next((directory / n for n in KUSTOMIZATION_FILES if (directory / n).is_file()), None)
        if kfile is None:
            return
        try:
            # Held to yamlio's limits, so a hostile repo's file costs bounded memory (a YAML bomb, a huge file).
            doc: Any = yamlio.safe_load(yamlio.read_text(kfile))
        except (OSError, yaml.YAMLError):
            return  # kustomize will report it, with its own words
        if not isinstance(doc, dict):
            return
        for field_name in REFERENCE_FIELDS:
            entries = doc.get(field_name)
            if not isinstance(entries, list):
                continue
            for entry in entries:
                if not isinstance(entry, str):
                    continue
                local = directory / entry
                if local.exists():
                    if local.is_dir():
                        visit(local)
                elif looks_remote(entry):
                    found.append(RemoteReference(kfile, field_name, entry))

    visit(start)
    return found
