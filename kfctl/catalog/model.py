"""Catalog metadata as typed values (see docs/catalog.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

ParamType = Literal["string", "integer", "boolean"]


@dataclass(frozen=True)
class ParameterSpec:
    """A parameter a component, overlay or platform declares."""

    name: str
    type: ParamType
    description: str
    default: Any = None
    required: bool = False
    # kustomize `replacements` targets, verbatim. For platform parameters: per component name.
    targets: list[dict[str, Any]] = field(default_factory=list)
    targets_by_component: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Component:
    name: str
    description: str
    namespace: str
    depends_on: tuple[str, ...]
    platforms: tuple[str, ...]
    parameters: dict[str, ParameterSpec]
    health: str
    path: Path
    overlays: tuple[str, ...]  # component-specific parts of cross-cutting overlays it has
    crds: tuple[str, ...] = ()  # the CRDs it installs: what an external install of it must serve
    # The Kubernetes minors it supports, inclusive ("1.27", "1.33"); None: not declared.
    kubernetes: tuple[str, str] | None = None


@dataclass(frozen=True)
class Overlay:
    name: str
    description: str
    parameters: dict[str, ParameterSpec]
    path: Path


@dataclass(frozen=True)
class Platform:
    name: str
    description: str
    plugin: str
    storage_class: str
    default_components: tuple[str, ...]
    parameters: dict[str, ParameterSpec]
    patched_components: tuple[str, ...]  # components with a platforms/<p>/<component>/ Component
    path: Path


@dataclass(frozen=True)
class Catalog:
    root: Path
    components: dict[str, Component]
    overlays: dict[str, Overlay]
    platforms: dict[str, Platform]


# Components that existed upstream and were removed; asking for one gets this explanation.
REMOVED_COMPONENTS: dict[str, str] = {
    "mxjob": (
        "MXJob was removed upstream in training-operator v1.9.0 (Apache MXNet is retired); "
        "run MXNet workloads as a PyTorchJob or a plain Job, or pin an older kfctl/training-operator"
    ),
    "mxnet-operator": "the MXNet operator was retired upstream; training-operator v1.9 dropped MXJob too",
    "tf-job-operator": "tf-job-operator was merged into training-operator; use component training-operator",
    "pytorch-job-operator": "pytorch-operator was merged into training-operator; use component training-operator",
}


def with_dependencies(catalog: Catalog, names: Iterable[str]) -> list[str]:
    """The components named and, transitively, every one they depend on, each after its dependencies.

    Ties go by name, so two KfDefs that ask for the same set list it in the same order (`kfctl init` and
    `kfctl migrate` write the same file for the same components). Every name must be in the catalog.
    """
    chosen: set[str] = set()

    def add(name: str) -> None:
        if name not in chosen:
            chosen.add(name)
            for dep in catalog.components[name].depends_on:
                add(dep)

    for name in names:
        add(name)
    out: list[str] = []

    def visit(name: str) -> None:
        if name not in out:
            for dep in catalog.components[name].depends_on:
                visit(dep)
            out.append(name)

    for name in sorted(chosen):
        visit(name)
    return out


def first_sentence(description: str, *, width: int = 72) -> str:
    """The first sentence (or clause before a colon) of a description, cut to ``width`` for one-line listings."""
    text = " ".join(description.split())
    for stop in (". ", ": "):
        if stop in text:
            text = text.split(stop, 1)[0]
    text = text.rstrip(".")
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
