"""The engine's four kinds of step, each owning what it does, as kapp's ClusterChange owns its apply and wait.

The planner's :data:`~kfctl.plan.graph.Step` is data: one of four frozen types (``PlannedObject``,
``PlannedBackend``, ``PlannedExternal``, ``PlannedGate``), each with its own payload. :func:`engine_step` turns
it, once per run, into the class here that acts on it, so that neither the scheduler
(:mod:`kfctl.engine.schedule`) nor the workers (:mod:`kfctl.engine.work`) branch on what a step is:

- :class:`ObjectStep` — an object to server-side apply on a worker, then, when its kind has a health rule, to
  wait on: its :meth:`~ObjectStep.check` reads it (one GET, or a watch's memory) and judges it;
- :class:`BackendWait` — a webhook's backend (a ready endpoint behind its Service, the CA bundle, its
  Deployment): nothing to apply, checked until ready;
- :class:`ExternalWait` — an application the cluster provides (``external: true``): nothing to apply, checked
  until its CRDs and webhooks are there;
- :class:`ApplicationGate` — the point where all of an application's objects are ready: open as soon as its
  dependencies are, with nothing to read.

Each says how it starts (``start``: through the run's :class:`Starter`), how a check judges it (``check``, on
a worker thread) and which kinds that check reads besides its own object (``reads``: a change to one of them
has it checked again). Nothing here holds run state or prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from kfctl.engine.probe import backend_health, external_health, object_health
from kfctl.health.model import Health, progressing, ready
from kfctl.health.waitrules import SHIPPED, WaitRules
from kfctl.k8s.api import Cluster
from kfctl.objects import Obj, ObjectKey
from kfctl.plan.graph import (
    PlannedBackend,
    PlannedExternal,
    PlannedGate,
    PlannedObject,
    Step,
    WebhookBackend,
)

if TYPE_CHECKING:
    from kfctl.engine.schedule import Track

Kind = tuple[str, str]  # (group, kind)
NOT_FOUND = "not found (deleted by someone else?)"
# What a check reads besides the step's own object: its kinds are watched as soon as the step waits, and a
# change to any object of them has the step checked again. A webhook backend also reads the configurations,
# Deployment and Certificate it names; a PVC not yet bound, the StorageClasses.
BACKEND_READS: frozenset[Kind] = frozenset({("", "Service"), ("discovery.k8s.io", "EndpointSlice")})
EXTERNAL_READS: frozenset[Kind] = frozenset(
    {
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        *BACKEND_READS,
    }
)
OBJECT_READS: dict[Kind, frozenset[Kind]] = {
    ("", "PersistentVolumeClaim"): frozenset({("storage.k8s.io", "StorageClass")})
}


class Starter(Protocol):
    """The three ways the run (:class:`kfctl.engine.schedule.Run`) starts a step whose dependencies allow it."""

    def start_apply(self, t: Track, step: ObjectStep, now: float) -> Literal["full"] | None:
        """Hand the object to a worker to apply; "full" when every apply slot is taken."""
        ...

    def start_waiting(self, t: Track, now: float) -> None:
        """Nothing to apply: check it at once, then until it is ready."""
        ...

    def open_gate(self, t: Track, now: float) -> None:
        """Nothing to apply or read: ready now."""
        ...


@dataclass(frozen=True)
class _Typed:
    step: Step  # the planner's (each class here narrows it to its own type): id, application, whether to wait

    @property
    def id(self) -> str:
        return self.step.id


@dataclass(frozen=True)
class ObjectStep(_Typed):
    """An object of the bundle: applied, then waited on when its kind has a health rule (``step.wait``)."""

    step: PlannedObject
    rules: WaitRules = SHIPPED  # how a custom kind is judged (the plan's)

    @property
    def key(self) -> ObjectKey:
        return self.step.key

    @property
    def obj(self) -> Obj:
        return self.step.obj

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion"))

    def start(self, run: Starter, t: Track, now: float) -> Literal["full"] | None:
        return run.start_apply(t, self, now)

    def check(self, cluster: Cluster) -> Health:
        res = cluster.resource(self.api_version, self.key.kind)
        live = cluster.get(res.api_version, self.key.kind, namespace=self.key.namespace, name=self.key.name)
        return self.judge(cluster, live) if live is not None else progressing(NOT_FOUND)

    def health(self, cluster: Cluster, live: Obj) -> Health:
        """Its kind's health rule on ``live``."""
        return object_health(cluster, live, wait_rules=self.rules)

    def judge(self, cluster: Cluster, live: Obj) -> Health:
        """Its kind's health rule on ``live``; a CRD found ready is served from now on."""
        h = self.health(cluster, live)
        if h.ready:
            self.served(cluster)
        return h

    def served(self, cluster: Cluster) -> None:
        """Ready: a CRD's kinds are served now, so forget the cached discovery and dependents map at once."""
        if self.key.kind == "CustomResourceDefinition":
            cluster.invalidate(str((self.obj.get("spec") or {}).get("group", "")))

    def reads(self) -> frozenset[Kind]:
        return OBJECT_READS.get((self.key.group, self.key.kind), frozenset())


@dataclass(frozen=True)
class _Waited(_Typed):
    """Nothing to apply: checked from the start until ready."""

    def start(self, run: Starter, t: Track, now: float) -> None:
        run.start_waiting(t, now)


@dataclass(frozen=True)
class BackendWait(_Waited):
    """A webhook's backend: ready when the API server can call it."""

    step: PlannedBackend
    rules: WaitRules = SHIPPED  # how its Certificate is judged (the plan's)

    @property
    def backend(self) -> WebhookBackend:
        return self.step.backend

    def check(self, cluster: Cluster) -> Health:
        return backend_health(cluster, self.backend, wait_rules=self.rules)

    def reads(self) -> frozenset[Kind]:
        b = self.backend
        named = [k for k, _ in b.configs] + [k for k in (b.deployment, b.certificate) if k is not None]
        return frozenset({(k.group, k.kind) for k in named} | BACKEND_READS)


@dataclass(frozen=True)
class ExternalWait(_Waited):
    """An application the cluster provides: ready when what the rest needs of it is there."""

    step: PlannedExternal

    def check(self, cluster: Cluster) -> Health:
        return external_health(cluster, self.step.external)

    def reads(self) -> frozenset[Kind]:
        return EXTERNAL_READS


@dataclass(frozen=True)
class ApplicationGate(_Typed):
    """All of an application's objects are ready: what the applications after it wait for."""

    step: PlannedGate

    def start(self, run: Starter, t: Track, now: float) -> None:
        run.open_gate(t, now)

    def check(self, cluster: Cluster) -> Health:
        return ready("all objects ready")

    def reads(self) -> frozenset[Kind]:
        return frozenset()


EngineStep = ObjectStep | BackendWait | ExternalWait | ApplicationGate


def engine_step(step: Step, rules: WaitRules = SHIPPED) -> EngineStep:
    """The engine's step for a plan's step, judging custom kinds by ``rules`` (mypy checks that every type of
    step is met: a new one is a missing return here)."""
    match step:
        case PlannedObject():
            return ObjectStep(step, rules)
        case PlannedBackend():
            return BackendWait(step, rules)
        case PlannedExternal():
            return ExternalWait(step)
        case PlannedGate():
            return ApplicationGate(step)
