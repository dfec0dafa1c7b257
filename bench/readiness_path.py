"""The readiness critical path as the API server recorded it, and a side's overhead over it (issue 32, item 1).

Pure: it reads what the bench fetched from a cluster once a side finished (the objects' status conditions,
their pods) and the apply plan's edges (`kfctl plan --skip-generate -o json`, the same for every side: the same
bytes). It never talks to a cluster, never reads a client's clock, and prints nothing.

Definition (bench/README.md says the same):

- an object's *timeline* is two server timestamps: ``start``, when it could begin to become ready (its
  creationTimestamp; for a workload, the latest container start of the pod that became Ready last, so a pod
  waiting for a Secret to mount, or crash-looping until a dependency answers, is not counted as its own wait),
  and ``ready``, its Ready transition (a condition's lastTransitionTime: CRD Established, APIService
  Available, Job Complete, any other object's Ready — Certificates, Issuers …; a workload's pods' Ready);
- its *own wait* is ``ready - max(start, the moment its dependencies were ready on the server)``, never below
  0; objects without a readiness signal (ConfigMaps, RBAC, Services, webhook configurations, custom resources
  without status) and kfctl's virtual steps (webhook backends, applications) wait 0;
- the *critical path* is the longest chain of own waits through the plan's dependency edges (an order-only
  edge passes on when the dependency could start, not when it was ready — except ``mounts-certificate``: kfctl
  applies the workload early, but its pods cannot start before the Certificate's Secret exists, which is when
  the Certificate is Ready): the time to all-healthy of a client that applied every object the instant what it
  waits for was ready and whose requests took no time;
- *overhead* = the side's wall time to all-healthy (process start to exit) - the critical path.

It is a lower bound of the limit: what the server does not timestamp is left out (the CA injection into
webhook configurations, endpoints becoming ready, a Certificate waiting for cert-manager's controller when
no plan edge says so is counted in its own wait). Server timestamps have 1 s resolution (RFC 3339 seconds,
truncated), so each segment is ±1 s and a path of n waiting segments ±n s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# Workload kinds whose readiness is their pods' (apps/Deployment via its ReplicaSets).
WORKLOADS = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet")})
# The condition that says "ready" for a kind; any other kind: "Ready".
READY_CONDITION = {
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "Established",
    ("apiregistration.k8s.io", "APIService"): "Available",
    ("batch", "Job"): "Complete",
}

Ident = tuple[str, str, str, str]  # group, kind, namespace, name


@dataclass(frozen=True)
class Timeline:
    start: float  # epoch seconds, server's
    ready: float


@dataclass(frozen=True)
class Segment:
    node: str
    seconds: float  # the node's own wait


@dataclass(frozen=True)
class CriticalPath:
    segments: tuple[Segment, ...]  # first wait first

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.segments)

    def overhead(self, wall: float) -> float:
        """What the side took beyond the path: its start-up, requests, scheduling, polling, grace windows."""
        return wall - self.seconds

    def describe(self, *, shown: float = 1.0) -> str:
        """``12 s: Deployment a/b 3 s → Certificate a/c 1 s → …`` (segments under ``shown`` seconds left out)."""
        parts = [f"{s.node} {s.seconds:.0f} s" for s in self.segments if s.seconds >= shown]
        return f"{self.seconds:.0f} s: {' → '.join(parts) or '-'}"


def parse_time(stamp: str) -> float:
    """RFC 3339 as the API server writes it (``2026-11-27T02:00:45Z``) → epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _condition(obj: Mapping[str, Any], kind: str) -> float | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True" and c.get("lastTransitionTime"):
            return parse_time(str(c["lastTransitionTime"]))
    return None


def _pod_start(pod: Mapping[str, Any]) -> float:
    starts = [
        parse_time(str(s["state"]["running"]["startedAt"]))
        for s in (pod.get("status") or {}).get("containerStatuses") or []
        if ((s.get("state") or {}).get("running") or {}).get("startedAt")
    ]
    return max(starts, default=parse_time(str(pod["metadata"]["creationTimestamp"])))


def _pod_owner(pod: Mapping[str, Any]) -> Ident | None:
    meta = pod.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        kind, name = str(ref.get("kind")), str(ref.get("name"))
        if kind == "ReplicaSet":  # <deployment>-<pod-template-hash>
            return ("apps", "Deployment", str(meta.get("namespace", "")), name.rpartition("-")[0])
        if (_group(str(ref.get("apiVersion", ""))), kind) in WORKLOADS:
            return ("apps", kind, str(meta.get("namespace", "")), name)
    return None


def timelines(items: Iterable[Mapping[str, Any]]) -> dict[Ident, Timeline]:
    """Every object of ``items`` (``kubectl get … -o json``'s items: pods and the objects themselves) that
    records a Ready transition, by (group, kind, namespace, name); a workload by the pod of its that became
    Ready last."""
    out: dict[Ident, Timeline] = {}
    pods: dict[Ident, Timeline] = {}
    for obj in items:
        meta = obj.get("metadata") or {}
        group, kind = _group(str(obj.get("apiVersion", ""))), str(obj.get("kind", ""))
        if (group, kind) == ("", "Pod"):
            owner = _pod_owner(obj)
            ready = _condition(obj, "Ready")
            if owner is not None and ready is not None and (owner not in pods or ready > pods[owner].ready):
                pods[owner] = Timeline(_pod_start(obj), ready)
            continue
        if (group, kind) in WORKLOADS or not meta.get("creationTimestamp"):
            continue
        ready = _condition(obj, READY_CONDITION.get((group, kind), "Ready"))
        if ready is not None:
            ident = (group, kind, str(meta.get("namespace", "")), str(meta.get("name", "")))
            out[ident] = Timeline(parse_time(str(meta["creationTimestamp"])), ready)
    return out | pods


@dataclass(frozen=True)
class Graph:
    """The plan's steps: step id → its dependencies as (step id, order only), and the object a step applies."""

    deps: Mapping[str, Sequence[tuple[str, bool]]]
    objects: Mapping[str, Ident]


# Order-only rules whose dependency must be *ready* before the dependent can begin on the server.
READY_GATED_RULES = frozenset({"mounts-certificate"})


def plan_graph(plan: Mapping[str, Any]) -> Graph:
    """From `kfctl plan -o json`: its waves of steps, each with ``dependsOn`` [{step, rule, orderOnly}] and, for
    an object, ``object`` {group, kind, namespace, name}."""
    deps: dict[str, list[tuple[str, bool]]] = {}
    objects: dict[str, Ident] = {}
    for wave in plan["waves"]:
        for step in wave:
            sid = str(step["step"])
            deps[sid] = [
                (str(d["step"]), bool(d.get("orderOnly")) and d.get("rule") not in READY_GATED_RULES)
                for d in step.get("dependsOn") or []
            ]
            o = step.get("object")
            if o:
                objects[sid] = (str(o.get("group", "")), str(o["kind"]), str(o.get("namespace") or ""), str(o["name"]))
    return Graph(deps, objects)


def critical_path(graph: Graph, recorded: Mapping[Ident, Timeline]) -> CriticalPath:
    """The longest chain of own waits (see the module's docstring); an empty path when nothing waited."""
    ready: dict[str, float | None] = {}  # server time the step was ready (None: no dependency recorded one)
    could: dict[str, float | None] = {}  # server time the step could start: what it waits for was ready
    own: dict[str, float] = {}
    finish: dict[str, float] = {}  # the path's length up to and including the step
    via: dict[str, tuple[str, bool] | None] = {}  # the dependency that held the step last, and if order only

    def visit(sid: str) -> None:
        stack = [sid]
        while stack:
            top = stack[-1]
            pending = [d for d, _ in graph.deps.get(top, ()) if d not in finish and d in graph.deps]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if top not in finish:
                _settle(top)

    def _settle(sid: str) -> None:
        edges = [(d, o) for d, o in graph.deps.get(sid, ()) if d in finish]
        gates = [could[d] if o else ready[d] for d, o in edges]
        known = [g for g in gates if g is not None]
        gate = max(known) if known else None
        could[sid] = gate
        t = recorded.get(graph.objects[sid]) if sid in graph.objects else None
        if t is None:
            own[sid], ready[sid] = 0.0, gate
        else:
            begin = t.start if gate is None else max(t.start, gate)
            own[sid], ready[sid] = max(0.0, t.ready - begin), t.ready
        best: tuple[str, bool] | None = None
        best_at = 0.0
        for d, o in edges:
            at = finish[d] - own[d] if o else finish[d]
            if best is None or at > best_at:
                best, best_at = (d, o), at
        via[sid] = best
        finish[sid] = best_at + own[sid]

    for sid in graph.deps:
        visit(sid)
    if not finish:
        return CriticalPath(())
    current: str | None = max(finish, key=lambda s: (finish[s], own[s]))
    counted = True
    chain: list[Segment] = []
    while current is not None:
        if counted:  # a step reached through an order-only edge only started: its own wait is not on the path
            chain.append(Segment(current, own[current]))
        held = via[current]
        current, counted = (held[0], not held[1]) if held else (None, True)
    return CriticalPath(tuple(s for s in reversed(chain) if s.seconds > 0))
