"""What a namespace or a CRD holds that kfctl did not apply: the objects that keep it from being deleted.

Deleting a Namespace deletes everything in it, and deleting a CRD deletes every object of its kind in every
namespace, so prune and delete first look inside: an object that does not carry our ApplySet label is the
user's (or another kfctl app's) and keeps the namespace or CRD, unless it is one Kubernetes or a controller
made by itself. This module only reads; it never deletes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kfctl.engine import labels
from kfctl.engine.inventory import ID_LABEL as APPLYSET_ID_LABEL
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch, Resource
from kfctl.k8s.errors import MethodNotAllowed, NotFound, Transient
from kfctl.objects import Obj, ObjectKey, meta_of

# Made in every namespace by the control plane: never user data.
AUTOMATIC_NAMES: dict[tuple[str, str], frozenset[str]] = {
    ("", "ServiceAccount"): frozenset({"default"}),  # the service-account controller
    ("", "ConfigMap"): frozenset({"kube-root-ca.crt"}),  # the root-CA publisher
}
# Kinds that only describe or coordinate other objects: Events, a Service's endpoints (the Service itself is
# what counts), leader-election Leases of the controllers we installed.
AUTOMATIC_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "Event"),
        ("events.k8s.io", "Event"),
        ("", "Endpoints"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("coordination.k8s.io", "Lease"),
    }
)
# Annotations that say a controller made the object for itself or another one: cert-manager's Secret for a
# Certificate (the Certificate counts), the CA Secret cert-manager's webhook makes for its own serving
# certificate (annotated so that cainjector may inject from it), a leader-election record in a ConfigMap.
DERIVED_ANNOTATIONS = (
    "cert-manager.io/certificate-name",
    "cert-manager.io/allow-direct-injection",
    "control-plane.alpha.kubernetes.io/leader",
)
SHOWN = 10  # objects named in a message; the rest are counted
# Kinds whose pod template names the arguments its containers run with.
WORKLOAD_KINDS: frozenset[tuple[str, str]] = frozenset(
    {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("batch", "Job"), ("batch", "CronJob")}
)


@dataclass(frozen=True)
class Foreign:
    key: ObjectKey
    owner: str  # "" for a user's object, else who it belongs to: "kfctl app X", "ApplySet parent"

    def __str__(self) -> str:
        return f"{self.key} ({self.owner})" if self.owner else str(self.key)


@dataclass(frozen=True)
class Contents:
    foreign: tuple[Foreign, ...]
    unreadable: tuple[str, ...]  # "secrets: 403 Forbidden: …" — kinds we could not check
    denied: bool = False  # an unreadable kind was refused (RBAC), not failing transiently

    def describe(self) -> str:
        """What it holds that is not ours, named (for a namespace kept on purpose)."""
        names = ", ".join(str(f) for f in self.foreign[:SHOWN])
        more = f" and {len(self.foreign) - SHOWN} more" if len(self.foreign) > SHOWN else ""
        return f"holds {len(self.foreign)} object(s) kfctl did not apply: {names}{more}"

    def unchecked(self) -> str:
        """Why what it holds is unknown (for a namespace that could not be checked)."""
        return f"cannot check what it holds ({'; '.join(self.unreadable[:3])})"


def automatic(obj: Mapping[str, Any], group: str) -> bool:
    """True for an object Kubernetes or a controller made by itself (not the user's to lose)."""
    meta = meta_of(obj)
    kind = str(obj.get("kind", ""))
    if (group, kind) in AUTOMATIC_KINDS:
        return True
    if str(meta.get("name", "")) in AUTOMATIC_NAMES.get((group, kind), frozenset()):
        return True
    # Owned objects (a Deployment's ReplicaSets and Pods, a StatefulSet's ControllerRevisions, a custom
    # resource's children) live and die with their owner: garbage collection removes them with it, and an
    # owner that is not ours is listed itself. One being deleted is going anyway.
    if meta.get("ownerReferences") or meta.get("deletionTimestamp"):
        return True
    annotations = meta.get("annotations") or {}
    return any(a in annotations for a in DERIVED_ANNOTATIONS)


def _flag(arg: str) -> tuple[str, str] | None:
    if not arg.startswith("--") or "=" not in arg:
        return None
    name, _, value = arg[2:].partition("=")
    return name.lower(), value.strip("\"'")


def _expand(value: str, container: Mapping[str, Any], namespace: str) -> str:
    """`$(VAR)` as the kubelet expands it, for the variables a name can come from: a plain `value`, or the pod's
    namespace (fieldRef metadata.namespace). "" when a reference stays unknown."""

    def one(match: re.Match[str]) -> str:
        for var in container.get("env") or []:
            if var.get("name") == match.group(1):
                field = ((var.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
                return namespace if field == "metadata.namespace" else str(var.get("value", "\0"))
        return "\0"

    expanded = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", one, value)
    return "" if "\0" in expanded else expanded


def secrets_named_by(workload: Mapping[str, Any]) -> set[ObjectKey]:
    """The Secrets a workload's containers are told to use by name in their arguments (the Spark operator's
    webhook: `--webhook-secret-name=spark-operator-webhook-certs --webhook-secret-namespace=kubeflow`). A controller
    the install runs makes or fills such a Secret for itself (that webhook writes its own serving certificate
    there), so it is the install's, not a user's: it does not keep its namespace. A flag `--<x>secret-name=` or
    `--<x>secret=` names the Secret; `--<x>secret-namespace=` its namespace (else the workload's)."""
    meta = meta_of(workload)
    spec = workload.get("spec") or {}
    if workload.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    pod = ((spec.get("template") or {}).get("spec")) or {}
    found: set[ObjectKey] = set()
    own = str(meta.get("namespace", ""))
    for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
        flags = {
            name: _expand(value, container, own)
            for name, value in filter(
                None, map(_flag, [*(container.get("command") or []), *(container.get("args") or [])])
            )
        }
        for name, value in flags.items():
            for suffix in ("secret-name", "secret"):
                if name.endswith(suffix) and value:
                    ns = flags.get(name[: -len(suffix)] + "secret-namespace", own)
                    if ns:
                        found.add(ObjectKey("", "Secret", ns, value))
    return found


def namespace_contents(
    cluster: Cluster,
    namespace: str,
    *,
    applyset_id: str,
    resources: tuple[Resource, ...],
    workers: int = 8,
    retry: Callable[[Callable[[], list[Obj]]], list[Obj]] = lambda list_: list_(),
    named: frozenset[ObjectKey] = frozenset(),
) -> Contents:
    """The objects in ``namespace`` that are neither ours (our ApplySet label) nor automatic nor ``named`` (by the
    install's own workloads: secrets_named_by), nor a Service named as a Lease of the namespace: a controller that
    shards its work by Leases may expose each as a Service of the same name (Knative's autoscaler makes
    `autoscaler-bucket-00-of-01` so, with no label or owner), which lives and dies with that controller's Lease.
    Each kind's list goes through ``retry`` (the caller's retry of transient failures); a kind still unreadable is
    named in ``unreadable``: what the namespace holds is then unknown, so it must not be deleted."""

    leases: set[str] | None = None  # read once, when a Service could be a Lease's

    def lease_names() -> set[str]:
        nonlocal leases
        if leases is None:
            try:
                found = retry(lambda: cluster.list("coordination.k8s.io/v1", "Lease", namespace=namespace))
            except (ApiError, NoKindMatch):
                found = []
            leases = {str(meta_of(lease).get("name", "")) for lease in found}
        return leases

    def one(res: Resource) -> tuple[list[Foreign], str, bool]:
        try:
            items = retry(lambda: cluster.list(res.api_version, res.kind, namespace=namespace))
        except (NoKindMatch, NotFound, MethodNotAllowed):
            return [], "", False  # not served, or the kind went away meanwhile (its CRD was deleted), or unlistable
        except ApiError as e:
            return [], f"{res.plural}{'.' + res.group if res.group else ''}: {e}", not isinstance(e, Transient)
        out = []
        for item in items:
            if labels.owned_by(item, applyset_id) or automatic(item, res.group):
                continue
            if (meta_of(item).get("labels") or {}).get(APPLYSET_ID_LABEL) == applyset_id:
                continue  # our own inventory (the ApplySet parent), which often lives in the namespace itself
            meta = meta_of(item)
            key = ObjectKey(res.group, res.kind, namespace, str(meta.get("name", "")))
            if key in named:
                continue
            if (res.group, res.kind) == ("", "Service") and key.name in lease_names():
                continue  # a controller's Lease made reachable as a Service (Knative's autoscaler buckets)
            tags = meta.get("labels") or {}
            owner = ""
            if tags.get(labels.PART_OF):
                owner = f"kfctl app {tags.get(labels.APP_LABEL) or '?'}"
            elif tags.get(APPLYSET_ID_LABEL):
                owner = "ApplySet parent"  # another kfctl app's inventory (or kubectl's ApplySet)
            out.append(Foreign(key, owner))
        return out, "", False

    foreign: list[Foreign] = []
    unreadable: list[str] = []
    denied = False
    wanted = [r for r in resources if (r.group, r.kind) not in AUTOMATIC_KINDS]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kfctl-contents") as pool:
        for found, problem, refused in pool.map(one, wanted):
            foreign += found
            if problem:
                unreadable.append(problem)
                denied = denied or refused
    return Contents(tuple(sorted(foreign, key=lambda f: f.key)), tuple(sorted(unreadable)), denied)


def custom_resources_left(cluster: Cluster, crd_name: str, *, applyset_id: str) -> list[ObjectKey]:
    """Objects of the CRD's kind, in any namespace, that are neither ours nor automatic."""
    crd = cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", namespace="", name=crd_name)
    if crd is None:
        return []
    spec = crd.get("spec") or {}
    group, kind = str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", ""))
    versions = [v for v in spec.get("versions") or [] if v.get("served")]
    version = next((v["name"] for v in versions if v.get("storage")), versions[0]["name"] if versions else "")
    if not (group and kind and version):
        return []
    try:
        items = cluster.list(f"{group}/{version}", kind)
    except (NoKindMatch, NotFound, MethodNotAllowed):
        return []  # not served (any more), or cannot be listed: nothing of it can be lost
    left = []
    for item in items:
        if labels.owned_by(item, applyset_id) or automatic(item, group):
            continue
        meta = meta_of(item)
        left.append(ObjectKey(group, kind, str(meta.get("namespace") or ""), str(meta.get("name", ""))))
    return sorted(left)
