"""Scheduling latency: how long a step waited, once its last dependency was ready, for its own apply to return.

The benchmark's figure for the engine's reaction time (issue 15, item 3): with polling it included up to a
poll interval per dependency; with watches it is the wake-up plus the apply request. Read from the engine's
clock (``ready_at``, ``applied_at``, ``started_at``: step id → seconds from the run's start) and the plan's edges;
an order-only edge releases its dependent when the dependency is applied, not when it is ready.

Where a long latency comes from (issue 32, item 2): a step released with the others of a large install may wait
for one of the apply slots (``--concurrency``), a CRD also for the CRD gate (:mod:`kfctl.engine.crdgate`: three
at a time, on purpose), before its request is sent; then the request itself takes what the server takes (a
megabyte CRD, a retry after a refusal). ``started_at`` splits the two, and :func:`summarize` counts the long ones
by cause, so a p95 of seconds reads as "queued behind the server" or "the server was slow", not as a guess.
"""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from kfctl.plan.graph import Plan, object_key

# Upper bounds of the histogram's buckets, in seconds; the last bucket is everything above the last bound.
BUCKETS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0)
LONG = 0.5  # a latency above this is counted by cause (the goal's p95)
CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")


@dataclass(frozen=True)
class Latency:
    steps: int
    median: float
    max: float
    p95: float  # nearest rank: the value 95 % of the steps are at or under
    histogram: tuple[int, ...] = ()  # steps per bucket of BUCKETS, and one more for the rest
    # Latencies over LONG ("longByCause" in JSON) by cause: "crd-gate" (a CRD queued for the gate or a slot),
    # "apply-slot" (another object queued for a slot), "request" (most of it after the request was sent).
    causes: tuple[tuple[str, int], ...] = ()

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "steps": self.steps,
            "median": round(self.median, 3),
            "p95": round(self.p95, 3),
            "max": round(self.max, 3),
        }
        if self.histogram:
            out["histogram"] = dict(zip(bucket_labels(), self.histogram, strict=True))
        if self.causes:
            out["longByCause"] = dict(self.causes)
        return out


def bucket_labels() -> list[str]:
    bounds = [f"{b:g}" for b in BUCKETS]
    return [f"<={bounds[0]}s", *(f"{lo}-{hi}s" for lo, hi in itertools.pairwise(bounds)), f">{bounds[-1]}s"]


def _released(plan: Plan, sid: str, ready_at: Mapping[str, float], applied_at: Mapping[str, float]) -> float | None:
    released: list[float] = []
    for e in plan.deps.get(sid, []):
        dep = e.dependency
        when = applied_at.get(dep, ready_at.get(dep)) if e.rule.order_only else ready_at.get(dep)
        if when is not None:
            released.append(when)
    return max(released) if released else None


def scheduling_latencies(
    plan: Plan, ready_at: Mapping[str, float], applied_at: Mapping[str, float]
) -> dict[str, float]:
    """Step id → seconds from its last dependency releasing it to its apply returning, for every applied
    step that waited for at least one dependency (the others started with the run)."""
    out: dict[str, float] = {}
    for sid, applied in applied_at.items():
        released = _released(plan, sid, ready_at, applied_at)
        if released is not None:
            out[sid] = max(0.0, applied - released)
    return out


def queue_waits(
    plan: Plan, ready_at: Mapping[str, float], applied_at: Mapping[str, float], started_at: Mapping[str, float]
) -> dict[str, float]:
    """Step id → the part of its latency before its first request was sent: queued for an apply slot or the CRD
    gate. The rest of its latency is the request's (and its retries')."""
    out: dict[str, float] = {}
    for sid, started in started_at.items():
        released = _released(plan, sid, ready_at, applied_at)
        if released is not None and sid in applied_at:
            out[sid] = max(0.0, started - released)
    return out


def _cause(plan: Plan, sid: str, latency: float, queued: float) -> str:
    if queued < latency / 2:
        return "request"
    key = object_key(plan.steps[sid]) if sid in plan.steps else None
    return "crd-gate" if key is not None and (key.group, key.kind) == CRD else "apply-slot"


def summarize(
    latencies: Mapping[str, float], *, plan: Plan | None = None, queued: Mapping[str, float] | None = None
) -> Latency | None:
    """Median, p95, max and the histogram; with ``plan`` and ``queued`` (:func:`queue_waits`) also the long
    latencies by cause."""
    if not latencies:
        return None
    values = sorted(latencies.values())
    p95 = values[math.ceil(0.95 * len(values)) - 1]
    in_bucket = Counter(bisect.bisect_left(BUCKETS, v) for v in values)  # the first bound at or above v
    histogram = [in_bucket[i] for i in range(len(BUCKETS) + 1)]
    causes: Counter[str] = Counter()
    if plan is not None and queued is not None:
        causes.update(_cause(plan, sid, v, queued.get(sid, 0.0)) for sid, v in latencies.items() if v > LONG)
    return Latency(
        len(values), statistics.median(values), values[-1], p95, tuple(histogram), tuple(sorted(causes.items()))
    )
