"""Find the catalog on disk and read its metadata files.

In a source checkout the catalog is the repository's top-level manifests/, overlays/ and platforms/;
an installed kfctl carries a copy as package data (kfctl/_catalog/). This module only reads files.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, cast

import yaml

from kfctl import yamlio
from kfctl.catalog.model import (
    ALPHABETS,
    SECRET_LENGTHS,
    SECRET_NAME,
    Catalog,
    Component,
    GeneratedSecret,
    KubernetesRange,
    Overlay,
    ParameterSpec,
    ParamType,
    Platform,
    SecretKey,
)
from kfctl.catalog.paramtypes import TEXT_FORMS, TYPE_NAMES
from kfctl.errors import ConfigError, must_be

PARTS = ("manifests", "overlays", "platforms")
PARAMETER_KEYS = (
    "name",
    "type",
    "default",
    "description",
    "required",
    "targets",
    "records",  # platforms only
    "values",  # enum only
    "minimum",  # integer only
    "maximum",
    "pattern",  # string only
    "example",
    "emptyMeans",
)


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
        where = f"{path}: parameter {p['name']}"
        unknown = sorted(set(p) - set(PARAMETER_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(PARAMETER_KEYS)}")
        raw_targets = p.get("targets") or ({} if per_component else [])
        targets: list[dict[str, Any]] = []
        by_component: dict[str, list[dict[str, Any]]] = {}
        read_by: tuple[str, ...] = ()
        if per_component:
            raw_records = p.get("records") or {}
            if not isinstance(raw_targets, dict) or not isinstance(raw_records, dict):
                raise ConfigError(f"{where}: targets and records must map component names to replacement targets")
            read_by = tuple(raw_targets)
            by_component = {
                c: [*raw_targets.get(c, []), *raw_records.get(c, [])] for c in {**raw_targets, **raw_records}
            }
        else:
            if not isinstance(raw_targets, list):
                raise ConfigError(f"{where}: targets must be a list of replacement targets")
            targets = raw_targets
        out[p["name"]] = ParameterSpec(
            name=p["name"],
            description=str(p.get("description", "")),
            default=p.get("default"),
            required=bool(p.get("required", False)) or (not per_component and "default" not in p),
            targets=targets,
            targets_by_component=by_component,
            read_by=read_by,
            **_value_type(p, where),
        )
    return out


def _value_type(p: dict[str, Any], where: str) -> dict[str, Any]:
    """The fields that say what a parameter's values may be, as ParameterSpec keywords. Every parameter declares
    its type; the other fields belong to one type each (values to enum, minimum and maximum to integer, pattern to
    string), and a pattern comes with an example, because a message cannot show a regular expression alone."""
    ptype = p.get("type")
    if ptype is None:
        raise ConfigError(f"{where}: needs a type, one of {', '.join(TYPE_NAMES)}")
    if ptype not in TYPE_NAMES:
        raise ConfigError(f"{where}: type must be one of {', '.join(TYPE_NAMES)}, got {ptype!r}")
    owners = {"values": "enum", "minimum": "integer", "maximum": "integer", "pattern": "string"}
    misplaced = [f"{key} (a field of {owner})" for key, owner in owners.items() if key in p and ptype != owner]
    if misplaced:
        raise ConfigError(f"{where}: type {ptype} takes no {', '.join(misplaced)}")
    values = p.get("values")
    if ptype == "enum" and (
        not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values)
    ):
        raise ConfigError(f"{where}: an enum needs values, a list of the names it takes")
    bounds = {key: p.get(key) for key in ("minimum", "maximum")}
    if any(b is not None and (isinstance(b, bool) or not isinstance(b, int)) for b in bounds.values()):
        raise ConfigError(f"{where}: minimum and maximum must be integers")
    pattern = p.get("pattern", "")
    try:
        re.compile(pattern)
    except (re.error, TypeError) as e:
        raise ConfigError(f"{where}: pattern is not a regular expression: {e}") from e
    if pattern and not p.get("example"):
        raise ConfigError(f"{where}: a pattern needs an example, a value that matches it")
    empty_means = p.get("emptyMeans", "")
    if empty_means and ptype not in TEXT_FORMS and not pattern:
        raise ConfigError(f"{where}: emptyMeans is for a type whose values are text of one form")
    return {
        "type": cast(ParamType, ptype),
        "values": tuple(values or ()),
        "minimum": bounds["minimum"],
        "maximum": bounds["maximum"],
        "pattern": str(pattern),
        "example": str(p.get("example", "")),
        "empty_means": str(empty_means),
    }


def _component(d: Path) -> Component:
    meta_path = d / "component.yaml"
    data = _read(meta_path)
    overlays_dir = d / "overlays"
    parameters = _parameters(data, meta_path)
    return Component(
        name=str(data.get("name", d.name)),
        description=str(data.get("description", "")).strip(),
        namespace=str(data.get("namespace") or ""),
        depends_on=_str_list(data, "dependsOn", meta_path),
        platforms=_str_list(data, "platforms", meta_path),
        crds=_str_list(data, "crds", meta_path),
        kubernetes=kubernetes_range(data, meta_path),
        parameters=parameters,
        secrets=_secrets(data, meta_path, parameters),
        health=str(data.get("health", "")).strip(),
        path=d,
        overlays=tuple(sorted(o.name for o in overlays_dir.iterdir() if (o / "kustomization.yaml").is_file()))
        if overlays_dir.is_dir()
        else (),
    )


def _secrets(data: dict[str, Any], path: Path, parameters: dict[str, ParameterSpec]) -> tuple[GeneratedSecret, ...]:
    """``secrets:``: the Secrets kfctl generates at the first apply (see docs/catalog.md). Malformed: ConfigError."""
    raw = data.get("secrets") or []
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: secrets must be a list of Secrets to generate")
    out: list[GeneratedSecret] = []
    for i, s in enumerate(raw):
        where = f"{path}: secrets[{i}]"
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not SECRET_NAME.match(s["name"]):
            raise ConfigError(f"{where}: needs a name, a Secret's name (lowercase letters, digits, '-', '.')")
        unknown = sorted(set(s) - {"name", "description", "keys", "protects", "parameter", "fixedName"})
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}")
        keys = s.get("keys")
        if not isinstance(keys, dict) or not keys:
            raise ConfigError(f"{where}.keys: must map each key of the Secret to {{length, alphabet}} or {{value}}")
        parameter = str(s.get("parameter") or "")
        if parameter:
            spec = parameters.get(parameter)
            if spec is None or spec.type != "dns-subdomain" or spec.default != s["name"]:
                raise ConfigError(
                    f"{where}.parameter: {parameter!r} must be a dns-subdomain parameter of this component whose "
                    f"default is {s['name']!r} (the name the base YAML references)"
                )
            if not spec.targets and not s.get("fixedName"):
                raise ConfigError(f"{where}.parameter: {parameter!r} has no targets to rewrite the references with")
        out.append(
            GeneratedSecret(
                name=s["name"],
                description=str(s.get("description", "")).strip(),
                keys=tuple(_secret_key(f"{where}.keys.{k}", k, v) for k, v in keys.items()),
                protects=str(s.get("protects") or ""),
                parameter=parameter,
                fixed_name=str(s.get("fixedName") or "").strip(),
            )
        )
    return tuple(out)


def _secret_key(where: str, name: Any, spec: Any) -> SecretKey:
    if not isinstance(name, str) or not name or not isinstance(spec, dict):
        raise ConfigError(f"{where}: must be {{length: N, alphabet: NAME}} or {{value: TEXT}}")
    if "value" in spec:
        if set(spec) != {"value"} or not isinstance(spec["value"], str):
            raise ConfigError(f"{where}: a fixed key is {{value: TEXT}} alone (text that is not secret, a user name)")
        return SecretKey(name, value=spec["value"])
    length, alphabet = spec.get("length"), spec.get("alphabet", "alphanumeric")
    low, high = SECRET_LENGTHS
    if set(spec) - {"length", "alphabet"} or not isinstance(length, int) or not low <= length <= high:
        raise ConfigError(
            f"{where}: " + must_be("length", f"an integer from {low} to {high}", length, present="length" in spec)
        )
    if alphabet not in ALPHABETS:
        raise ConfigError(f"{where}: " + must_be("alphabet", f"one of {', '.join(ALPHABETS)}", alphabet))
    return SecretKey(name, length=length, alphabet=alphabet)


def kubernetes_range(data: dict[str, Any], path: Path) -> KubernetesRange | None:
    """``kubernetes: {min: "1.28"}`` or ``{min: "1.31", max: "1.35"}``: the minors `kfctl check --pre` holds the
    server to, only as far as an upstream source states them (so ``max`` is optional)."""
    value = data.get("kubernetes")
    if value is None:
        return None
    expected = f'{path}: kubernetes must be {{min: "1.N"}} or {{min: "1.N", max: "1.M"}} (quoted minors), got {value!r}'
    if not isinstance(value, dict) or not {"min"} <= set(value) <= {"min", "max"}:
        raise ConfigError(expected)
    bounds: dict[str, str] = dict(value)
    if not all(isinstance(b, str) and re.fullmatch(r"1\.\d+", b) for b in bounds.values()):
        raise ConfigError(expected)
    low, high = bounds["min"], bounds.get("max")
    if high is not None and int(high[2:]) < int(low[2:]):
        raise ConfigError(f"{path}: kubernetes max {high} is below min {low}")
    return KubernetesRange(min=low, max=high)


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
