"""The generated app directory: what to vendor and the kustomization each application gets.

Layout (all relative, so the directory can be copied or committed and built anywhere):

    APPDIR/vendor/manifests/<component>/     catalog parts in use, copied byte for byte
    APPDIR/vendor/overlays/<overlay>/
    APPDIR/vendor/platforms/<platform>/<component>/
    APPDIR/vendor/repos/<repo>/              of user applications' repos, the files their kustomizations use
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
from kfctl.errors import RenderError
from kfctl.repos.app_path import check_application_path

PARAMS_KIND = "Parameters"
PARAMS_API = "kfctl.kubeflow.org/v1alpha1"
MIRROR_OVERLAY = "image-mirror"
MIRROR_PARAM = "imageMirrorRegistry"


@dataclass(frozen=True)
class VendorCopy:
    """Copy ``source`` (a directory) to APPDIR/``dest``: all of it, or with ``start`` only the files the
    kustomization at ``source/start`` needs (kfctl.repos.closure)."""

    source: Path
    dest: PurePosixPath
    start: PurePosixPath | None = None


@dataclass
class AppLayout:
    app: Application
    files: dict[str, str] = field(default_factory=dict)  # relative to APPDIR/kustomize/<app>/
    vendor: list[VendorCopy] = field(default_factory=list)

    @property
    def unrestricted(self) -> bool:
        """An application from a repo is built without kustomize's load restrictor, as kfctl v1 built: its
        kustomizations may read files elsewhere in the repo (``../``). Vendoring checked that every reference
        stays inside the repo (kfctl.repos.closure), so nothing outside it can be read."""
        return self.app.component is None


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=1000)


def plan_application(
    kfdef: KfDef,
    catalog: Catalog,
    app: Application,
    *,
    images: Iterable[str] = (),
    sources: Mapping[str, Path],
) -> AppLayout:
    """Files and vendored directories for one application. ``images`` feed the image-mirror overlay;
    ``sources`` are the directories kfctl.repos resolved each used repo to (local, archive or git)."""
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
        source = sources[app.repo.name]
        dest = PurePosixPath("vendor/repos", app.repo.name)
        inner = PurePosixPath(app.path.strip("/")) if app.path.strip("/") else PurePosixPath()
        inner = _package_overlay(app, inner)
        check_application_path(app.name, app.repo.name, source, inner, kfdef=kfdef.path)
        layout.vendor.append(VendorCopy(source, dest, start=inner))
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
    build = "kustomize build" + (" --load-restrictor LoadRestrictionsNone" if layout.unrestricted else "")
    header = (
        f"# Generated by kfctl {__version__} from {kfdef.path.name}, application {app.name}.\n"
        f"# Do not edit: change the KfDef and run `kfctl generate`. `{build}` of this\n"
        f"# directory reproduces rendered/{app.name}.yaml.\n"
    )
    layout.files["kustomization.yaml"] = header + dump_yaml(kustomization)
    return layout


def _package_overlay(app: Application, inner: PurePosixPath) -> PurePosixPath:
    """Where a kfctl v1.0 application is built from: one overlay of its package is the package's
    ``overlays/<name>`` directory, which builds on ``../../base`` as kfctl v1 built it. Several overlays, and
    params.env parameters, are refused: kfctl v1 merged those into the package in ways not reproduced here."""
    unsupported = []
    if len(app.package_overlays) > 1:
        unsupported.append(f"overlays {', '.join(app.package_overlays)} (several directories overlays/<name>)")
    if app.package_parameters:
        unsupported.append(f"parameters {', '.join(k for k, _ in app.package_parameters)} (entries of params.env)")
    if unsupported:
        raise RenderError(
            f"application {app.name}: kfctl v1.0's {' and '.join(unsupported)} are not rendered by this kfctl",
            hint="`kfctl migrate FILE` moves a kfctl v1 KfDef onto the catalog; or point repoRef.path at one "
            "overlay directory of the package and drop the parameters",
        )
    return inner / "overlays" / app.package_overlays[0] if app.package_overlays else inner


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
