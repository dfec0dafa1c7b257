"""`kfctl plan` as text: waves of steps, each with what it waits for and why. Tests snapshot this text."""

from __future__ import annotations

from kfctl.plan.graph import Plan
from kfctl.plan.hoist import Hoist


def format_plan(plan: Plan) -> str:
    waves = plan.waves()
    n_obj = len(plan.objects())
    lines = [f"Plan: {n_obj} objects in {len(plan.applications)} application(s), {len(waves)} wave(s)"]
    for app in plan.applications:
        if app.depends_on:
            lines.append(f"  application {app.name} after {', '.join(app.depends_on)}")
    for i, wave in enumerate(waves, start=1):
        lines.append("")
        lines.append(f"Wave {i}")
        for sid in wave:
            step = plan.steps[sid]
            if step.kind == "application":
                lines.append(f"  {sid} ready when all its objects are")
                continue
            if step.kind == "external" and step.external is not None:
                what = (
                    f"its {len(step.external.crds)} CRDs" if step.external.crds else "nothing (not a catalog component)"
                )
                lines.append(f"  {sid}  provided by the cluster; kfctl checks {what} and the webhooks guarding them")
                continue
            lines.append(f"  {sid}  [{step.app}]" + ("" if step.wait else "  (no wait)"))
            hoist = plan.hoisted.get(sid)
            if hoist is not None:
                lines.append(f"      {hoisted_reason(step.app, hoist)}")
            if sid in plan.copies:
                lines.append(f"      applied once: identical copy in application {', '.join(plan.copies[sid])}")
            for edge in sorted(plan.deps.get(sid, []), key=lambda e: e.dependency):
                if edge.rule.name == "member":
                    continue
                verb = "after" if edge.rule.order_only else "waits for"
                lines.append(f"      {verb} {edge.dependency}: {edge.rule.phrase}")
    return "\n".join(lines)


def hoisted_reason(app: str, hoist: Hoist) -> str:
    """One line: why this object does not wait for its application's dependsOn."""
    more = f", as do {hoist.others} more object(s) of other applications" if hoist.others else ""
    return (
        f"hoisted ahead of {app}'s dependsOn: {hoist.needed_by} [{hoist.needed_by_app}] needs it"
        f" ({hoist.rule.phrase}){more}"
    )
