"""Which ready step to start first when the apply slots are all taken: the one with the longest chain of
waits from it.

A first install releases a couple of hundred objects at once (RBAC, ConfigMaps, CRDs) into eight apply
slots. Taken in plan order, the ServiceAccount of a slow operator's Deployment queues behind objects that
nothing waits for, and every second it queues is added to the run: its Deployment, that Deployment's
webhook, and what the webhook admits all wait behind it. Its *height* — how many waits there are on the
longest chain from it through its dependents — says it matters more than a ConfigMap nothing depends on; a
step that waits itself ranks above one that does not, so that its wait starts sooner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kfctl.plan.graph import Plan, Step


def _waits(step: Step) -> int:
    """1 for a step that holds its dependents until something becomes ready, else 0: an apply alone takes
    milliseconds, a wait for a controller takes seconds."""
    if step.kind == "application":
        return 0  # a gate: ready the moment its members are, it adds no time of its own
    if step.kind == "object":
        return int(step.wait)
    return 1  # a webhook backend or an external application's check


def heights(plan: Plan, order: Sequence[str], dependents: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Step id → the number of waits on the longest chain from it (itself included) through the steps that
    depend on it: 0 for an object nothing waits for and that waits for nothing. ``order`` is the plan's
    topological order and ``dependents`` its reverse edges (the scheduler has both already): dependents come
    later in the order, so one pass from its end computes it."""
    out: dict[str, int] = {}
    for sid in reversed(order):
        out[sid] = _waits(plan.steps[sid]) + max((out[d] for d in dependents[sid]), default=0)
    return out
