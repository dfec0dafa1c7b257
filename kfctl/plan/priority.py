"""Which ready step to start first when the apply slots are all taken: the one with the longest chain of
waits from it.

A first install releases a couple of hundred objects at once (RBAC, ConfigMaps, CRDs) into eight apply
slots. Taken in plan order, the ServiceAccount of a slow operator's Deployment queues behind objects that
nothing waits for, and every second it queues is added to the run: its Deployment, that Deployment's
webhook, and what the webhook admits all wait behind it. Its *height* — how many waits there are on the
longest chain from it through its dependents — says it matters more than a ConfigMap nothing depends on; a
step that waits itself ranks above one that does not, so that its wait starts sooner.

A wait's weight is one, plus the seconds its pods' readiness probes are told to wait before their first probe
(``initialDelaySeconds``, read from the manifest): a wait known to take 30 s outweighs a chain of quick ones. In
upstream's full platform KServe's controller waits 30 s so; counted as one wait, its chain (its CRDs, then it)
ranked 34th of 70 CRDs to be created, and the API server, which establishes CRDs roughly in the order they come,
made the chain's first link wait 22 s under load.

A custom resource is Ready when its controller has run, not when it is applied: a workload that writes a kind's
status (``plan.drives``) heads the chains of those resources too. Without that, cert-manager's controller — which
nothing waits for by an edge — queued behind a hundred CRDs while the Certificate that KServe's controller mounts
(and after it that controller's 30 s probe delay) waited for it to issue.
"""

from __future__ import annotations

import graphlib
from collections.abc import Mapping, Sequence

from kfctl.objects import Obj, ObjectKey
from kfctl.plan.graph import Plan, PlannedGate, PlannedObject, Step, pod_spec


def _waits(step: Step) -> int:
    """0 for a step that holds nothing up (an apply alone takes milliseconds), else 1 for its wait plus the
    readiness delay its manifest sets (`readiness_delay`)."""
    if isinstance(step, PlannedGate):
        return 0  # a gate: ready the moment its members are, it adds no time of its own
    if isinstance(step, PlannedObject):
        return 1 + readiness_delay(step.key, step.obj) if step.wait else 0
    return 1  # a webhook backend or an external application's check


def readiness_delay(key: ObjectKey, obj: Obj) -> int:
    """The longest ``initialDelaySeconds`` of a workload's containers' readiness (or startup) probes: seconds
    no pod of it can be Ready in, whatever anyone does. 0 for what runs no pods. Only a weight: a malformed value
    counts 0 here, and the API server's validation names it when the object is applied."""
    pod = pod_spec(key, obj)
    delays = [
        delay
        for c in (pod or {}).get("containers") or []
        if isinstance(c, Mapping)
        for probe in ("readinessProbe", "startupProbe")
        if isinstance(c.get(probe), Mapping)
        for delay in [c[probe].get("initialDelaySeconds")]
        if isinstance(delay, int) and not isinstance(delay, bool)
    ]
    return max(delays, default=0)


def heights(plan: Plan, order: Sequence[str], dependents: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Step id → the weight of the waits on the longest chain from it (itself included) through the steps that
    depend on it or that it drives (``plan.drives``): 0 for an object nothing waits for and that waits for
    nothing. ``order`` is the plan's topological order and ``dependents`` its reverse edges (the scheduler has
    both already): dependents come later in the order, so one pass from its end computes it. With drives the
    pass follows their order instead; should drives close a cycle (two controllers each writing what the other
    waits for), they are left out: they only weigh, they never order."""
    after: Mapping[str, Sequence[str]] = dependents
    sequence: Sequence[str] = list(reversed(order))
    if plan.drives:
        joined = {sid: [*dependents[sid], *plan.drives.get(sid, ())] for sid in dependents}
        try:
            sequence = list(graphlib.TopologicalSorter(joined).static_order())
            after = joined
        except graphlib.CycleError:
            pass
    out: dict[str, int] = {}
    for sid in sequence:
        out[sid] = _waits(plan.steps[sid]) + max((out[d] for d in after[sid]), default=0)
    return out
