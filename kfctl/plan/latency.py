"""Scheduling latency: how long a step waited, once its last dependency was ready, for its own apply to return.

The benchmark's figure for the engine's reaction time (issue 15, item 3): with polling it included up to a
poll interval per dependency; with watches it is the wake-up plus the apply request. Read from the engine's
clock (``ready_at``, ``applied_at``: step id → seconds from the run's start) and the plan's edges; an
order-only edge releases its dependent when the dependency is applied, not when it is ready.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from kfctl.plan.graph import Plan


@dataclass(frozen=True)
class Latency:
    steps: int
    median: float
    max: float
    p95: float  # nearest rank: the value 95 % of the steps are at or under

    def as_dict(self) -> dict[str, object]:
        return {
            "steps": self.steps,
            "median": round(self.median, 3),
            "p95": round(self.p95, 3),
            "max": round(self.max, 3),
        }


def scheduling_latencies(
    plan: Plan, ready_at: Mapping[str, float], applied_at: Mapping[str, float]
) -> dict[str, float]:
    """Step id → seconds from its last dependency releasing it to its apply returning, for every applied
    step that waited for at least one dependency (the others started with the run)."""
    out: dict[str, float] = {}
    for sid, applied in applied_at.items():
        released: list[float] = []
        for e in plan.deps.get(sid, []):
            dep = e.dependency
            when = applied_at.get(dep, ready_at.get(dep)) if e.rule.order_only else ready_at.get(dep)
            if when is not None:
                released.append(when)
        if released:
            out[sid] = max(0.0, applied - max(released))
    return out


def summarize(latencies: Mapping[str, float]) -> Latency | None:
    if not latencies:
        return None
    values = sorted(latencies.values())
    p95 = values[math.ceil(0.95 * len(values)) - 1]
    return Latency(len(values), statistics.median(values), values[-1], p95)
