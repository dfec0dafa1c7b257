"""Readiness of custom resources as data: for a kind, which conditions or fields mean ready and which failed.

The rules kapp's ``waitRules`` and cli-utils' kstatus express, one table: kfctl ships :data:`SHIPPED` (the
Kubeflow kinds and cert-manager's, whose rule is only "condition X is True") and a KfDef adds or replaces rules
per kind in ``spec.waitRules`` (kfctl.config.loader turns them into :class:`WaitRule` values). A kind whose rule
needs more than that — a Deployment's rollout, a CRD's two conditions, a Job's counts — keeps its function in
kfctl.health and cannot be replaced (:data:`CODED_KINDS`, checked by the loader).

A rule is judged in this order: the controller has not observed the latest generation → progressing; the
first ``failed`` match that holds → failed; the first ``ready`` match that holds → ready; else progressing, saying
why a ``ready`` condition is not True when the object says. Pure functions of the live object: nothing here
talks to the API server.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kfctl.health.model import Health, condition, explain, failed, not_observed, progressing, ready

CONDITION_STATUSES = ("True", "False", "Unknown")
KFCTL = "kfctl"  # a rule's source when kfctl ships it


@dataclass(frozen=True)
class Match:
    """One thing a live object can say: ``status.conditions[type=condition].status == status``, or the value
    at the dotted ``field`` path (``status.phase``) equal to ``equals``, compared as text."""

    condition: str = ""
    status: str = "True"
    field: str = ""
    equals: str = ""

    def holds(self, obj: Mapping[str, Any]) -> bool:
        if self.condition:
            c = condition(obj, self.condition)
            return c is not None and str(c.get("status")) == self.status
        return as_text(field_value(obj, self.field)) == self.equals

    def describe(self) -> str:
        """ "Ready", "Ready=False", "status.phase=Error": how a message names what is awaited."""
        if self.condition:
            return self.condition if self.status == "True" else f"{self.condition}={self.status}"
        return f"{self.field}={self.equals}"


@dataclass(frozen=True)
class WaitRule:
    group: str
    kind: str
    ready: tuple[Match, ...] = ()
    failed: tuple[Match, ...] = ()
    waiting: str = ""  # the message while nothing holds; "" says which ready match is awaited
    source: str = KFCTL  # KFCTL, or where in a KfDef the rule was written (kfdef.yaml:14:5), which a failure names

    def judge(self, obj: Mapping[str, Any]) -> Health:
        pending = not_observed(obj)
        if pending:
            return pending
        for match in self.failed:
            if match.holds(obj):
                by = "" if self.source == KFCTL else f" (the KfDef's wait rule at {self.source})"
                return failed(_said(match, obj, failure=True) + by)
        for match in self.ready:
            if match.holds(obj):
                return ready(_said(match, obj, failure=False))
        for match in self.ready:
            c = condition(obj, match.condition) if match.condition else None
            why = explain(c)
            if why:
                return progressing(f"not {words(match.condition)}: {why}")
        if self.waiting:
            return progressing(self.waiting)
        awaited = " or ".join(t.describe() for t in self.ready)
        return progressing(f"waiting for {awaited}" if awaited else "waiting for a failure to be reported")


def _said(match: Match, obj: Mapping[str, Any], *, failure: bool) -> str:
    """What a match that holds says: the condition's type in words ("ready", "predictor ready"), with its status
    when not True and, for a failure, its reason and message; or the field and its value."""
    if match.field:
        return f"{match.field} is {match.equals}"
    name = words(match.condition) if match.status == "True" else f"{words(match.condition)} is {match.status}"
    why = explain(condition(obj, match.condition)) if failure else ""
    return f"{name}: {why}" if why else name


def words(condition_type: str) -> str:
    """A condition type as words of a message: "PredictorReady" → "predictor ready"."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", condition_type).lower()


def field_value(obj: Mapping[str, Any], path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def as_text(value: Any) -> str:
    """A scalar as a rule compares it: YAML's true/false lower-case, a number as written, nothing as ""."""
    if value is None or isinstance(value, Mapping | list):
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


class WaitRules:
    """The rules in force, by (group, kind): kfctl's, then a KfDef's over them."""

    def __init__(self, rules: Iterable[WaitRule] = ()) -> None:
        self._by_kind = {(r.group, r.kind): r for r in rules}

    def get(self, group: str, kind: str) -> WaitRule | None:
        return self._by_kind.get((group, kind))

    def kinds(self) -> frozenset[tuple[str, str]]:
        return frozenset(self._by_kind)

    def __iter__(self) -> Iterator[WaitRule]:
        return iter(sorted(self._by_kind.values(), key=lambda r: (r.group, r.kind)))

    def with_overrides(self, rules: Iterable[WaitRule]) -> WaitRules:
        """These rules, each of ``rules`` adding its kind or replacing kfctl's rule for it."""
        return WaitRules([*self._by_kind.values(), *rules])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WaitRules) and self._by_kind == other._by_kind

    def __hash__(self) -> int:
        return hash(frozenset(self._by_kind.items()))


def _conditions(group: str, kind: str, ready_on: str, failed_on: str = "", *, waiting: str = "") -> WaitRule:
    failed_on_it = (Match(condition=failed_on),) if failed_on else ()
    return WaitRule(group, kind, ready=(Match(condition=ready_on),), failed=failed_on_it, waiting=waiting)


# Kinds whose readiness is more than a condition, judged by a function of kfctl.health (registry.RULES) that a
# KfDef's rule cannot replace.
CODED_KINDS = frozenset(
    {
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("", "Namespace"),
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("batch", "Job"),
        ("", "Service"),
        ("", "PersistentVolumeClaim"),
    }
)

_TRAINING_OPERATOR_JOBS = ("PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob")

# The Kubeflow kinds among them are what kfctl's Argo CD export writes as Lua health checks too (argocd_settings).
SHIPPED = WaitRules(
    [
        # cert-manager: Ready=False is normal while issuing; the engine's wait timeout turns a lasting False into
        # a failure.
        *(
            _conditions("cert-manager.io", kind, "Ready", waiting="waiting for cert-manager to report Ready")
            for kind in ("Certificate", "Issuer", "ClusterIssuer")
        ),
        # The aggregated API answers.
        _conditions("apiregistration.k8s.io", "APIService", "Available"),
        # KServe's InferenceService: Ready once its predictor serves (KServe reports no failure condition).
        _conditions("serving.kserve.io", "InferenceService", "Ready"),
        # Kubeflow Trainer v2's TrainJob: Complete or Failed, as a Job.
        _conditions("trainer.kubeflow.org", "TrainJob", "Complete", "Failed"),
        # Katib's Experiment and the training operator's jobs (kubeflow.org/v1): Succeeded or Failed.
        _conditions("kubeflow.org", "Experiment", "Succeeded", "Failed"),
        *(_conditions("kubeflow.org", kind, "Succeeded", "Failed") for kind in _TRAINING_OPERATOR_JOBS),
    ]
)
