"""What a check is and what it answers: a verdict (pass, warn, fail, skip), a message for a person and, when it
did not pass, a hint that says what to do. The report's JSON shape is the stable schema of `check -o json`.
Two contexts: before an install (`check --pre`, the rendered bundle) and after it (`check`, the installed
applications). This module neither talks to the cluster nor prints."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from kfctl.catalog.model import Component
from kfctl.health.model import Health
from kfctl.k8s.api import Cluster
from kfctl.objects import Obj
from kfctl.render.kustomize import Kustomize
from kfctl.secrets.declared import Declared

Verdict = Literal["pass", "warn", "fail", "skip"]
VERDICTS: tuple[Verdict, ...] = ("pass", "warn", "fail", "skip")


@dataclass(frozen=True)
class Outcome:
    """What a check function returns."""

    verdict: Verdict
    message: str
    hint: str = ""


@dataclass(frozen=True)
class PreContext:
    """Everything a pre-install check reads: the rendered bundle, the catalog components it was rendered
    from, and the target cluster. Built by kfctl.app.check; the checks get it and nothing else."""

    cluster: Cluster
    objects: tuple[tuple[str, Obj], ...]  # (application, object) as apply would write them
    components: Mapping[str, Component]  # application name → its catalog component
    non_catalog: tuple[str, ...]  # applications that are not catalog components (upstream trees, local dirs)
    adoptable: frozenset[str]  # applications with `adopt: true`: their foreign objects are taken over
    applyset_id: str
    inventory_name: str
    namespace: str  # the KfDef's metadata.namespace, where the inventory lives
    find_kustomize: Callable[[], Kustomize]  # kfctl.render.kustomize.find_kustomize; tests inject one
    brought: tuple[Declared, ...] = ()  # Secrets the KfDef names instead of generated ones (…SecretRef parameters)


class HasCluster(Protocol):
    """What the checks both modes share (cluster-reachable) read."""

    @property
    def cluster(self) -> Cluster: ...


@dataclass(frozen=True)
class InstalledContext:
    """Everything a check of the installed platform reads. Built by kfctl.app.check."""

    cluster: Cluster
    # application → its health as `kfctl status` sees it (None: kfctl never installed this KfDef here).
    # Called once per health check; the caller makes it read the cluster only once.
    health: Callable[[], Mapping[str, Health] | None]
    namespaces: Mapping[str, str]  # catalog component → the namespace its probes' samples go to
    suffix: str  # makes this run's sample names unique: kfctl-check-<suffix>
    namespace: str = "default"  # the KfDef's: where a sample of a kind no catalog component installed goes
    smoke_timeout: float = 0.0  # seconds a --smoke job may take to finish (0: no smoke jobs)
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


CtxT = TypeVar("CtxT")


@dataclass(frozen=True)
class Check(Generic[CtxT]):
    category: str
    name: str
    run: Callable[[CtxT], Outcome]
    needs_cluster: bool = True


@dataclass(frozen=True)
class CheckResult:
    category: str
    name: str
    verdict: Verdict
    message: str
    hint: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "category": self.category,
            "name": self.name,
            "verdict": self.verdict,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass
class CheckReport:
    results: list[CheckResult] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.results if r.verdict == verdict)

    @property
    def verdict(self) -> Verdict:
        """fail if any failed, else warn if any warned, else pass."""
        for v in ("fail", "warn"):
            if any(r.verdict == v for r in self.results):
                return v
        return "pass"

    def as_dict(self) -> dict[str, Any]:
        return {
            "checks": [r.as_dict() for r in self.results],
            "summary": {v: self.count(v) for v in VERDICTS}
            | {"verdict": self.verdict, "seconds": round(self.seconds, 2)},
        }
