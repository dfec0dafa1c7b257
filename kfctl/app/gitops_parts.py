"""The parts `kfctl export` hands an application to a GitOps engine in: the objects the application's own
webhooks admit come after the rest of it.

Why: Flux (its server-side apply) and Argo CD (its sync) dry-run every object of an application before they
apply any of it. Once an application's admission webhooks (failurePolicy Fail), CRD conversion webhooks or
APIServices are registered, a dry run of an object they serve calls the application's own backend; while that
backend is down the dry run fails, so nothing of the application is applied — not even the Deployment that
would bring the backend back. Seen on Flux's real kustomize-controller (e2e/test_gitops_flux.py): KServe's
controller scaled to 0, every reconciliation of its Kustomization failed with `ClusterServingRuntime/...
dry-run failed ... failed calling webhook "clusterservingruntime.kserve-webhook-server.validator"`, and the
controller was never scaled back. (On a first install the opposite happens: the engine applies custom
resources before webhook configurations, so its own webhooks never see them.) kfctl apply orders these
objects after the webhook's backend is ready (kfctl.plan); an engine only orders whole parts, so such an
application becomes two: ``<app>`` without those objects, and ``<app>-admitted`` with only them, after it.

Which objects: the plan's webhook, conversion and APIService edges from an object to a backend of the same
application (a backend in another application orders the applications, below). This module only computes;
it reads no cluster and writes nothing.

The order of the applications: their dependsOn (catalog and KfDef), and what the plan says an object of one needs
of another (its Namespace, CRD, the backend of a webhook that admits it: ``needs_between_applications``), as far
as that closes no cycle. Without the second, upstream's full platform, whose applications name no dependsOn, was
one wave: every Application would sync at once, and a sync of objects whose Namespace or CRD another Application
had not made yet would fail and wait for its retries (the order then left to chance, not to the plan).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from kfctl.app.bundle import Bundle
from kfctl.errors import UsageError
from kfctl.objects import Obj, ObjectKey, key_of
from kfctl.plan import rules
from kfctl.plan.graph import Plan

ADMITTED = "-admitted"  # suffix of the part holding what the application's own webhooks admit
_OWN_BACKEND_RULES = (rules.WEBHOOK, rules.CONVERSION, rules.APISERVICE)


@dataclass(frozen=True)
class Part:
    name: str  # "<app>" or "<app>-admitted"
    application: str
    depends_on: tuple[str, ...]  # part names
    drop: tuple[Obj, ...]  # the application's objects this part leaves out
    keep: tuple[Obj, ...]  # the application's objects it applies


def admitted_by_own_backends(plan: Plan) -> dict[str, frozenset[ObjectKey]]:
    """Application → its objects a webhook, conversion webhook or APIService of the same application serves."""
    out: dict[str, set[ObjectKey]] = {}
    for step in plan.objects():
        for edge in plan.deps.get(step.id, ()):
            if edge.rule in _OWN_BACKEND_RULES and plan.steps[edge.dependency].app == step.app:
                out.setdefault(step.app, set()).add(step.key)
    return {app: frozenset(keys) for app, keys in sorted(out.items())}


@dataclass(frozen=True)
class Need:
    """An object of ``application`` needs one of ``dependency`` first (a plan edge between two applications);
    ``hard``: it cannot even be created without it (its Namespace, its CRD: a shared rule)."""

    application: str
    dependency: str
    hard: bool


def needs_between_applications(plan: Plan) -> tuple[Need, ...]:
    """The plan's edges from an object of one application to a step (object or webhook backend) of another, one
    per pair of applications, hard ones first, then by name. What kfctl apply orders object by object, an engine
    orders only application by application: an upstream tree's applications name no dependsOn (kubeflow/manifests'
    example leaves the order to `kustomize build | kubectl apply` retries), yet its objects need the Namespace,
    the CRDs and the webhooks of others."""
    pairs: dict[tuple[str, str], bool] = {}
    for step in plan.objects():
        for edge in plan.deps.get(step.id, ()):
            other = plan.steps[edge.dependency].app
            if other != step.app:
                pairs[(step.app, other)] = pairs.get((step.app, other), False) or edge.rule.shared
    ordered = sorted(pairs.items(), key=lambda item: (not item[1], item[0]))
    return tuple(Need(app, dep, hard) for (app, dep), hard in ordered)


def with_needs(deps: Mapping[str, Sequence[str]], needs: Sequence[Need]) -> dict[str, tuple[str, ...]]:
    """``deps`` (acyclic: the catalog's and the KfDef's dependsOn) plus each need, in order, that closes no cycle
    with what is there already; a need that would is left out (the engine's retries then order those objects, as
    they would without it)."""
    out = {app: set(d) for app, d in deps.items()}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for nxt in out.get(todo.pop(), ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    for need in needs:
        if need.application in out and need.dependency in out and not reaches(need.dependency, need.application):
            out[need.application].add(need.dependency)
    return {app: tuple(sorted(d)) for app, d in out.items()}


def split(
    deps: Mapping[str, Sequence[str]],
    objects: Mapping[str, Sequence[Obj]],
    admitted: Mapping[str, frozenset[ObjectKey]],
) -> dict[str, Part]:
    """The parts of every application: one, or two when its own backends admit some of its objects. A part
    that depends on an application depends on both its parts. UsageError if a part's name is an application's."""
    out: dict[str, Part] = {}
    for app, needs in deps.items():
        after = tuple(p for d in needs for p in ((d, d + ADMITTED) if admitted.get(d) else (d,)))
        mine = tuple(objects.get(app, ()))
        late = admitted.get(app, frozenset())
        first = tuple(o for o in mine if key_of(o) not in late)
        second = tuple(o for o in mine if key_of(o) in late)
        out[app] = Part(app, app, after, second, first)
        if late:
            name = app + ADMITTED
            if name in deps:
                raise UsageError(
                    f"application {name!r}: kfctl export names the second part of application {app!r} so",
                    hint=f"rename application {name!r} in the KfDef",
                )
            out[name] = Part(name, app, (app,), first, second)
    return dict(sorted(out.items()))


def delete_patches(part: Part) -> list[dict[str, Any]]:
    """Kustomize patches (target + `$patch: delete`) that leave ``part.drop`` out of its application's build:
    one per kind when the part keeps nothing of that kind, else one per object (names are regular expressions
    to kustomize, so they are escaped; kustomize anchors them)."""
    kept_kinds = {(key_of(o).group, key_of(o).kind) for o in part.keep}
    out: list[dict[str, Any]] = []
    whole: set[tuple[str, str]] = set()
    for obj in sorted(part.drop, key=key_of):
        key = key_of(obj)
        gk = (key.group, key.kind)
        if gk in kept_kinds:
            target = _target(key) | {"name": re.escape(key.name)}
            if key.namespace:
                target["namespace"] = re.escape(key.namespace)
            out.append(_delete(obj, target, key.name))
        elif gk not in whole:
            whole.add(gk)
            out.append(_delete(obj, _target(key), "any"))
    return out


def _target(key: ObjectKey) -> dict[str, str]:
    return {"group": key.group, "kind": key.kind} if key.group else {"kind": key.kind}


def _delete(obj: Obj, target: dict[str, str], name: str) -> dict[str, Any]:
    patch = {
        "$patch": "delete",
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {"name": name},
    }
    return {"patch": yaml.safe_dump(patch, sort_keys=False), "target": target}


def parts_of(deps: Mapping[str, Sequence[str]], bundle: Bundle) -> dict[str, Part]:
    """The parts of every application of a generated bundle, ordered by ``deps`` and what the plan says the
    applications' objects need of each other (``with_needs``)."""
    plan = bundle.plan()
    ordered = with_needs(deps, needs_between_applications(plan))
    return split(ordered, rendered_objects(bundle), admitted_by_own_backends(plan))


def rendered_objects(bundle: Bundle) -> dict[str, tuple[Obj, ...]]:
    """Application → its rendered objects (the generated Secrets kfctl adds in the cluster are not in git, so
    not in any part)."""
    generated = bundle.generated_keys
    return {app: tuple(o for o in objs if key_of(o) not in generated) for app, objs in bundle.objects_by_app}
