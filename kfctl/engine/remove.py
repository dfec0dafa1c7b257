"""Prune and delete: remove inventory members in reverse dependency order, safely.

Safety rules: only objects that still carry our ApplySet label and, when we recorded it, the same UID are
deleted (never another app's objects or a user's look-alike); objects kfctl adopted rather than created
are kept unless asked for; Namespaces, CRDs and storage (PVCs, PVs)
need an explicit allowance; a namespace holding PVCs is kept while storage is kept, and a namespace holding
anything kfctl did not apply (a user's objects, another kfctl app's) is kept unless forced, because deleting
a namespace deletes everything in it; one whose contents cannot all be listed is neither deleted nor kept on
purpose: that is a failure of the run. Each phase waits until its objects are gone, and objects that stay
behind a finalizer are reported by name with their finalizers. Transient API failures (a restarting API
server) are retried until the phase's wait timeout; a lost connection is never mistaken for "gone".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Literal, TypeVar

from kfctl.engine import labels
from kfctl.engine.events import Event, EventType, Reporter
from kfctl.engine.foreign import SHOWN, WORKLOAD_KINDS, custom_resources_left, namespace_contents, secrets_named_by
from kfctl.engine.inventory import Member
from kfctl.engine.retry import retry_transient
from kfctl.health.registry import BUILTIN_GROUPS
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch, Resource, Unreachable
from kfctl.k8s.errors import MethodNotAllowed, NotFound, PreconditionFailed, Transient
from kfctl.objects import Obj, ObjectKey, meta_of
from kfctl.plan import rules

T = TypeVar("T")


@dataclass(frozen=True)
class RemoveOptions:
    namespaces: bool = False
    crds: bool = False
    storage: bool = False
    wait_timeout: float = 300.0
    poll_interval: float = 0.5
    storage_flag: str = "--prune-storage"  # named in the "kept" message
    force_namespaces: bool = False  # delete namespaces even with objects kfctl did not apply in them
    force_flag: str = "--force-namespaces"
    adopted: bool = False  # delete objects kfctl adopted (it did not create them)
    adopted_flag: str = "--prune-adopted"
    # Delete: what is kept is released (ownership labels removed, labels.RELEASED_ANNOTATION set), so the next
    # install of another KfDef may use it; it stays in the inventory, so this install can finish the job later.
    release_kept: bool = False
    # `kfctl delete --dry-run`: every rule above is applied to the objects as they are, and nothing is written
    # (no delete, no release); what would go is listed in RemoveResult.planned.
    dry_run: bool = False


@dataclass
class RemoveResult:
    removed: list[ObjectKey] = field(default_factory=list)
    kept: list[tuple[ObjectKey, str]] = field(default_factory=list)
    released: list[ObjectKey] = field(default_factory=list)  # kept and released (RemoveOptions.release_kept)
    planned: list[ObjectKey] = field(default_factory=list)  # would be removed (RemoveOptions.dry_run)
    skipped: list[tuple[ObjectKey, str]] = field(default_factory=list)  # gone already or no longer ours
    stuck: list[tuple[ObjectKey, str]] = field(default_factory=list)
    failed: list[tuple[ObjectKey, str]] = field(default_factory=list)
    denied: bool = False  # a failure was the API server's refusal (RBAC, a webhook), not a transient one

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
        phases.setdefault(_phase(m), []).append(m)
    members = list(members)
    ctx = _Context(cluster, applyset_id, reporter, options, result, clock, sleep)
    # Adopted objects that stay also keep the namespace they are in and the CRD of their kind: deleting
    # either would delete them with it (they carry our label, so the look inside would not see them).
    ctx.adopted_kept = [m for m in members if m.adopted and not options.adopted]
    for phase in sorted(phases):
        pending: dict[ObjectKey, Member] = {}
        ctx.deadline = clock() + options.wait_timeout
        for m in sorted(phases[phase], key=lambda m: m.key):
            if _delete_one(ctx, m):
                pending[m.key] = m
        lost: dict[ObjectKey, str] = {}  # the last transient error while checking, when there was one
        while pending:
            for key in list(pending):
                try:
                    live = _get(cluster, key)
                except (ApiError, Unreachable) as e:
                    if not isinstance(e, Transient):
                        _failed(ctx, pending.pop(key), f"cannot check that it is gone: {e}", denied=True)
                        continue
                    lost[key] = e.explanation
                    continue
                lost.pop(key, None)
                if live is None:
                    member = pending.pop(key)
                    result.removed.append(key)
                    _emit(reporter, verb, member)
            if not pending or clock() > ctx.deadline:
                break
            sleep(options.poll_interval)
        for key in sorted(pending):
            if key in lost:
                _failed(ctx, pending[key], f"deleted, but not seen gone before the timeout: {lost[key]}")
                continue
            try:
                live = ctx.call(partial(_get, cluster, key))
            except (ApiError, Unreachable) as e:
                _failed(ctx, pending[key], f"cannot confirm it is gone: {e}", denied=not isinstance(e, Transient))
                continue
            if live is None:
                result.removed.append(key)
                _emit(reporter, verb, pending[key])
                continue
            finalizers = ", ".join(meta_of(live).get("finalizers") or []) or "none"
            why = f"still present after {options.wait_timeout:g}s; finalizers: {finalizers}"
            if key.kind == "Namespace":
                why += _namespace_conditions(live)
            result.stuck.append((key, why))
            _emit(reporter, "Stuck", pending[key], why)
    return result


def removal_order(members: Iterable[Member]) -> list[Member]:
    """The order :func:`remove` goes in: its phases (:func:`kfctl.plan.rules.delete_phase`), each by key."""
    return sorted(members, key=lambda m: (_phase(m), m.key))


def _phase(m: Member) -> int:
    return rules.delete_phase(m.key.group, m.key.kind, builtin_groups=BUILTIN_GROUPS)


@dataclass
class _Context:
    cluster: Cluster
    applyset_id: str
    reporter: Reporter
    options: RemoveOptions
    result: RemoveResult
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    deadline: float = 0.0
    resources: tuple[Resource, ...] | None = None  # namespaced kinds, discovered when a namespace is to go
    adopted_kept: list[Member] = field(default_factory=list)
    # Secrets the install's workloads name in their arguments (foreign.secrets_named_by), read as each is removed:
    # workloads go in an earlier phase than namespaces.
    named: set[ObjectKey] = field(default_factory=set)

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()``, retried with backoff while it fails transiently and the phase's deadline allows."""
        return retry_transient(
            fn, deadline=self.deadline, cap=5.0, clock=self.clock, sleep=self.sleep, give_up=_precondition_failed
        )

    def call_listing(self, fn: Callable[[], T]) -> T:
        """As ``call`` for a list of one kind, except that a kind not served (any more) is answered at once:
        retry's "not found yet" means nothing to a list, whose kind's CRD was deleted in an earlier phase."""
        return retry_transient(
            fn, deadline=self.deadline, cap=5.0, clock=self.clock, sleep=self.sleep, give_up=_kind_not_served
        )


def _released_by_us(live: Obj, applyset_id: str) -> bool:
    """Kept and released by an earlier delete of this install, and not taken by another ApplySet since."""
    own = meta_of(live).get("labels") or {}
    return labels.released_from(live) == applyset_id and labels.PART_OF not in own


def _kind_not_served(e: BaseException) -> bool:
    return isinstance(e, (NotFound, MethodNotAllowed))


def _precondition_failed(e: BaseException) -> bool:
    """A UID precondition that failed: the object was replaced by someone else's, which we must not delete."""
    return isinstance(e, PreconditionFailed)


def _failed(ctx: _Context, m: Member, why: str, *, denied: bool = False) -> None:
    ctx.result.failed.append((m.key, why))
    ctx.result.denied = ctx.result.denied or denied
    _emit(ctx.reporter, "Failed", m, why)


class _Unchecked(Exception):
    """A namespace of which some kind could not be listed. It may hold what kfctl did not apply, so it is not
    deleted; nor is it kept on purpose: the run fails (a kept namespace would exit 0 and stay Active unnoticed),
    the namespace stays this install's (not released, still in the inventory), and a re-run finishes the job."""

    def __init__(self, why: str, *, denied: bool) -> None:
        super().__init__(why)
        self.denied = denied


def _delete_one(ctx: _Context, m: Member) -> bool:
    """Issue the delete if every safety rule allows it; True when a delete was sent and must be awaited."""
    try:
        return _try_delete(ctx, m)
    except _Unchecked as e:
        _failed(ctx, m, f"{e}; not deleted, as it may hold objects kfctl did not apply; re-run", denied=e.denied)
        return False
    except (ApiError, Unreachable, NoKindMatch) as e:
        what = "cannot read it" if ctx.options.dry_run else "delete failed"
        _failed(ctx, m, f"{what}: {e}", denied=not isinstance(e, Transient))
        return False


def _try_delete(ctx: _Context, m: Member) -> bool:
    cluster, applyset_id, reporter, result = ctx.cluster, ctx.applyset_id, ctx.reporter, ctx.result
    key = m.key
    live = ctx.call(lambda: _get(cluster, key))
    if live is None:
        result.skipped.append((key, "already gone"))
        return False
    uid = str(meta_of(live).get("uid", ""))
    if (key.group, key.kind) in WORKLOAD_KINDS:
        ctx.named |= secrets_named_by(live)
    if not labels.owned_by(live, applyset_id) and not _released_by_us(live, applyset_id):
        result.skipped.append((key, "no longer carries our label; left alone"))
        _emit(reporter, "Skipped", m, "no longer carries our label; left alone")
        return False
    if m.uid and uid != m.uid:
        result.skipped.append((key, "was recreated by someone else (UID differs); left alone"))
        _emit(reporter, "Skipped", m, "UID differs from the one kfctl applied; left alone")
        return False
    keep = _protected(ctx, key, m, live)
    if keep:
        if ctx.options.release_kept and not ctx.options.dry_run and labels.owned_by(live, applyset_id):
            ctx.call(lambda: cluster.replace(labels.released(live, applyset_id)))
            result.released.append(key)
        result.kept.append((key, keep))
        _emit(reporter, "Kept", m, keep)
        return False
    if ctx.options.dry_run:
        result.planned.append(key)
        return False
    if meta_of(live).get("deletionTimestamp"):
        return True
    res = cluster.resource_for_key(key)
    try:
        ctx.call(lambda: cluster.delete(res.api_version, key.kind, namespace=key.namespace, name=key.name, uid=uid))
    except PreconditionFailed:  # replaced by someone else since we looked
        result.skipped.append((key, "was recreated by someone else (UID differs); left alone"))
        return False
    _emit(reporter, "Deleting", m)
    return True


def _protected(ctx: _Context, key: ObjectKey, m: Member, live: Obj) -> str:
    """Why this object must be kept ("" when it may go)."""
    cluster, options = ctx.cluster, ctx.options
    if m.adopted and not options.adopted:
        return f"adopted from {m.adopted} (kfctl did not create it); kept without {options.adopted_flag}"
    gk = (key.group, key.kind)
    if gk == ("", "Namespace"):
        if not options.namespaces:
            return "namespaces are kept without --prune-namespaces"
        holds = _holds_adopted(ctx, key, live)
        if holds:
            return f"holds {_adopted_kept(holds)}; kept without {options.adopted_flag}"
        if not options.storage:
            claims = ctx.call(lambda: cluster.list("v1", "PersistentVolumeClaim", namespace=key.name))
            if claims:
                return f"holds {len(claims)} PersistentVolumeClaim(s), kept without {options.storage_flag}"
        if not options.force_namespaces:
            if ctx.resources is None:
                ctx.resources = ctx.call(cluster.namespaced_resources)
            resources = ctx.resources
            contents = ctx.call(
                lambda: namespace_contents(
                    cluster,
                    key.name,
                    applyset_id=ctx.applyset_id,
                    resources=resources,
                    retry=ctx.call_listing,
                    named=frozenset(ctx.named),
                )
            )
            if contents.foreign:
                unchecked = f"; {contents.unchecked()}" if contents.unreadable else ""
                return f"{contents.describe()}{unchecked}; kept without {options.force_flag}"
            if contents.unreadable:
                raise _Unchecked(contents.unchecked(), denied=contents.denied)
    if gk == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        if not options.crds:
            return "CRDs are kept (deleting one deletes every object of its kind); use --prune-crds"
        holds = _holds_adopted(ctx, key, live)
        if holds:
            return f"is the kind of {_adopted_kept(holds)}; kept without {options.adopted_flag}"
        # Our custom resources went in an earlier phase; what is left of the kind is a user's (a notebook, an
        # experiment, an InferenceService) or another app's, and deleting the CRD would delete it everywhere.
        left = ctx.call(lambda: custom_resources_left(cluster, key.name, applyset_id=ctx.applyset_id))
        if left:
            names = ", ".join(str(k) for k in left[:SHOWN]) + (
                f" and {len(left) - SHOWN} more" if len(left) > SHOWN else ""
            )
            return (
                f"{len(left)} object(s) of its kind that kfctl did not apply still exist: {names}; deleting the CRD "
                "would delete them in every namespace, so delete them first and re-run"
            )
    if gk in rules.STORAGE_KINDS and not options.storage:
        return f"storage is kept without {options.storage_flag}"
    # A generated database password: deleting it while the data stays would lock the data away for good.
    claim = labels.protected_claim(live)
    if (
        claim
        and not options.storage
        and ctx.call(lambda: cluster.get("v1", "PersistentVolumeClaim", namespace=key.namespace, name=claim))
    ):
        return (
            f"holds the credentials of the data in PersistentVolumeClaim {key.namespace}/{claim}, which is kept; "
            f"kept without {options.storage_flag}"
        )
    return ""


def _holds_adopted(ctx: _Context, key: ObjectKey, live: Obj) -> list[ObjectKey]:
    """The kept adopted objects that deleting this Namespace or CRD would delete along with it."""
    if (key.group, key.kind) == ("", "Namespace"):
        return [a.key for a in ctx.adopted_kept if a.key.namespace == key.name]
    if (key.group, key.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        spec = live.get("spec") or {}
        group, kind = spec.get("group"), (spec.get("names") or {}).get("kind")
        return [a.key for a in ctx.adopted_kept if (a.key.group, a.key.kind) == (group, kind)]
    return []


def _adopted_kept(keys: list[ObjectKey]) -> str:
    names = ", ".join(str(k) for k in keys[:SHOWN]) + (f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else "")
    return f"{len(keys)} adopted object(s) that are kept ({names})"


def _namespace_conditions(live: Obj) -> str:
    conds = [c for c in (live.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    return "".join(f"; {c.get('type')}: {c.get('message', '')}" for c in conds)


def _get(cluster: Cluster, key: ObjectKey) -> Obj | None:
    try:
        res = cluster.resource_for_key(key)
    except NoKindMatch:
        return None  # its CRD is gone, and every object of the kind with it
    return cluster.get(res.api_version, key.kind, namespace=key.namespace, name=key.name)


def _emit(reporter: Reporter, kind: EventType, m: Member, message: str = "") -> None:
    # An object several applications render is each one's: a live view counts it under every one (also_in).
    reporter(Event(kind, str(m.key), message, app=m.application, also_in=m.also_in))
