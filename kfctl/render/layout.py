"""The generated app directory: what to vendor and the kustomization each application gets.

Layout (all relative, so the directory can be copied or committed and built anywhere):

    APPDIR/vendor/manifests/<component>/     catalog parts in use, copied byte for byte
    APPDIR/vendor/overlays/<overlay>/
    APPDIR/vendor/platforms/<platform>/<component>/
    APPDIR/vendor/repos/<repo>/              local repositories of user applications
    APPDIR/kustomize/<app>/kustomization.yaml  (+ params.yaml)
    APPDIR/rendered/<app>.yaml

Parameters become a local-config ``Parameters`` object plus kustomize ``replacements``; overlays and
platform patches are kustomize ``components``; an image mirror is kustomize ``images``. No templating.
This module computes file contents; it does not run kustomize.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from kfctl import __version__
from kfctl.catalog.model import Catalog
from kfctl.config.model import Application, KfDef
from kfctl.errors import ConfigError

PARAMS_KIND = "Parameters"
PARAMS_API = "kfctl.kubeflow.org/v1alpha1"
MIRROR_OVERLAY = "image-mirror"
MIRROR_PARAM = "imageMirrorRegistry"


@dataclass(frozen=True)
class VendorCopy:
    """Copy ``source`` (a directory) to APPDIR/``dest``."""

    source: Path
    dest: PurePosixPath


@dataclass
class AppLayout:
    app: Application
    files: dict[str, str] = field(default_factory=dict)  # relative to APPDIR/kustomize/<app>/
    vendor: list[VendorCopy] = field(default_factory=list)


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=1000)


def repo_source(kfdef: KfDef, app: Application, sources: Mapping[str, Path] | None = None) -> Path:
    """The local directory of a non-builtin repo: as resolved by kfctl.repos (``sources``: repo name →
    directory, covering archives and git through the cache), else the uri read as a local directory."""
    if sources is not None and app.repo.name in sources:
        return sources[app.repo.name]
    uri = app.repo.uri
    if uri.startswith("file://") and not uri.endswith((".tar.gz", ".tgz", ".zip")):
        uri = uri[len("file://") :]
    if "://" in uri or uri.endswith((".tar.gz", ".tgz", ".zip")):
        raise ConfigError(
            f'{kfdef.path}: repo "{app.repo.name}": uri {app.repo.uri!r} is not a local directory',
            hint="`kfctl generate` fetches archives and git repos into APPDIR/.cache/repos/ before rendering",
        )
    path = Path(uri)
    if not path.is_absolute():
        path = kfdef.app_dir / path
    if not path.is_dir():
        raise ConfigError(f'{kfdef.path}: repo "{app.repo.name}": directory {path} does not exist')
    return path


def plan_application(
    kfdef: KfDef,
    catalog: Catalog,
    app: Application,
    *,
    images: Iterable[str] = (),
    sources: Mapping[str, Path] | None = None,
) -> AppLayout:
    """Files and vendored directories for one application. ``images`` feed the image-mirror overlay;
    ``sources`` are the resolved repo directories (see :func:`repo_source`)."""
    layout = AppLayout(app)
    up = "../../"
    resources: list[str] = []
    components: list[str] = []
    if app.component:
        comp = catalog.components[app.component]
        dest = PurePosixPath("vendor/manifests", comp.name)
        layout.vendor.append(VendorCopy(comp.path, dest))
        resources.append(f"{up}{dest}")
        plat = catalog.platforms[kfdef.platform]
        if comp.name in plat.patched_components:
            pdest = PurePosixPath("vendor/platforms", plat.name, comp.name)
            layout.vendor.append(VendorCopy(plat.path / comp.name, pdest))
            components.append(f"{up}{pdest}")
    else:
        source = repo_source(kfdef, app, sources)
        dest = PurePosixPath("vendor/repos", app.repo.name)
        layout.vendor.append(VendorCopy(source, dest))
        inner = PurePosixPath(app.path.strip("/")) if app.path.strip("/") else PurePosixPath()
        resources.append(f"{up}{dest / inner}" if str(inner) != "." else f"{up}{dest}")
    for overlay_name in app.overlays:
        if overlay_name == MIRROR_OVERLAY:
            continue  # realised as kustomize `images` below, not as a Component
        overlay = catalog.overlays[overlay_name]
        odest = PurePosixPath("vendor/overlays", overlay.name)
        layout.vendor.append(VendorCopy(overlay.path, odest))
        components.append(f"{up}{odest}")
        if app.component and overlay_name in catalog.components[app.component].overlays:
            components.append(f"{up}vendor/manifests/{app.component}/overlays/{overlay_name}")

    params, replacements = _parameters(kfdef, catalog, app)
    if params:
        layout.files["params.yaml"] = dump_yaml(
            {
                "apiVersion": PARAMS_API,
                "kind": PARAMS_KIND,
                "metadata": {
                    "name": app.name,
                    "annotations": {"config.kubernetes.io/local-config": "true"},
                },
                "data": params,
            }
        )
        resources.append("params.yaml")

    kustomization: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    }
    if components:
        kustomization["components"] = components
    if MIRROR_OVERLAY in app.overlays:
        kustomization["images"] = mirror_images(images, str(app.parameters.get(MIRROR_PARAM, "")))
    if replacements:
        kustomization["replacements"] = replacements
    header = (
        f"# Generated by kfctl {__version__} from {kfdef.path.name}, application {app.name}.\n"
        "# Do not edit: change the KfDef and run `kfctl generate`. `kustomize build` of this directory\n"
        f"# reproduces rendered/{app.name}.yaml.\n"
    )
    layout.files["kustomization.yaml"] = header + dump_yaml(kustomization)
    return layout


def _parameters(kfdef: KfDef, catalog: Catalog, app: Application) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The values set explicitly (defaults already live in the base YAML) and their replacements."""
    values: dict[str, Any] = {}
    replacements: list[dict[str, Any]] = []

    def add(name: str, value: Any, targets: list[dict[str, Any]]) -> None:
        if not targets:
            return
        values[name] = value
        replacements.append(
            {
                "source": {"kind": PARAMS_KIND, "name": app.name, "fieldPath": f"data.{name}"},
                "targets": targets,
            }
        )

    declared: dict[str, list[dict[str, Any]]] = {}
    if app.component:
        declared.update({n: p.targets for n, p in catalog.components[app.component].parameters.items()})
    for overlay in app.overlays:
        declared.update({n: p.targets for n, p in catalog.overlays[overlay].parameters.items()})
    for name, value in sorted(app.parameters.items()):
        add(name, value, declared.get(name, []))
    if app.component:
        plat = catalog.platforms[kfdef.platform]
        for name, value in sorted(kfdef.platform_parameters.items()):
            spec = plat.parameters.get(name)
            if spec is not None and name not in values:
                add(name, value, spec.targets_by_component.get(app.component, []))
    return values, replacements


def mirror_images(images: Iterable[str], registry: str) -> list[dict[str, str]]:
    """kustomize `images` entries that move every image under ``registry`` (host dropped, path kept)."""
    registry = registry.rstrip("/")
    out: dict[str, dict[str, str]] = {}
    for image in sorted(set(images)):
        name = image_name(image)
        out.setdefault(name, {"name": name, "newName": f"{registry}/{strip_registry_host(name)}"})
    return [out[k] for k in sorted(out)]


def image_name(image: str) -> str:
    """The repository part of an image reference: no tag, no digest."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    return name


def strip_registry_host(name: str) -> str:
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return rest
    return name


def container_images(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every containers[]/initContainers[] image anywhere in the objects (pod templates, runtimes, …)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("containers", "initContainers") and isinstance(value, list):
                    for c in value:
                        if isinstance(c, dict) and isinstance(c.get("image"), str):
                            found.add(c["image"])
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for obj in objects:
        walk(obj)
    return sorted(found)
