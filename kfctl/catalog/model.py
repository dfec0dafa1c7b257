"""Catalog metadata as typed values (see docs/catalog.md)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kfctl.errors import ConfigError
from kfctl.ordering import DependencyCycle, check_acyclic

# The value types a parameter declares (kfctl.catalog.paramtypes checks values against them; docs/catalog.md).
ParamType = Literal[
    "string",
    "integer",
    "boolean",
    "enum",
    "quantity",
    "duration",
    "image",
    "image-tag",
    "registry",
    "dns-subdomain",
    "arn",
]


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
    # Platform parameters: the components that read the value (its `targets`), as opposed to those that only
    # record it for people (its `records`, e.g. the kubeflow-platform ConfigMap). Only a reader makes it required.
    read_by: tuple[str, ...] = ()
    values: tuple[str, ...] = ()  # an enum's values
    minimum: int | None = None  # an integer's bounds, inclusive
    maximum: int | None = None
    pattern: str = ""  # a string's form, a regular expression the whole value must match
    example: str = ""  # a valid value for messages, when the default is none (or is the empty value)
    empty_means: str = ""  # a typed parameter that may be "": what the empty value does ("no gang scheduling")

    def required_for(self, components: Iterable[str]) -> bool:
        """Whether a value must be given when ``components`` are installed: a platform parameter only when one of
        them reads it; any other parameter whenever it is required."""
        if not self.required:
            return False
        if not self.targets_by_component:
            return True
        return bool(set(self.read_by) & set(components))


# The characters a generated Secret value is drawn from, by the name component.yaml gives. Letters and digits
# only: the values reach shell probes (`mysql --password="${MYSQL_ROOT_PASSWORD}"`), S3 signatures and DSNs,
# where a quote, `$` or `@` would need escaping that upstream manifests do not do.
ALPHABETS: dict[str, str] = {
    "alphanumeric": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "lowercase-alphanumeric": "abcdefghijklmnopqrstuvwxyz0123456789",
    "hex": "0123456789abcdef",
}
SECRET_LENGTHS = (16, 128)  # at least 16 characters (≥ 64 bits even from hex), at most 128


@dataclass(frozen=True)
class SecretKey:
    """One key of a generated Secret: random (``length`` characters of ``alphabet``) or a fixed, non-secret
    ``value`` (a user name). Or made from another generated key, named ``namespace/secret/key``: ``same_as``
    copies it (one client secret that two services share), ``bcrypt_of`` holds its bcrypt hash (a password Dex
    checks by hash). Only kfctl's own table of upstream Secrets makes those two (kfctl.secrets.upstream)."""

    name: str
    length: int = 0
    alphabet: str = "alphanumeric"
    value: str | None = None
    same_as: str = ""
    bcrypt_of: str = ""

    @property
    def derived_from(self) -> str:
        return self.same_as or self.bcrypt_of

    @property
    def generated(self) -> bool:
        return self.value is None


@dataclass(frozen=True)
class GeneratedSecret:
    """A Secret a component needs and kfctl creates in the cluster at the first apply, never in files.

    ``protects``: the PersistentVolumeClaim whose data the values open (a database's volume); delete and prune
    keep the Secret as long as they keep that claim. ``parameter``: the component parameter with which a KfDef
    names an existing Secret instead (bring your own); its targets rewrite the workloads' references, unless
    ``fixed_name`` says why upstream code reads the Secret by this very name (then one brought must carry it)."""

    name: str
    description: str
    keys: tuple[SecretKey, ...]
    protects: str = ""
    parameter: str = ""
    fixed_name: str = ""

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)


@dataclass(frozen=True)
class KubernetesRange:
    """The Kubernetes minors a component's upstream documents it for, inclusive. ``max`` is None when upstream
    states only a minimum (most operators do: "Kubernetes >= 1.28")."""

    min: str  # "1.28"
    max: str | None = None

    def describe(self) -> str:
        if self.max is None:
            return f"≥ {self.min}"
        return f"{self.min} only" if self.max == self.min else f"{self.min}–{self.max}"


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
    kubernetes: KubernetesRange | None = None  # None: no upstream source states a range
    secrets: tuple[GeneratedSecret, ...] = ()  # generated at the first apply (see GeneratedSecret)

    def secret_for_parameter(self, parameter: str) -> GeneratedSecret | None:
        """The generated Secret that ``parameter`` replaces with one the user brings, if it is such a parameter."""
        return next((s for s in self.secrets if s.parameter and s.parameter == parameter), None)


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
    _refuse_cycles(catalog, chosen)
    out: list[str] = []

    def visit(name: str) -> None:
        if name not in out:
            for dep in catalog.components[name].depends_on:
                visit(dep)
            out.append(name)

    for name in sorted(chosen):
        visit(name)
    return out


def _refuse_cycles(catalog: Catalog, names: Iterable[str]) -> None:
    """A dependsOn cycle in the catalog's metadata is a ConfigError naming it (not endless recursion)."""
    try:
        check_acyclic({n: catalog.components[n].depends_on for n in names})
    except DependencyCycle as e:
        raise ConfigError(
            "catalog: components depend on each other in a cycle: " + " → ".join(e.nodes),
            details=[
                f"{a} dependsOn {b} ({catalog.components[a].path / 'component.yaml'})"
                for a, b in itertools.pairwise(e.nodes)
            ],
            hint="remove one of these dependsOn entries from the components' metadata",
        ) from None


# A Secret's name: a DNS subdomain (RFC 1123), as the API server requires.
SECRET_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def secret_reference_problem(component: Component, parameter: str, value: Any) -> str | None:
    """What is wrong with ``value`` as the Secret a KfDef brings through ``parameter`` (None: nothing, or not
    such a parameter): the very name where upstream reads it by name. (That it is a Secret's name at all is the
    parameter's type, dns-subdomain, which the catalog loader requires of such a parameter.)"""
    secret = component.secret_for_parameter(parameter)
    if secret is None:
        return None
    if secret.fixed_name and value != secret.name:
        return (
            f'parameter "{parameter}" must be "{secret.name}", got {value!r}: {secret.fixed_name}; create your '
            f"Secret under that name and set the parameter to it"
        )
    return None


def first_sentence(description: str, *, width: int = 72) -> str:
    """The first sentence (or clause before a colon) of a description, cut to ``width`` for one-line listings.

    A sentence ends at ". " or ": " outside parentheses and not after an abbreviation ("AWS region of the cluster
    (e.g. us-east-1)" is one sentence); a cut falls between words, never inside one."""
    text = " ".join(description.split())
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and ch in ".:" and text[i + 1 : i + 2] == " " and not _ABBREVIATION.search(text[: i + 1]):
            text = text[:i]
            break
    text = text.rstrip(".")
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if text[width - 1] != " " and " " in cut:  # the cut falls inside a word: leave that word out
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;(") + "…"


_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf)\.)$")
