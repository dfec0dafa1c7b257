"""`kfctl plan`: the order apply would follow, and why, without touching the cluster."""

from __future__ import annotations

from typing import Any

from kfctl.app.bundle import load_bundle
from kfctl.app.generate import rendered_privately
from kfctl.catalog.model import Catalog
from kfctl.config.model import KfDef
from kfctl.objects import identity
from kfctl.plan.graph import Plan, PlannedObject
from kfctl.plan.hoist import Hoist
from kfctl.plan.summary import PlanSummary, namespace_creator, summarize
from kfctl.plan.text import hoisted_reason


def plan_kfdef(kfdef: KfDef, catalog: Catalog, *, render: bool = True) -> Plan:
    """The plan of the KfDef as it is now (rendered privately: plan writes nothing into APPDIR), or with
    ``render`` off of what generate last wrote."""
    if render:
        with rendered_privately(kfdef, catalog) as rendered:
            return load_bundle(kfdef, catalog, rendered=rendered).plan()
    return load_bundle(kfdef, catalog).plan()


def plan_as_dict(plan: Plan) -> dict[str, Any]:
    """Every step of every wave, and the summary `kfctl plan` prints by default.

    A step is named by its id under ``step`` (the key every other mention of it uses: dependsOn, hoisted,
    longestChain …) and, when it is an object, by the object's fields under ``object`` (:func:`step_ref`).
    """
    return {
        "waves": [[_step_as_dict(plan, sid) for sid in wave] for wave in plan.waves()],
        "summary": summary_as_dict(plan, summarize(plan)),
    }


def step_ref(plan: Plan, sid: str) -> dict[str, Any]:
    """``{"step": id}``, with ``"object": {group, version, kind, namespace, name}`` when the step applies an object
    (the others are kfctl's own gates: an application, a webhook backend, an external application's check)."""
    step = plan.steps[sid]
    return {"step": sid} | ({"object": identity(step.obj)} if isinstance(step, PlannedObject) else {})


def summary_as_dict(plan: Plan, summary: PlanSummary) -> dict[str, Any]:
    return {
        "objects": summary.objects,
        "rendered": summary.rendered,  # what generate counts: less the generated Secrets, with every copy
        "generated": summary.generated,  # Secrets kfctl generates in the cluster
        "waves": summary.waves,
        "applications": [
            {
                "name": a.name,
                "objects": a.objects,
                "namespaces": list(a.namespaces),  # where its namespaced objects go
                "external": a.external,
                "dependsOn": list(a.depends_on),
                "waitsOn": dict(a.waits),  # other application → how many waits on its objects
            }
            for a in summary.applications
        ],
        "hoisted": [
            step_ref(plan, h.step)
            | {"application": h.application, "hoisted": _hoist_as_dict(plan, h.application, h.hoist)}
            for h in summary.hoisted
        ],
        "copies": [step_ref(plan, sid) | {"copiesIn": list(apps)} for sid, apps in summary.copies],
        "shared": len(summary.copies),  # objects counted under each of their applications, once in ``objects``
        "podWebhooks": [
            step_ref(plan, o.step) | {"dependency": step_ref(plan, o.dependency), "rule": o.rule.name}
            for o in summary.pod_webhooks
        ],
        "longestChain": [step_ref(plan, sid) for sid in summary.longest_chain],
    }


def _step_as_dict(plan: Plan, sid: str) -> dict[str, Any]:
    out: dict[str, Any] = step_ref(plan, sid) | {
        "application": plan.steps[sid].app,
        "kind": plan.steps[sid].kind,
        "dependsOn": [
            step_ref(plan, e.dependency) | {"rule": e.rule.name, "orderOnly": e.rule.order_only}
            for e in plan.deps.get(sid, [])
        ],
    }
    hoist = plan.hoisted.get(sid)
    if hoist is not None:  # applied ahead of its application's dependsOn, and why
        out["hoisted"] = _hoist_as_dict(plan, plan.steps[sid].app, hoist)
    if sid in plan.copies:  # later applications render an identical copy, applied once by this step
        out["copiesIn"] = list(plan.copies[sid])
    return out


def _hoist_as_dict(plan: Plan, app: str, hoist: Hoist) -> dict[str, Any]:
    return {
        "neededBy": step_ref(plan, hoist.needed_by),
        "application": hoist.needed_by_app,
        "rule": hoist.rule.name,
        "reason": hoisted_reason(app, hoist),
    }


def inventory_as_dict(plan: Plan, namespace: str) -> dict[str, Any]:
    """Where kfctl keeps its record of the install (the KfDef's metadata.namespace), and which application, if
    any, creates that namespace (else apply does)."""
    return {"namespace": namespace, "createdBy": namespace_creator(plan, namespace)}
