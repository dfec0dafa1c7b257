"""The critical path of an apply: the chain of waits that decided how long it took.

Read backwards from the step that became ready last: each step was held by the dependency that became ready
last among its own (the one it waited for longest), back to a step that waited for nothing. Each segment is
the time a step took once what held it was ready — its own apply and wait — so the segments add up to the
run's time to ready. The plan's edges say who waited for whom; the engine's clock says when each was ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kfctl.plan.graph import Plan, topological_order


@dataclass(frozen=True)
class Segment:
    step: str
    application: str
    seconds: float  # from the moment what held it was ready (or the run's start) to its own readiness

    def as_dict(self) -> dict[str, object]:
        return {"step": self.step, "application": self.application, "seconds": round(self.seconds, 2)}


def critical_path(plan: Plan, ready_at: Mapping[str, float]) -> list[Segment]:
    """The chain, first wait first; [] when no step became ready. ``ready_at``: step id → seconds from the
    run's start to its readiness (steps never ready are left out)."""
    if not ready_at:
        return []
    # Ties (an application is ready the moment its last object is) go to the later step in the apply order,
    # the one that waited for the other.
    order = {sid: i for i, sid in enumerate(topological_order(plan))}

    def latest(sid: str) -> tuple[float, int]:
        return ready_at[sid], order.get(sid, -1)

    current: str | None = max(ready_at, key=latest)
    chain: list[Segment] = []
    while current is not None:
        held_by = [e.dependency for e in plan.deps.get(current, []) if e.dependency in ready_at]
        gate = max(held_by, key=latest, default=None)
        since = ready_at[gate] if gate is not None else 0.0
        chain.append(Segment(current, plan.steps[current].app, max(0.0, ready_at[current] - since)))
        current = gate
    return chain[::-1]
