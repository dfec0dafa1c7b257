"""`kfctl delete`: uninstall what the inventory records, in reverse dependency order, on the right cluster.

Refuses to run against a cluster other than the one the app directory was applied to (the kube-system UID
recorded at apply time, in APPDIR/.cache/cluster.json and in the inventory) unless forced. PVCs and PVs
stay unless storage deletion is asked for, and so do the namespaces holding them; a namespace holding objects
kfctl did not apply (a user's, another kfctl app's) stays unless forced, naming them; objects kfctl adopted
rather than created stay unless asked for. Like apply, it holds the install's lock while it runs.
:func:`preview_delete` (``--dry-run``) applies the same rules to the objects as they are and writes nothing.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from kfctl.app.cluster import ClusterRecord, identify, install_locked, talking_to
from kfctl.config.model import KfDef
from kfctl.engine import inventory
from kfctl.engine.events import Event, EventLog, Reporter
from kfctl.engine.inventory import Inventory, Member
from kfctl.engine.lease import Held
from kfctl.engine.remove import RemoveOptions, removal_order, remove
from kfctl.errors import ApiDeniedError, ClusterError, HealthError, KfctlError
from kfctl.k8s.api import Cluster, NoKindMatch
from kfctl.objects import ObjectKey, key_fields
from kfctl.plan.graph import application_id
from kfctl.wording import counted


@dataclass
class DeleteSummary:
    found: bool = False
    deleted: int = 0
    kept: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)  # the kept objects no longer labelled as this install's
    stuck: list[str] = field(default_factory=list)
    skipped: int = 0
    seconds: float = 0.0
    requests: dict[str, Any] = field(default_factory=dict)
    error: KfctlError | None = None
    shared: int = 0  # objects several applications render: under each in the live view, once in ``deleted``

    def as_dict(self) -> dict[str, Any]:
        return {
            "found": self.found,
            "deleted": self.deleted,
            "kept": self.kept,
            "released": self.released,
            "stuck": self.stuck,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 2),
            "requests": self.requests,
            "ok": self.error is None,
            "shared": self.shared,
        }


def delete_kfdef(
    kfdef: KfDef,
    *,
    open_cluster: Callable[[], Cluster],
    reporter: Reporter,
    options: RemoveOptions,
    force: bool,
    lock_timeout: float = 30.0,
) -> DeleteSummary:
    """Delete what the inventory records, as ``options`` (:func:`delete_options`) say; ``force``: on a cluster
    other than the one applied to too."""
    start = time.monotonic()
    cluster = open_cluster()
    cluster_id = identify(cluster)
    # No namespace, no inventory: nothing to delete and nothing to lock; nor in a namespace being deleted.
    locked = install_locked(
        cluster, kfdef, command="delete", wait=lock_timeout, reporter=reporter, need="if its namespace is active"
    )
    with locked as lock, talking_to(cluster, "deleting"):
        return _delete_locked(
            kfdef,
            cluster,
            cluster_id,
            lock=lock,
            start=start,
            reporter=reporter,
            options=options,
            force=force,
        )


def _delete_locked(
    kfdef: KfDef,
    cluster: Cluster,
    cluster_id: str,
    *,
    lock: Held | None,
    start: float,
    reporter: Reporter,
    options: RemoveOptions,
    force: bool,
) -> DeleteSummary:
    summary = DeleteSummary()
    inv = _inventory_of_this_cluster(kfdef, cluster, cluster_id, force=force)
    if inv is None:
        summary.seconds = time.monotonic() - start
        summary.requests = cluster.stats.as_dict()
        return summary
    summary.found = True
    # An object several applications render (the inventory's alsoIn) counts under each of them, as apply's does.
    sizes = Counter(app for m in inv.members.values() for app in (m.application, *m.also_in))
    for app, n in sizes.items():
        reporter(Event("Planned", application_id(app), counted(n, "object"), app=app, count=n))
    summary.shared = sum(1 for m in inv.members.values() if m.also_in)
    result = remove(
        cluster, inv.members.values(), applyset_id=inv.id, reporter=reporter, options=options, verb="Deleted"
    )
    summary.deleted = len(result.removed)
    summary.skipped = len(result.skipped)
    summary.kept = [f"{k}: {why}" for k, why in result.kept]
    summary.released = [str(k) for k in result.released]
    summary.stuck = [f"{k}: {why}" for k, why in result.stuck + result.failed]
    left = {k for k, _ in result.kept + result.stuck + result.failed}
    if lock is not None:
        lock.check("recording the inventory")
    if left:
        # Keep recording what is still there, so `kfctl delete --delete-storage` can finish the job later.
        rest = inventory.Inventory(
            inv.name, inv.namespace, inv.cluster_id, {k: m for k, m in inv.members.items() if k in left}
        )
        if cluster.get("v1", "Namespace", namespace="", name=inv.namespace) is not None:
            inventory.write(cluster, rest, previous=inv)
    else:
        # Its namespace usually went with the rest; otherwise remove the record itself.
        if cluster.get("v1", "Namespace", namespace="", name=inv.namespace) is not None:
            inventory.delete(cluster, inv)
    if result.denied:
        summary.error = ApiDeniedError(
            f"the API server refused what deleting {len(result.failed)} object(s) needed "
            "(the delete, or a list of what a namespace holds)",
            details=summary.stuck,
            hint="they stay recorded in the inventory; fix the permission, then re-run kfctl delete",
        )
    elif result.stuck or result.failed:
        hints = ["they stay recorded in the inventory: re-run kfctl delete"] if result.failed else []
        if result.stuck:
            hints.append("objects stuck on finalizers wait for their controller; remove a finalizer only if it is gone")
        summary.error = HealthError(
            f"{len(summary.stuck)} object(s) were not deleted", details=summary.stuck, hint="; ".join(hints)
        )
    summary.seconds = time.monotonic() - start
    summary.requests = cluster.stats.as_dict()
    return summary


def delete_options(
    *,
    delete_storage: bool = False,
    force_namespaces: bool = False,
    delete_adopted: bool = False,
    wait_timeout: float = 300.0,
    dry_run: bool = False,
) -> RemoveOptions:
    """What `kfctl delete` removes: everything it applied, namespaces and CRDs too; storage, namespaces holding
    others' objects and adopted objects only when asked; what it keeps is released."""
    return RemoveOptions(
        namespaces=True,
        crds=True,
        storage=delete_storage,
        wait_timeout=wait_timeout,
        storage_flag="--delete-storage",
        force_namespaces=force_namespaces,
        adopted=delete_adopted,
        adopted_flag="--delete-adopted",
        release_kept=True,
        dry_run=dry_run,
    )


def _inventory_of_this_cluster(kfdef: KfDef, cluster: Cluster, cluster_id: str, *, force: bool) -> Inventory | None:
    """The install's inventory (None when there is none); ClusterError when APPDIR was applied to another
    cluster, unless forced."""
    inv = inventory.read(cluster, name=inventory.parent_name(kfdef.name), namespace=kfdef.namespace)
    record = ClusterRecord.load(kfdef.app_dir)
    recorded = [r for r in ((record.cluster_id if record else ""), (inv.cluster_id if inv else "")) if r]
    if not force and any(r != cluster_id for r in recorded):
        was = f" (server {record.server}, context {record.context})" if record else ""
        raise ClusterError(
            f"refusing to delete: {kfdef.app_dir} was applied to another cluster{was}; "
            f"this is {cluster.info.describe()}",
            details=[f"recorded cluster id {recorded[0]}, this cluster's id {cluster_id} (kube-system UID)"],
            hint="point --kubeconfig/--context at the cluster you applied to, or pass --force",
        )
    return inv


DeleteVerdict = Literal["delete", "keep", "skip", "error"]
PREVIEW_WAIT = 30.0  # seconds a preview retries a read failing transiently


@dataclass(frozen=True)
class PreviewedObject:
    member: Member
    verdict: DeleteVerdict
    reason: str  # why it is kept or skipped; "" for one that would be deleted
    api_version: str  # as the cluster serves its kind ("" when it serves it no more)

    def as_dict(self) -> dict[str, Any]:
        key = self.member.key
        out = {"subject": str(key), "object": key_fields(key, self.api_version), "application": self.member.application}
        also_in = {"alsoIn": list(self.member.also_in)} if self.member.also_in else {}
        return out | also_in | {"verdict": self.verdict} | ({"reason": self.reason} if self.reason else {})


@dataclass
class DeletePreview:
    """What `kfctl delete --dry-run` found: each recorded object's verdict, in the order delete would go."""

    found: bool = False
    objects: list[PreviewedObject] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        seen = Counter(o.verdict for o in self.objects)
        return {v: seen[v] for v in get_args(DeleteVerdict)}

    @property
    def shared(self) -> int:
        """Objects several applications render (alsoIn on each), counted once in ``counts``."""
        return sum(1 for o in self.objects if o.member.also_in)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dryRun": True,
            "found": self.found,
            "objects": [o.as_dict() for o in self.objects],
            "summary": self.counts(),
            "shared": self.shared,
        }


def preview_delete(
    kfdef: KfDef,
    *,
    open_cluster: Callable[[], Cluster],
    options: RemoveOptions,
    force: bool,
) -> DeletePreview:
    """What delete would remove, keep and skip, by delete's own rules (``options``, as :func:`delete_kfdef` takes
    them) applied to the objects as they are now. Reads only: no delete, no release, no lock, no inventory write."""
    cluster = open_cluster()
    cluster_id = identify(cluster)
    with talking_to(cluster, "reading what delete would remove"):
        inv = _inventory_of_this_cluster(kfdef, cluster, cluster_id, force=force)
        if inv is None:
            return DeletePreview()
        # PREVIEW_WAIT bounds the retries of a read failing transiently.
        reading = replace(options, dry_run=True, wait_timeout=PREVIEW_WAIT)
        result = remove(
            cluster, inv.members.values(), applyset_id=inv.id, reporter=EventLog(), options=reading, verb="Deleted"
        )
        why: dict[ObjectKey, tuple[DeleteVerdict, str]] = {k: ("delete", "") for k in result.planned}
        why |= {k: ("keep", reason) for k, reason in result.kept}
        why |= {k: ("skip", reason) for k, reason in result.skipped}
        why |= {k: ("error", reason) for k, reason in result.failed}
        return DeletePreview(
            found=True,
            objects=[
                PreviewedObject(m, *why[m.key], _served_version(cluster, m.key))
                for m in removal_order(inv.members.values())
            ],
        )


def _served_version(cluster: Cluster, key: ObjectKey) -> str:
    try:
        return cluster.resource_for_key(key).api_version
    except NoKindMatch:
        return ""
