"""Find the catalog on disk and read its metadata files.

In a source checkout the catalog is the repository's top-level manifests/, overlays/ and platforms/;
an installed kfctl carries a copy as package data (kfctl/_catalog/). This module only reads files.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import yaml

from kfctl import yamlio
from kfctl.catalog.model import Catalog, Component, Overlay, ParameterSpec, Platform
from kfctl.errors import ConfigError

PARTS = ("manifests", "overlays", "platforms")
_PARAM_TYPES = ("string", "integer", "boolean")


def catalog_root() -> Path:
    """The directory that holds manifests/, overlays/ and platforms/."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_catalog", package.parent):
        if all((candidate / part).is_dir() for part in PARTS):
            return candidate
    raise ConfigError(
        "the kfctl catalog (manifests/, overlays/, platforms/) was not found next to the kfctl package",
        hint="reinstall kfctl (pip install .) so that its package data is present",
    )


@functools.lru_cache(maxsize=4)
def load_catalog(root: Path | None = None) -> Catalog:
    """Read every component, overlay and platform; a malformed metadata file is a ConfigError."""
    root = root or catalog_root()
    components = {
        d.name: _component(d) for d in sorted((root / "manifests").iterdir()) if (d / "component.yaml").is_file()
    }
    overlays = {d.name: _overlay(d) for d in sorted((root / "overlays").iterdir()) if (d / "overlay.yaml").is_file()}
    platforms = {
        d.name: _platform(d) for d in sorted((root / "platforms").iterdir()) if (d / "platform.yaml").is_file()
    }
    return Catalog(root=root, components=components, overlays=overlays, platforms=platforms)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yamlio.safe_load(yamlio.read_text(path))  # within yamlio's limits: size, depth, aliases, keys
    except OSError as e:
        raise ConfigError(f"{path}: cannot read catalog metadata: {e}") from e
    except yaml.YAMLError as e:
        raise ConfigError(yamlio.describe(e, str(path))) from e
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: catalog metadata must be a mapping")
    return data


def _str_list(data: dict[str, Any], key: str, path: Path) -> tuple[str, ...]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: {key} must be a list of names")
    return tuple(value)


def _parameters(data: dict[str, Any], path: Path, *, per_component: bool = False) -> dict[str, ParameterSpec]:
    out: dict[str, ParameterSpec] = {}
    for i, p in enumerate(data.get("parameters") or []):
        where = f"{path}: parameters[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            raise ConfigError(f"{where}: needs a name")
        ptype = p.get("type", "string")
        if ptype not in _PARAM_TYPES:
            raise ConfigError(f"{where}: type must be one of {', '.join(_PARAM_TYPES)}, got {ptype!r}")
        raw_targets = p.get("targets") or ({} if per_component else [])
        targets: list[dict[str, Any]] = []
        by_component: dict[str, list[dict[str, Any]]] = {}
        if per_component:
            if not isinstance(raw_targets, dict):
                raise ConfigError(f"{where}: targets must map component names to replacement targets")
            by_component = raw_targets
        else:
            if not isinstance(raw_targets, list):
                raise ConfigError(f"{where}: targets must be a list of replacement targets")
            targets = raw_targets
        out[p["name"]] = ParameterSpec(
            name=p["name"],
            type=ptype,
            description=str(p.get("description", "")),
            default=p.get("default"),
            required=bool(p.get("required", False)) or (not per_component and "default" not in p),
            targets=targets,
            targets_by_component=by_component,
        )
    return out


def _component(d: Path) -> Component:
    meta_path = d / "component.yaml"
    data = _read(meta_path)
    overlays_dir = d / "overlays"
    return Component(
        name=str(data.get("name", d.name)),
        description=str(data.get("description", "")).strip(),
        namespace=str(data.get("namespace") or ""),
        depends_on=_str_list(data, "dependsOn", meta_path),
        platforms=_str_list(data, "platforms", meta_path),
        crds=_str_list(data, "crds", meta_path),
        kubernetes=_kubernetes_range(data, meta_path),
        parameters=_parameters(data, meta_path),
        health=str(data.get("health", "")).strip(),
        path=d,
        overlays=tuple(sorted(o.name for o in overlays_dir.iterdir() if (o / "kustomization.yaml").is_file()))
        if overlays_dir.is_dir()
        else (),
    )


def _kubernetes_range(data: dict[str, Any], path: Path) -> tuple[str, str] | None:
    """``kubernetes: {min: "1.27", max: "1.33"}``: the minors `kfctl check --pre` holds the server to."""
    value = data.get("kubernetes")
    if value is None:
        return None
    bounds = (value.get("min"), value.get("max")) if isinstance(value, dict) else (None, None)
    if not all(isinstance(b, str) and re.fullmatch(r"1\.\d+", b) for b in bounds):
        raise ConfigError(f'{path}: kubernetes must be {{min: "1.N", max: "1.M"}} (quoted minors), got {value!r}')
    return str(bounds[0]), str(bounds[1])


def _overlay(d: Path) -> Overlay:
    meta_path = d / "overlay.yaml"
    data = _read(meta_path)
    return Overlay(
        name=str(data.get("name", d.name)),
        description=str(data.get("description", "")).strip(),
        parameters=_parameters(data, meta_path),
        path=d,
    )


def _platform(d: Path) -> Platform:
    meta_path = d / "platform.yaml"
    data = _read(meta_path)
    return Platform(
        name=str(data.get("name", d.name)),
        description=str(data.get("description", "")).strip(),
        plugin=str(data.get("plugin") or ""),
        storage_class=str(data.get("storageClass") or ""),
        default_components=_str_list(data, "defaultComponents", meta_path),
        parameters=_parameters(data, meta_path, per_component=True),
        patched_components=tuple(sorted(c.name for c in d.iterdir() if (c / "kustomization.yaml").is_file())),
        path=d,
    )
