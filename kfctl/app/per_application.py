"""The end of an apply, per application: its state, its objects and what happened to them, and how long it
took to be healthy — the table `kfctl apply` ends with (and `summary.applications` in -o json), so a person
sees which application is done and which one the run waited on."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kfctl.engine.apply import ApplyResult
from kfctl.plan.graph import Plan, external_id


@dataclass(frozen=True)
class ApplicationRow:
    name: str
    state: str  # ready, failed (one of its objects failed), blocked (held by a failure elsewhere), not ready
    objects: int
    created: int
    configured: int  # changed in place: configured, drift corrected, adopted or recreated
    unchanged: int
    pruned: int
    seconds: float | None  # from the command's start to the application being healthy; None when it never was

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "objects": self.objects,
            "created": self.created,
            "configured": self.configured,
            "unchanged": self.unchanged,
            "pruned": self.pruned,
            "seconds": None if self.seconds is None else round(self.seconds, 2),
        }


def application_rows(
    plan: Plan, result: ApplyResult, pruned: Mapping[str, int], *, offset: float = 0.0
) -> list[ApplicationRow]:
    """One row per application of the plan, in the KfDef's order; ``pruned``: application → objects pruned.
    ``offset``: seconds from the command's start to the engine's, added to the times (the engine's clock starts
    with its run; a person's with the command)."""
    # An object several applications render is applied once (by the first) but is each one's: it counts under
    # every application that renders it, and once in the run's totals (which are not made here).
    apps_of = {sid: plan.applications_of(sid) for sid in plan.steps}
    objects = plan.sizes()
    counts = {
        verdict: Counter(app for sid in sids for app in apps_of.get(sid, ("",)))
        for verdict, sids in (
            ("created", result.created),
            ("configured", result.configured + result.corrected + result.adopted + result.recreated),
            ("unchanged", result.unchanged),
        )
    }
    failed = {app for f in result.failed for app in apps_of.get(f.subject, ("",))}
    blocked = {app for f in result.blocked for app in apps_of.get(f.subject, ("",))}
    members: dict[str, list[str]] = {}
    for step in plan.objects():
        for owner in apps_of[step.id]:
            members.setdefault(owner, []).append(step.id)
    rows = []
    for app in plan.applications:
        ready = _ready_at(result, app.name, members.get(app.name, []))
        if ready is not None:
            state = "ready"
        elif app.name in failed:
            state = "failed"
        elif app.name in blocked:
            state = "blocked"
        else:
            state = "not ready"
        rows.append(
            ApplicationRow(
                app.name,
                state,
                objects[app.name],
                counts["created"][app.name],
                counts["configured"][app.name],
                counts["unchanged"][app.name],
                pruned.get(app.name, 0),
                None if ready is None else ready + offset,
            )
        )
    return rows


def _ready_at(result: ApplyResult, app: str, members: list[str]) -> float | None:
    """When the application was ready: its last object's moment, once all of them are ready; for one the
    cluster provides, its check's. (Its ``application`` step is no guide: dependents wait only for the API it
    serves, which is ready before its workloads are.)"""
    if external_id(app) in result.ready_at:
        return result.ready_at[external_id(app)]
    if members and all(sid in result.ready_at for sid in members):
        return max(result.ready_at[sid] for sid in members)
    return None
