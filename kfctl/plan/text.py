"""`kfctl plan` as text: the summary, or every wave of steps with what each waits for and why.

Tests snapshot this text; it says nothing of command-line flags, which are the CLI's to mention.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kfctl.plan import rules
from kfctl.plan.graph import Plan, PlannedExternal, PlannedGate, object_key
from kfctl.plan.hoist import Hoist
from kfctl.plan.summary import ApplicationSummary, PlanSummary, PodWebhookOrder, namespace_creator
from kfctl.wording import counted

CHAIN_WIDTH = 100  # the longest chain wraps between steps, so each line stays readable in a terminal
LISTED = 3  # names listed before "and N more" in the summary


def format_plan(plan: Plan) -> str:
    waves = plan.waves()
    lines = [headline(len(plan.objects()), len(plan.applications), len(waves))]
    for app in plan.applications:
        if app.depends_on:
            lines.append(f"  application {app.name} after {', '.join(app.depends_on)}")
    for i, wave in enumerate(waves, start=1):
        lines.append("")
        lines.append(f"Wave {i}")
        for sid in wave:
            step = plan.steps[sid]
            if isinstance(step, PlannedGate):
                lines.append(f"  {sid} {application_gate(plan, sid)}")
                continue
            if isinstance(step, PlannedExternal):
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
                if edge.rule.name in ("member", "api"):
                    continue
                verb = "after" if edge.rule.order_only else "waits for"
                lines.append(f"      {verb} {edge.dependency}: {edge.rule.phrase}")
    return "\n".join(lines)


def headline(objects: int, applications: int, waves: int) -> str:
    return f"Plan: {counted(objects, 'object')} in {applications} application(s), {waves} wave(s)"


def format_summary(summary: PlanSummary) -> str:
    """What a reviewer needs to see on one screen; every section but the applications only when it has rows."""
    lines = [headline(summary.objects, len(summary.applications), summary.waves), *_count_origin(summary), ""]
    lines += _application_table(summary.applications)
    if summary.hoisted:
        lines += ["", "Shared objects applied ahead of their application's dependsOn:"]
        for h in summary.hoisted:
            lines += [f"  {h.step}  [{h.application}]", f"      {hoisted_reason(h.application, h.hoist)}"]
    if summary.copies:
        lines += ["", "Objects several applications render (counted under each above, once in the total):"]
        for sid, apps in summary.copies:
            lines.append(f"  {sid}  applied once: identical copy in application {', '.join(apps)}")
    if summary.pod_webhooks:
        lines += ["", "Pod webhooks (a failurePolicy=Fail webhook admits these workloads' pods):"]
        lines += _pod_webhook_lines(summary.pod_webhooks)
    if len(summary.longest_chain) > 1:  # one step alone waits for nothing
        lines += ["", f"Longest chain of waits ({len(summary.longest_chain)} steps):"]
        lines += _wrapped_chain(summary.longest_chain)
    return "\n".join(lines)


def _count_origin(summary: PlanSummary) -> list[str]:
    """Why the plan's count is not the one `generate` printed ("Rendered … 236 objects", "Plan: 239 objects")."""
    if not summary.generated and not summary.copies and not summary.replaced:
        return []
    parts = [f"the {counted(summary.rendered, 'object')} generate renders"]
    if summary.replaced:
        parts.append(
            f"{summary.replaced} of them Secret(s) holding upstream's shared credentials, which kfctl generates per "
            "install instead"
        )
    if summary.generated:
        parts.append(f"plus {summary.generated} Secret(s) kfctl generates in the cluster at apply")
    copies = sum(len(apps) for _, apps in summary.copies)
    if copies:
        parts.append(f"less {copies} identical cop{'y' if copies == 1 else 'ies'} applied once")
    return [f"  ({', '.join(parts)})"]


def _application_table(apps: Sequence[ApplicationSummary]) -> list[str]:
    rows = [("APPLICATION", "OBJECTS", "NAMESPACES", "AFTER (dependsOn)", "WAITS ON OBJECTS OF")]
    for a in apps:
        waits = ", ".join(f"{name} ×{n}" for name, n in a.waits)
        objects = "external" if a.external else str(a.objects)
        where = "" if a.external else _some(a.namespaces) or "-"  # -: cluster-scoped objects only
        rows.append((a.name, objects, where, ", ".join(a.depends_on), waits))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return [
        f"  {r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]:<{widths[3]}}  {r[4]}".rstrip()
        for r in rows
    ]


def inventory_line(plan: Plan, namespace: str) -> str:
    """Where kfctl keeps its own record (the KfDef's metadata.namespace), which is not where objects go: that is
    the NAMESPACES column, as the manifests say."""
    creator = namespace_creator(plan, namespace)
    if creator is not None:
        where = f"created by application {creator}"
    elif any(s.key.namespace == namespace for s in plan.objects()):
        where = "which no application creates: apply creates it"
    else:
        where = "where no object goes: apply creates it for the record alone"
    return f"Inventory and lock (kfctl's record of this install): namespace {namespace}, {where}"


def _pod_webhook_lines(orders: Sequence[PodWebhookOrder]) -> list[str]:
    """One line per webhook configuration registered late, and per backend that workloads' pods wait for."""
    groups: dict[tuple[str, str], list[str]] = {}
    for o in orders:
        if o.rule.name == rules.ADMITS_ITS_NEEDS.name:  # the configuration waits for workloads
            groups.setdefault((o.rule.name, o.step), []).append(o.dependency)
        else:  # workloads wait for the backend
            groups.setdefault((o.rule.name, o.dependency), []).append(o.step)
    phrase = {o.rule.name: o.rule.phrase for o in orders}
    lines = []
    for (rule, subject), others in sorted(groups.items()):
        if rule == rules.ADMITS_ITS_NEEDS.name:
            lines.append(f"  {subject} waits for {_some(others)}")
        else:
            lines.append(f"  {_some(others)} {'waits' if len(others) == 1 else 'wait'} for {subject}")
        lines.append(f"      {rule}: {phrase[rule]}")
    return lines


def _some(names: Sequence[str]) -> str:
    more = len(names) - LISTED
    return ", ".join(names[:LISTED]) + (f" and {more} more" if more > 0 else "")


def _wrapped_chain(chain: Sequence[str]) -> list[str]:
    """``A → B → C``, wrapped before an arrow once a line is CHAIN_WIDTH long."""
    lines = [f"  {chain[0]}"]
    for sid in chain[1:]:
        if len(lines[-1]) + len(sid) + 3 > CHAIN_WIDTH:
            lines.append(f"  → {sid}")
        else:
            lines[-1] += f" → {sid}"
    return lines


def hoisted_reason(app: str, hoist: Hoist) -> str:
    """One line: why this object does not wait for its application's dependsOn."""
    more = f", as do {hoist.others} more object(s) of other applications" if hoist.others else ""
    return (
        f"hoisted ahead of {app}'s dependsOn: {hoist.needed_by} [{hoist.needed_by_app}] needs it"
        f" ({hoist.rule.phrase}){more}"
    )


def application_gate(plan: Plan, sid: str) -> str:
    """When an application step is ready: the API it serves, or all of it (:mod:`kfctl.plan.graph`)."""
    edges = plan.deps.get(sid, [])
    if not any(e.rule.name == "api" for e in edges):
        return "ready when all its objects are"
    keys = [object_key(plan.steps[e.dependency]) for e in edges]
    kinds = Counter(k.kind for k in keys if k is not None)
    parts = [f"{kinds['CustomResourceDefinition']} CRD(s) Established"] if kinds["CustomResourceDefinition"] else []
    if kinds["APIService"]:
        parts.append(f"{kinds['APIService']} APIService(s) Available")
    return f"ready when the API it serves is: {', '.join(parts)}"
