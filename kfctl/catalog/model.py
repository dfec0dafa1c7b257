"""Catalog metadata as typed values (see docs/catalog.md)."""

from __future__ import annotations

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


def first_sentence(description: str, *, width: int = 72) -> str:
    """The first sentence (or clause before a colon) of a description, cut to ``width`` for one-line listings."""
    text = " ".join(description.split())
    for stop in (". ", ": "):
        if stop in text:
            text = text.split(stop, 1)[0]
    text = text.rstrip(".")
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
