"""Categories "storage" and "resources": will the bundle's pods find volumes and room? A PVC that names no
StorageClass needs a default one (else it stays Pending and apply waits on it); the pods' requests must fit
the schedulable nodes' allocatable CPU and memory; the NVIDIA device plugin wants GPU nodes."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from kfctl.check import quantity
from kfctl.check.model import Outcome, PreContext
from kfctl.objects import Obj, meta_of

DEFAULT_CLASS = ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")
GPU = "nvidia.com/gpu"
GPU_COMPONENT = "nvidia-device-plugin"
WORKLOADS = {"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job", "Pod"}


def default_storage_class(ctx: PreContext) -> Outcome:
    pvcs = [o for _, o in ctx.objects if o.get("kind") == "PersistentVolumeClaim" and _group(o) == ""]
    pvcs += [t for _, o in ctx.objects if o.get("kind") == "StatefulSet" for t in _claim_templates(o)]
    if not pvcs:
        return Outcome("skip", "the bundle renders no PersistentVolumeClaim")
    classes = ctx.cluster.list("storage.k8s.io/v1", "StorageClass")
    names = {str(c["metadata"]["name"]) for c in classes}
    names |= {str(o["metadata"]["name"]) for _, o in ctx.objects if o.get("kind") == "StorageClass"}
    defaults = sorted(str(c["metadata"]["name"]) for c in classes if _is_default(c))
    unnamed = [_name(p) for p in pvcs if (p.get("spec") or {}).get("storageClassName") is None]
    unknown = sorted(
        {
            f"{_name(p)} ({cls})"
            for p in pvcs
            if (cls := (p.get("spec") or {}).get("storageClassName")) and cls not in names
        }
    )
    problems = []
    if unnamed and not defaults:
        problems.append(
            f"{len(unnamed)} PersistentVolumeClaim(s) name no storageClassName and the cluster has no "
            f"default StorageClass: {', '.join(sorted(unnamed))}"
        )
    if unknown:
        problems.append(f"PersistentVolumeClaim(s) name a StorageClass that does not exist: {', '.join(unknown)}")
    if problems:
        return Outcome(
            "fail",
            "; ".join(problems) + " — they would stay Pending and apply would wait on them",
            "mark a StorageClass default (kubectl annotate storageclass NAME "
            "storageclass.kubernetes.io/is-default-class=true), or install a provisioner that brings one",
        )
    via = f"default StorageClass {defaults[0]}" if unnamed else "their named StorageClasses"
    return Outcome("pass", f"{len(pvcs)} PersistentVolumeClaim(s) bind through {via}")


def node_capacity(ctx: PreContext) -> Outcome:
    """Sum of replicas times containers' requests per application against the schedulable nodes' allocatable."""
    nodes = _schedulable(ctx.cluster.list("v1", "Node"))
    per_app: dict[str, list[Decimal]] = {}
    for app, obj in ctx.objects:
        cpu, mem = _requests(obj, node_count=len(nodes))
        total = per_app.setdefault(app, [Decimal(0), Decimal(0)])
        total[0] += cpu
        total[1] += mem
    want_cpu = sum((v[0] for v in per_app.values()), Decimal(0))
    want_mem = sum((v[1] for v in per_app.values()), Decimal(0))
    have_cpu = sum((_allocatable(n, "cpu") for n in nodes), Decimal(0))
    have_mem = sum((_allocatable(n, "memory") for n in nodes), Decimal(0))
    where = f"{len(nodes)} schedulable node(s)"
    summary = (
        f"requests cpu {quantity.cpu(want_cpu)} of {quantity.cpu(have_cpu)}, memory {quantity.memory(want_mem)} of "
        f"{quantity.memory(have_mem)} allocatable on {where}"
    )
    short = [what for what, want, have in (("cpu", want_cpu, have_cpu), ("memory", want_mem, have_mem)) if want > have]
    if short:
        apps = "; ".join(
            f"{app} cpu {quantity.cpu(c)} memory {quantity.memory(m)}"
            for app, (c, m) in sorted(per_app.items())
            if c or m
        )
        return Outcome(
            "fail",
            f"not enough {' and '.join(short)}: the bundle {summary} (per application: {apps})",
            "add nodes (or larger ones), or lower the requests/replicas of the largest applications",
        )
    return Outcome("pass", f"the bundle {summary}")


def gpu_nodes(ctx: PreContext) -> Outcome:
    if not any(c.name == GPU_COMPONENT for c in ctx.components.values()):
        return Outcome("skip", f"the {GPU_COMPONENT} component is not chosen")
    gpus = {str(n["metadata"]["name"]): _allocatable(n, GPU) for n in ctx.cluster.list("v1", "Node")}
    with_gpu = {n: g for n, g in gpus.items() if g > 0}
    if not with_gpu:
        return Outcome(
            "warn",
            f"no node offers allocatable {GPU}: the {GPU_COMPONENT} has nothing to advertise and GPU jobs stay Pending",
            "add NVIDIA GPU nodes (with their driver), or leave out the nvidia-device-plugin component",
        )
    return Outcome("pass", f"{len(with_gpu)} node(s) offer {sum(with_gpu.values())} {GPU}")


def _group(obj: Obj) -> str:
    api_version = str(obj.get("apiVersion", ""))
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _name(obj: Mapping[str, Any]) -> str:
    meta = meta_of(obj)
    return f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


def _claim_templates(sts: Obj) -> list[Obj]:
    """A StatefulSet's volumeClaimTemplates make PVCs as much as a rendered PVC does."""
    ns = meta_of(sts).get("namespace")
    out = []
    for t in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
        meta = {**meta_of(t), "namespace": ns}
        meta["name"] = f"{meta.get('name')}-{meta_of(sts).get('name')}-*"
        out.append({**t, "metadata": meta})
    return out


def _is_default(storage_class: Obj) -> bool:
    notes = meta_of(storage_class).get("annotations") or {}
    return any(str(notes.get(a, "")).lower() == "true" for a in DEFAULT_CLASS)


def _schedulable(nodes: list[Obj]) -> list[Obj]:
    """Nodes a pod without tolerations may land on: not cordoned, no NoSchedule/NoExecute taint."""
    return [
        n
        for n in nodes
        if not (n.get("spec") or {}).get("unschedulable")
        and not any(t.get("effect") in ("NoSchedule", "NoExecute") for t in (n.get("spec") or {}).get("taints") or [])
    ]


def _allocatable(node: Obj, resource: str) -> Decimal:
    status = node.get("status") or {}
    return quantity.parse((status.get("allocatable") or status.get("capacity") or {}).get(resource, 0))


def _requests(obj: Obj, *, node_count: int) -> tuple[Decimal, Decimal]:
    """(cpu, memory) the object's pods request together: replicas (a DaemonSet: one per node, a Job: its
    parallelism) times the sum over its containers."""
    kind = obj.get("kind")
    if kind not in WORKLOADS:
        return Decimal(0), Decimal(0)
    spec = obj.get("spec") or {}
    pod = spec if kind == "Pod" else ((spec.get("template") or {}).get("spec") or {})
    if kind == "DaemonSet":
        copies = node_count
    elif kind == "Job":
        copies = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
    elif kind == "Pod":
        copies = 1
    else:
        copies = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
    cpu = mem = Decimal(0)
    for c in pod.get("containers") or []:
        resources = c.get("resources") or {}
        # A container that sets only a limit requests that much: the API server defaults requests to limits.
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        cpu += quantity.parse(asked.get("cpu", 0))
        mem += quantity.parse(asked.get("memory", 0))
    return cpu * copies, mem * copies
