"""The verdict every readiness rule returns, and helpers the rules share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kfctl.objects import meta_of

State = Literal["ready", "progressing", "failed"]


@dataclass(frozen=True)
class Health:
    state: State
    message: str  # for a person: "2/3 replicas available"

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    @property
    def failed(self) -> bool:
        return self.state == "failed"


def ready(message: str) -> Health:
    return Health("ready", message)


def progressing(message: str) -> Health:
    return Health("progressing", message)


def failed(message: str) -> Health:
    return Health("failed", message)


def status_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in status_of(obj).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == kind:
            return c
    return None


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True"


def is_false(obj: Mapping[str, Any], kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "False"


def explain(c: Mapping[str, Any] | None) -> str:
    """A condition's reason and message as one phrase: "ProgressDeadlineExceeded: ReplicaSet … timed out"."""
    if not c:
        return ""
    reason, message = str(c.get("reason") or ""), str(c.get("message") or "")
    return ": ".join(p for p in (reason, message) if p)


def not_observed(obj: Mapping[str, Any], *, required: bool = False) -> Health | None:
    """Progressing while the controller has not seen the latest spec (status.observedGeneration < generation).

    With ``required`` a missing observedGeneration counts as 0, as kubectl's rollout status does for
    Deployments, StatefulSets and DaemonSets: the object the API server returns from a create has an empty
    status (``replicas: 0`` and all), which says nothing until the controller has looked at it. Without it
    (custom resources, whose controllers often never set the field) a missing value is no evidence either way.
    """
    generation = meta_of(obj).get("generation")
    observed = status_of(obj).get("observedGeneration")
    if not isinstance(generation, int):
        return None
    if isinstance(observed, int) and observed < generation:
        return progressing(f"waiting for the controller to observe generation {generation} (seen {observed})")
    if required and not isinstance(observed, int):
        return progressing(f"waiting for the controller to observe generation {generation} (no status yet)")
    return None
