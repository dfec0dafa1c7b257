"""The in-cluster record of what kfctl applied: an ApplySet-compatible parent ConfigMap.

The parent lives in the KfDef's namespace, is labelled ``applyset.kubernetes.io/id`` (computed as the
ApplySet KEP specifies, so ``kubectl apply --prune --applyset`` recognises it) and annotated with the
group-kinds and namespaces it spans. kfctl also keeps the exact member list (key, UID, application) in its
data, because prune must only touch objects whose UID is the one we created, and records the cluster's
identity (the kube-system namespace UID) for delete's same-cluster check.

Write order is what makes it crash-safe: old + new before applying, shrink only after a successful prune.

A member takes about 150 bytes and a ConfigMap at most 1 MiB, so past ``SINGLE_BYTES`` of members the list
moves into *shards*: ConfigMaps named ``<parent>-<digest of their content>``, each holding the members whose
key hashes to it, labelled ``SHARD_OF`` (the ApplySet id) and carrying no ApplySet label (kubectl neither
takes one for a parent nor for a member it could prune). The parent, still the one ApplySet parent with the
same annotations, lists their names. Shards are written before the parent and stale ones deleted after it,
so at every moment the parent names a complete set; a name is its content, so an unchanged shard is never
rewritten and adding one member rewrites one shard. The single-ConfigMap form is still read (and written
while it fits), so installs made by earlier kfctl versions upgrade on their next apply.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kfctl import __version__
from kfctl.errors import ClusterError
from kfctl.k8s.api import Cluster
from kfctl.objects import Obj, ObjectKey, meta_of

ID_LABEL = "applyset.kubernetes.io/id"
TOOLING = "applyset.kubernetes.io/tooling"
GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
CLUSTER_ID = "kfctl.kubeflow.org/cluster-id"
SHARD_OF = "kfctl.kubeflow.org/inventory-shard-of"
DATA_KEY = "objects.json"
SHARDS_KEY = "shards.json"
# Members as JSON up to this size stay in the parent; above, shards of about this size each. Well under the
# 1 MiB object limit: a shard's share of members varies with their keys' hashes.
SINGLE_BYTES = 400 * 1024
SHARD_LIMIT = 900 * 1024


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
    # The later applications that render an identical copy, applied once under ``application``
    # (kfctl.plan.duplicates): the object is theirs too, so status counts it under each.
    also_in: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, str | list[str]]:
        k = self.key
        out: dict[str, str | list[str]] = {
            "group": k.group,
            "kind": k.kind,
            "namespace": k.namespace,
            "name": k.name,
            "application": self.application,
            "uid": self.uid,
        }
        if self.adopted:
            out["adopted"] = self.adopted
        if self.also_in:  # absent when unshared, so the records of earlier versions read and compare the same
            out["alsoIn"] = list(self.also_in)
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
        self,
        keys: Iterable[tuple[ObjectKey, str]],
        *,
        adopted: Mapping[ObjectKey, str] | None = None,
        also_in: Mapping[ObjectKey, tuple[str, ...]] | None = None,
    ) -> Inventory:
        """Old + new: every old member plus each new key (UID unknown until applied); ``adopted`` marks the
        foreign objects about to be taken over, with who managed them; ``also_in``, the later applications
        that render a key too."""
        out = Inventory(self.name, self.namespace, self.cluster_id, dict(self.members))
        taken = adopted or {}
        shared = also_in or {}
        for key, app in keys:
            if key in taken:  # someone else's object now, even where an old run of ours recorded the key
                out.members[key] = Member(key, app, adopted=taken[key], also_in=shared.get(key, ()))
            elif key not in out.members:
                out.members[key] = Member(key, app, also_in=shared.get(key, ()))
        return out

    def to_object(self) -> Obj:
        """The parent ConfigMap (with the members in it, or the names of the shards holding them)."""
        return self.to_objects()[-1]

    def to_objects(self) -> list[Obj]:
        """What is stored: the shards, if the members need any, then the parent."""
        members = sorted(self.members.values(), key=lambda m: m.key)
        gks = sorted({f"{m.key.kind}.{m.key.group}" if m.key.group else m.key.kind for m in members})
        namespaces = sorted({m.key.namespace for m in members if m.key.namespace and m.key.namespace != self.namespace})
        parent: Obj = {
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
        }
        whole = _members_json(members)
        if len(whole) <= SINGLE_BYTES:
            parent["data"] = {DATA_KEY: whole}
            return [parent]
        shards = [self._shard(part) for part in _partition(members, total=len(whole))]
        parent["data"] = {SHARDS_KEY: json.dumps(sorted(s["metadata"]["name"] for s in shards))}
        return [*shards, parent]

    def _shard(self, members: list[Member]) -> Obj:
        text = _members_json(members)
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"{self.name}-{digest}",
                "namespace": self.namespace,
                "labels": {SHARD_OF: self.id},
            },
            "data": {DATA_KEY: text},
        }

    def same_as(self, other: Inventory | None) -> bool:
        return other is not None and self.to_objects() == other.to_objects()


def _members_json(members: list[Member]) -> str:
    return json.dumps([m.as_dict() for m in members], indent=0, sort_keys=True)


def _partition(members: list[Member], *, total: int) -> list[list[Member]]:
    """Members spread over shards by a stable hash of their key (not by position: one added member must not
    move every later one); more shards until each fits."""
    sized = []
    for m in members:
        k = m.key
        h = int.from_bytes(hashlib.sha256(f"{k.group}/{k.kind}/{k.namespace}/{k.name}".encode()).digest()[:8], "big")
        sized.append((m, h, len(json.dumps(m.as_dict(), indent=0, sort_keys=True)) + 2))
    count = -(-total // SINGLE_BYTES)
    while True:
        parts: list[list[Member]] = [[] for _ in range(count)]
        sizes = [2] * count
        for m, h, size in sized:
            parts[h % count].append(m)
            sizes[h % count] += size
        if max(sizes) <= SHARD_LIMIT:
            return [p for p in parts if p]
        count *= 2


def read(cluster: Cluster, *, name: str, namespace: str) -> Inventory | None:
    live = cluster.get("v1", "ConfigMap", namespace=namespace, name=name)
    if live is None:
        return None
    meta = meta_of(live)
    annotations = meta.get("annotations") or {}
    inv = Inventory(name, namespace, str(annotations.get(CLUSTER_ID, "")))
    data = live.get("data") or {}
    texts = [data.get(DATA_KEY) or "[]"]
    if SHARDS_KEY in data:
        texts = []
        for shard in json.loads(data[SHARDS_KEY]):
            obj = cluster.get("v1", "ConfigMap", namespace=namespace, name=shard)
            if obj is None:
                raise ClusterError(
                    f"inventory {namespace}/{name}: its shard ConfigMap {namespace}/{shard} is missing",
                    hint="someone deleted part of kfctl's record of what it installed; restore the ConfigMap "
                    "from a backup, or delete the inventory and re-run `kfctl apply` (it re-adopts what it renders)",
                )
            texts.append((obj.get("data") or {}).get(DATA_KEY) or "[]")
    for text in texts:
        for m in json.loads(text):
            key = ObjectKey(m["group"], m["kind"], m["namespace"], m["name"])
            inv.members[key] = Member(
                key, m.get("application", ""), m.get("uid", ""), m.get("adopted", ""), tuple(m.get("alsoIn", ()))
            )
    return inv


def write(cluster: Cluster, inv: Inventory, *, previous: Inventory | None) -> bool:
    """Store the inventory; no request when it equals ``previous``. True when written.

    New shards first, then the parent that names them, then the shards nobody names any more (including
    any a crashed run left behind): the parent always names a complete set."""
    *shards, parent = objects = inv.to_objects()
    before = previous.to_objects() if previous else []
    if objects == before:
        return False
    stored = {o["metadata"]["name"] for o in before[:-1]}
    for shard in shards:
        if shard["metadata"]["name"] not in stored:  # named by its content: stored means unchanged
            cluster.apply(shard)
    cluster.apply(parent)
    if shards or stored:  # a small inventory that never had shards needs no list (nor the RBAC for it)
        _delete_shards(cluster, inv, keep={s["metadata"]["name"] for s in shards})
    return True


def delete(cluster: Cluster, inv: Inventory) -> None:
    cluster.delete("v1", "ConfigMap", namespace=inv.namespace, name=inv.name)
    if len(inv.to_objects()) > 1:
        _delete_shards(cluster, inv, keep=set())


def _delete_shards(cluster: Cluster, inv: Inventory, *, keep: set[str]) -> None:
    """Every shard of this inventory not in ``keep``, found by label: a crashed write's too."""
    for obj in cluster.list("v1", "ConfigMap", namespace=inv.namespace, label_selector=f"{SHARD_OF}={inv.id}"):
        name = str(meta_of(obj).get("name", ""))
        if name not in keep:
            cluster.delete("v1", "ConfigMap", namespace=inv.namespace, name=name)


def cluster_identity(cluster: Cluster) -> str:
    """The kube-system namespace's UID: stable for a cluster's lifetime, different on every other cluster."""
    ns = cluster.get("v1", "Namespace", namespace="", name="kube-system")
    return str(meta_of(ns).get("uid", ""))
