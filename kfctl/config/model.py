"""The KfDef as typed values, after validation. kfctl never writes these back to the user's file."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kfctl.health.waitrules import WaitRule

BUILTIN_URI = "kfctl://catalog"
API_GROUP = "kfdef.apps.kubeflow.org"
SUPPORTED_VERSIONS = ("v1", "v1beta1")
# metadata.name, metadata.namespace and application names: they become label values, namespace and
# directory names, so an RFC 1123 label (Kubernetes' rule for namespaces).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_LABEL_RULE = "a DNS label (lowercase letters, digits, '-', at most 63)"


@dataclass(frozen=True)
class Repo:
    name: str
    uri: str
    sha256: str | None = None
    ref: str | None = None

    @property
    def builtin(self) -> bool:
        return self.uri == BUILTIN_URI


BUILTIN_REPO = Repo(name="manifests", uri=BUILTIN_URI)


@dataclass(frozen=True)
class Application:
    name: str
    repo: Repo
    path: str  # inside the repo
    component: str | None  # the catalog component, when the repo is the built-in catalog
    overlays: tuple[str, ...] = ()
    parameters: dict[str, Any] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()
    enabled: bool = True
    external: bool = False  # the cluster provides it: checked, never rendered or applied
    adopt: bool = False  # take over its objects that exist under another owner
    # kfctl v1.0's meaning, for an application from a repo (not the catalog): an overlay that is not one of
    # the catalog's cross-cutting overlays names the package's own overlays/<name> directory, and parameters
    # are entries of the package's params.env.
    package_overlays: tuple[str, ...] = ()
    package_parameters: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Mirror:
    """``spec.mirrors[]`` (ours) or ``--mirror``: fetch URLs starting with ``prefix`` from ``location`` instead
    (a git or HTTP(S) base URL, a file:// URL, or an absolute local directory). See kfctl.repos.mirror."""

    prefix: str
    location: str

    def describe(self) -> str:
        return f"mirror {self.prefix} = {self.location}"


@dataclass(frozen=True)
class Plugin:
    kind: str
    name: str
    spec: dict[str, Any]


@dataclass(frozen=True)
class KfDef:
    path: Path
    api_version: str
    name: str
    namespace: str
    platform: str
    version: str
    applications: tuple[Application, ...]
    repos: tuple[Repo, ...]
    plugins: tuple[Plugin, ...]
    # Values of the platform's parameters, taken from its plugin's spec.
    platform_parameters: dict[str, Any] = field(default_factory=dict)
    mirrors: tuple[Mirror, ...] = ()
    # spec.waitRules: how the KfDef's own custom kinds are judged healthy, over kfctl's (kfctl.health.waitrules).
    wait_rules: tuple[WaitRule, ...] = ()
    # What loading assumed for a person to know (a KfDef of kfctl v1 without a name is named after its directory).
    notes: tuple[str, ...] = ()
    # No spec.platform: a KfDef of kfctl v1 (today's kfctl writes one), whose repo trees were written for
    # kustomize v3; generate renders them as v3 did where v5 would substitute vars otherwise.
    legacy: bool = False

    @property
    def app_dir(self) -> Path:
        return self.path.parent

    def enabled_applications(self) -> tuple[Application, ...]:
        return tuple(a for a in self.applications if a.enabled)

    def installed_applications(self) -> tuple[Application, ...]:
        """The enabled applications kfctl renders and applies (not the external ones)."""
        return tuple(a for a in self.applications if a.enabled and not a.external)
