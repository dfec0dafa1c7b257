"""Prune and delete: remove inventory members in reverse dependency order, safely.

Safety rules: only objects that still carry our ApplySet label and, when we recorded it, the same UID are
deleted (never another app's objects or a user's look-alike); Namespaces, CRDs and storage (PVCs, PVs)
need an explicit allowance; a namespace holding PVCs is kept while storage is kept, because deleting the
namespace would delete the claims. Each phase waits until its objects are gone, and objects that stay
behind a finalizer are reported by name with their finalizers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from kfctl.engine import labels
from kfctl.engine.events import Event, EventType, Reporter
from kfctl.engine.inventory import Member
from kfctl.health.registry import BUILTIN_GROUPS
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch
from kfctl.objects import Obj, ObjectKey
from kfctl.plan import rules


@dataclass(frozen=True)
class RemoveOptions:
    namespaces: bool = False
    crds: bool = False
    storage: bool = False
    wait_timeout: float = 300.0
    poll_interval: float = 0.5
    storage_flag: str = "--prune-storage"  # named in the "kept" message


@dataclass
class RemoveResult:
    removed: list[ObjectKey] = field(default_factory=list)
    kept: list[tuple[ObjectKey, str]] = field(default_factory=list)
    skipped: list[tuple[ObjectKey, str]] = field(default_factory=list)  # gone already or no longer ours
    stuck: list[tuple[ObjectKey, str]] = field(default_factory=list)
    failed: list[tuple[ObjectKey, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.stuck and not self.failed


def remove(
    cluster: Cluster,
    members: Iterable[Member],
    *,
    applyset_id: str,
    reporter: Reporter,
    options: RemoveOptions,
    verb: Literal["Pruned", "Deleted"],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> RemoveResult:
    result = RemoveResult()
    phases: dict[int, list[Member]] = {}
    for m in members:
        phases.setdefault(rules.delete_phase(m.key.group, m.key.kind, builtin_groups=BUILTIN_GROUPS), []).append(m)
    for phase in sorted(phases):
        pending: dict[ObjectKey, Member] = {}
        for m in sorted(phases[phase], key=lambda m: m.key):
            if _delete_one(cluster, m, applyset_id=applyset_id, reporter=reporter, options=options, result=result):
                pending[m.key] = m
        deadline = clock() + options.wait_timeout
        while pending:
            for key in list(pending):
                live = _get(cluster, key)
                if live is None:
                    member = pending.pop(key)
                    result.removed.append(key)
                    _emit(reporter, verb, key, member)
            if not pending or clock() > deadline:
                break
            sleep(options.poll_interval)
        for key in sorted(pending):
            live = _get(cluster, key)
            if live is None:
                result.removed.append(key)
                _emit(reporter, verb, key, None)
                continue
            finalizers = ", ".join((live.get("metadata") or {}).get("finalizers") or []) or "none"
            why = f"still present after {options.wait_timeout:g}s; finalizers: {finalizers}"
            if key.kind == "Namespace":
                why += _namespace_conditions(live)
            result.stuck.append((key, why))
            reporter(Event("Stuck", str(key), why))
    return result


def _delete_one(
    cluster: Cluster,
    m: Member,
    *,
    applyset_id: str,
    reporter: Reporter,
    options: RemoveOptions,
    result: RemoveResult,
) -> bool:
    """Issue the delete if every safety rule allows it; True when a delete was sent and must be awaited."""
    key = m.key
    live = _get(cluster, key)
    if live is None:
        result.skipped.append((key, "already gone"))
        return False
    uid = str((live.get("metadata") or {}).get("uid", ""))
    if not labels.owned_by(live, applyset_id):
        result.skipped.append((key, "no longer carries our label; left alone"))
        reporter(Event("Skipped", str(key), "no longer carries our label; left alone", app=m.application))
        return False
    if m.uid and uid != m.uid:
        result.skipped.append((key, "was recreated by someone else (UID differs); left alone"))
        reporter(Event("Skipped", str(key), "UID differs from the one kfctl applied; left alone", app=m.application))
        return False
    keep = _protected(cluster, key, options)
    if keep:
        result.kept.append((key, keep))
        reporter(Event("Kept", str(key), keep, app=m.application))
        return False
    if (live.get("metadata") or {}).get("deletionTimestamp"):
        return True
    try:
        res = cluster.resource_for_key(key)
        cluster.delete(res.api_version, key.kind, namespace=key.namespace, name=key.name, uid=uid)
    except (ApiError, NoKindMatch) as e:
        result.failed.append((key, str(e)))
        reporter(Event("Failed", str(key), f"delete failed: {e}", app=m.application))
        return False
    reporter(Event("Deleting", str(key), "", app=m.application))
    return True


def _protected(cluster: Cluster, key: ObjectKey, options: RemoveOptions) -> str:
    """Why this object must be kept ("" when it may go)."""
    gk = (key.group, key.kind)
    if gk == ("", "Namespace"):
        if not options.namespaces:
            return "namespaces are kept without --prune-namespaces"
        if not options.storage:
            claims = cluster.list("v1", "PersistentVolumeClaim", namespace=key.name)
            if claims:
                return f"holds {len(claims)} PersistentVolumeClaim(s), kept without {options.storage_flag}"
    if gk == ("apiextensions.k8s.io", "CustomResourceDefinition") and not options.crds:
        return "CRDs are kept (deleting one deletes every object of its kind); use --prune-crds"
    if gk in rules.STORAGE_KINDS and not options.storage:
        return f"storage is kept without {options.storage_flag}"
    return ""


def _namespace_conditions(live: Obj) -> str:
    conds = [c for c in (live.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    return "".join(f"; {c.get('type')}: {c.get('message', '')}" for c in conds)


def _get(cluster: Cluster, key: ObjectKey) -> Obj | None:
    try:
        res = cluster.resource_for_key(key)
    except NoKindMatch:
        return None  # its CRD is gone, and every object of the kind with it
    return cluster.get(res.api_version, key.kind, namespace=key.namespace, name=key.name)


def _emit(reporter: Reporter, verb: EventType, key: ObjectKey, m: Member | None) -> None:
    reporter(Event(verb, str(key), "", app=m.application if m else ""))
