"""The in-cluster record of what kfctl applied: an ApplySet-compatible parent ConfigMap.

The parent lives in the KfDef's namespace, is labelled ``applyset.kubernetes.io/id`` (computed as the
ApplySet KEP specifies, so ``kubectl apply --prune --applyset`` recognises it) and annotated with the
group-kinds and namespaces it spans. kfctl also keeps the exact member list (key, UID, application) in its
data, because prune must only touch objects whose UID is the one we created, and records the cluster's
identity (the kube-system namespace UID) for delete's same-cluster check.

Write order is what makes it crash-safe: old + new before applying, shrink only after a successful prune.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kfctl import __version__
from kfctl.k8s.api import Cluster
from kfctl.objects import Obj, ObjectKey

ID_LABEL = "applyset.kubernetes.io/id"
TOOLING = "applyset.kubernetes.io/tooling"
GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
CLUSTER_ID = "kfctl.kubeflow.org/cluster-id"
DATA_KEY = "objects.json"


def applyset_id(*, name: str, namespace: str, kind: str = "ConfigMap", group: str = "") -> str:
    """``applyset-<base64url(sha256(name.namespace.kind.group))>-v1``, as in KEP-3659."""
    digest = hashlib.sha256(f"{name}.{namespace}.{kind}.{group}".encode()).digest()
    return "applyset-" + base64.urlsafe_b64encode(digest).decode().rstrip("=") + "-v1"


def parent_name(kfdef_name: str) -> str:
    return f"kfctl-inventory-{kfdef_name}"


@dataclass(frozen=True)
class Member:
    key: ObjectKey
    application: str
    uid: str = ""
    adopted: str = ""  # who managed it before kfctl took it over ("" when kfctl created it)

    def as_dict(self) -> dict[str, str]:
        k = self.key
        out = {
            "group": k.group,
            "kind": k.kind,
            "namespace": k.namespace,
            "name": k.name,
            "application": self.application,
            "uid": self.uid,
        }
        if self.adopted:
            out["adopted"] = self.adopted
        return out


@dataclass
class Inventory:
    name: str
    namespace: str
    cluster_id: str
    members: dict[ObjectKey, Member] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return applyset_id(name=self.name, namespace=self.namespace)

    def merged(
        self, keys: Iterable[tuple[ObjectKey, str]], *, adopted: Mapping[ObjectKey, str] | None = None
    ) -> Inventory:
        """Old + new: every old member plus each new key (UID unknown until applied); ``adopted`` marks the
        foreign objects about to be taken over, with who managed them."""
        out = Inventory(self.name, self.namespace, self.cluster_id, dict(self.members))
        taken = adopted or {}
        for key, app in keys:
            if key in taken:  # someone else's object now, even where an old run of ours recorded the key
                out.members[key] = Member(key, app, adopted=taken[key])
            elif key not in out.members:
                out.members[key] = Member(key, app)
        return out

    def to_object(self) -> Obj:
        members = sorted(self.members.values(), key=lambda m: m.key)
        gks = sorted({f"{m.key.kind}.{m.key.group}" if m.key.group else m.key.kind for m in members})
        namespaces = sorted({m.key.namespace for m in members if m.key.namespace and m.key.namespace != self.namespace})
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {ID_LABEL: self.id},
                "annotations": {
                    TOOLING: f"kfctl/v{__version__}",
                    GROUP_KINDS: ",".join(gks),
                    NAMESPACES: ",".join(namespaces),
                    CLUSTER_ID: self.cluster_id,
                },
            },
            "data": {DATA_KEY: json.dumps([m.as_dict() for m in members], indent=0, sort_keys=True)},
        }

    def same_as(self, other: Inventory | None) -> bool:
        return other is not None and self.to_object() == other.to_object()


def read(cluster: Cluster, *, name: str, namespace: str) -> Inventory | None:
    live = cluster.get("v1", "ConfigMap", namespace=namespace, name=name)
    if live is None:
        return None
    meta = live.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    inv = Inventory(name, namespace, str(annotations.get(CLUSTER_ID, "")))
    raw = (live.get("data") or {}).get(DATA_KEY) or "[]"
    for m in json.loads(raw):
        key = ObjectKey(m["group"], m["kind"], m["namespace"], m["name"])
        inv.members[key] = Member(key, m.get("application", ""), m.get("uid", ""), m.get("adopted", ""))
    return inv


def write(cluster: Cluster, inv: Inventory, *, previous: Inventory | None) -> bool:
    """Store the inventory; no request when it equals ``previous``. True when written."""
    if inv.same_as(previous):
        return False
    cluster.apply(inv.to_object())
    return True


def delete(cluster: Cluster, inv: Inventory) -> None:
    cluster.delete("v1", "ConfigMap", namespace=inv.namespace, name=inv.name)


def cluster_identity(cluster: Cluster) -> str:
    """The kube-system namespace's UID: stable for a cluster's lifetime, different on every other cluster."""
    ns = cluster.get("v1", "Namespace", namespace="", name="kube-system")
    return str(((ns or {}).get("metadata") or {}).get("uid", ""))
