"""`kfctl apply`: render, plan, check ownership, record the inventory, apply in dependency order, wait, prune.

Nothing is written before every bundle object that already exists has been read: an object another tool
manages (a Helm release, Argo CD, another kfctl install …) stops the run unless it is adopted, so kfctl
never silently takes over — and later deletes — what it did not install. Under the install's lock the run is
its phases (:func:`_phases`), as cli-utils' task runner has it: read → inventory add → apply and wait → prune →
inventory set, each handing its own result to the ones after it. That order is the crash-safety argument: old +
new is stored before anything is applied, and the inventory shrinks only after the prune that removed the rest
succeeded. A re-apply of an untouched platform makes no write request
at all: objects whose live state holds every field kfctl renders are skipped, and the inventory is written
only when it differs; a field someone changed is put back.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kfctl.app.bundle import Bundle, load_bundle
from kfctl.app.cluster import ClusterRecord, identify, install_locked, talking_to
from kfctl.app.generate import generate
from kfctl.app.per_application import ApplicationRow, application_rows
from kfctl.app.secrets import with_secret_values
from kfctl.catalog.model import Catalog
from kfctl.config.model import KfDef
from kfctl.engine import inventory, labels, ownership
from kfctl.engine.apply import ApplyOptions, ApplyResult, Engine
from kfctl.engine.events import Event, Reporter
from kfctl.engine.lease import Held
from kfctl.engine.remove import RemoveOptions, RemoveResult, remove
from kfctl.engine.retry import retry_transient
from kfctl.engine.served import refuse_unserved
from kfctl.errors import ApiDeniedError, HealthError, KfctlError, OwnershipError, PlanError
from kfctl.k8s.api import Cluster
from kfctl.k8s.errors import KubeError
from kfctl.objects import ObjectKey, meta_of
from kfctl.plan.critical import Segment, critical_path
from kfctl.plan.graph import Plan, application_id
from kfctl.plan.latency import Latency, queue_waits, scheduling_latencies, summarize
from kfctl.secrets.brought import check_brought
from kfctl.wording import counted

T = TypeVar("T")


@dataclass
class ApplySummary:
    objects: int = 0
    created: int = 0
    configured: int = 0
    corrected: int = 0
    adopted: int = 0
    recreated: int = 0  # deleted and created again (--recreate-immutable); the applications' rows count them configured
    unchanged: int = 0
    pruned: int = 0
    kept: list[str] = field(default_factory=list)
    inventory_writes: int = 0
    seconds: float = 0.0
    requests: dict[str, Any] = field(default_factory=dict)
    error: KfctlError | None = None
    applications: list[ApplicationRow] = field(default_factory=list)
    critical_path: list[Segment] = field(default_factory=list)
    scheduling: Latency | None = None  # last dependency ready → dependent applied (kfctl.plan.latency)
    shared: int = 0  # objects several applications render (or rendered, if pruned): under each in rows, once in totals

    @property
    def changed(self) -> bool:
        return bool(
            self.created
            or self.configured
            or self.corrected
            or self.adopted
            or self.recreated
            or self.pruned
            or self.inventory_writes
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "objects": self.objects,
            "created": self.created,
            "configured": self.configured,
            "corrected": self.corrected,
            "adopted": self.adopted,
            "recreated": self.recreated,
            "unchanged": self.unchanged,
            "pruned": self.pruned,
            "kept": self.kept,
            "inventoryWrites": self.inventory_writes,
            "seconds": round(self.seconds, 2),
            "requests": self.requests,
            "changed": self.changed,
            "ok": self.error is None,
            "applications": [a.as_dict() for a in self.applications],
            "criticalPath": [c.as_dict() for c in self.critical_path],
            "schedulingLatency": self.scheduling.as_dict() if self.scheduling else None,
            "shared": self.shared,
        }


def apply_kfdef(
    kfdef: KfDef,
    catalog: Catalog,
    *,
    open_cluster: Callable[[], Cluster],
    reporter: Reporter,
    options: ApplyOptions,
    prune: RemoveOptions | None,
    render: bool = True,
    adopt: bool = False,
    lock_timeout: float = 30.0,
) -> ApplySummary:
    """Install or update the platform; the summary carries the error (if any) for the CLI to raise."""
    start = time.monotonic()
    if render:
        generate(kfdef, catalog)
    bundle = load_bundle(kfdef, catalog, keep_parsed=True)
    plan = bundle.plan()
    cluster = open_cluster()
    cluster_id = identify(cluster)
    with talking_to(cluster, "checking that the cluster serves the bundle's apiVersions"):
        refuse_unserved(cluster, bundle.objects())
    with talking_to(cluster, "checking the target namespaces"):
        _preflight_namespaces(cluster, bundle)
    with talking_to(cluster, "checking the Secrets the KfDef brings"):
        check_brought(cluster, bundle.secrets)
    persist = _Persist(cluster, reporter, deadline=time.monotonic() + options.wait_timeout)
    first_scan: ownership.Scan | None = None
    with talking_to(cluster, "checking what exists of the bundle"):
        if persist(lambda: cluster.get("v1", "Namespace", namespace="", name=kfdef.namespace)) is None:
            # A first install: the lock's namespace is to be made, so check ownership before making it.
            first_scan = persist(lambda: _scan(cluster, bundle, None))
            _adoption(first_scan, kfdef, adopt_all=adopt)
            persist(lambda: _ensure_inventory_namespace(cluster, bundle))
            first_scan.live.pop(ObjectKey("", "Namespace", "", kfdef.namespace), None)  # made since: read it
    with install_locked(cluster, kfdef, command="apply", wait=lock_timeout, reporter=reporter) as lock:
        run = _Run(
            kfdef,
            plan,
            cluster,
            cluster_id,
            reporter,
            persist,
            lock=lock,
            options=options,
            prune=prune,
            adopt=adopt,
            start=start,
            first_scan=first_scan,
        )
        return _phases(run, bundle)


@dataclass(frozen=True)
class _Run:
    """One apply under the install's lock: what every phase reads, set before the first. Each phase returns
    what it found or did as its own type, which the phases after it take.

    ``first_scan``: what a first install read before taking the lock. It still holds when no inventory exists
    under the lock: every run records its inventory before it applies anything, so no run of this install
    applied anything since; reading it all again would only cost the requests (about 50 on the full catalog)."""

    kfdef: KfDef
    plan: Plan
    cluster: Cluster
    cluster_id: str
    reporter: Reporter
    persist: _Persist
    lock: Held | None
    options: ApplyOptions
    prune: RemoveOptions | None
    adopt: bool
    start: float
    first_scan: ownership.Scan | None = None

    @property
    def where(self) -> str:
        return f"{self.kfdef.namespace}/{inventory.parent_name(self.kfdef.name)}"

    def check_lock(self, before: str) -> None:
        if self.lock is not None:
            self.lock.check(before)


@dataclass(frozen=True)
class _Found:
    """What :func:`_read` found."""

    bundle: Bundle  # with the generated Secrets' values
    old: inventory.Inventory | None  # the inventory as the run found it
    found: ownership.Scan  # what exists of the bundle
    adopting: dict[ObjectKey, str]  # foreign objects taken over, with their owner


@dataclass(frozen=True)
class _Recorded:
    """What :func:`_record_old_and_new` wrote."""

    merged: inventory.Inventory  # old and new: what the cluster records while applying
    writes: int  # inventory writes (0 or 1)


@dataclass(frozen=True)
class _Applied:
    """What :func:`_apply_and_wait` did."""

    result: ApplyResult
    since_start: float  # when the engine started, from the command's start
    final: inventory.Inventory  # what the inventory is to record: every wanted object, with the UID it got


@dataclass(frozen=True)
class _Pruned:
    """What :func:`_prune` removed, and what the inventory records at the end."""

    final: inventory.Inventory
    removed: RemoveResult | None  # None: no prune (a failed apply, or --no-prune)


def _phases(run: _Run, bundle: Bundle) -> ApplySummary:
    """The run under the install's lock, in order: read → inventory add → apply and wait → prune → inventory set.
    The order is the crash-safety argument: the inventory records old and new before anything is applied, and
    shrinks only after the prune that removed the rest succeeded, so a run stopped anywhere (a crash, Ctrl-C, a
    lost lock) leaves an inventory that covers everything it applied."""
    found = _read(run, bundle)
    recorded = _record_old_and_new(run, found)
    applied = _apply_and_wait(run, found, recorded)
    pruned = _prune(run, found, recorded, applied)
    writes = _record_final(run, found, recorded, pruned)
    return _summarize(run, recorded, applied, pruned, inventory_writes=recorded.writes + writes)


def _read(run: _Run, bundle: Bundle) -> _Found:
    """The inventory, what exists of the bundle and who owns it (stop unless adopted), the generated Secrets."""
    cluster, kfdef, persist = run.cluster, run.kfdef, run.persist
    with talking_to(cluster, f"reading the inventory {run.where} and what exists of the bundle"):
        old = persist(lambda: inventory.read(cluster, name=bundle.inventory_name, namespace=kfdef.namespace))
        if old is None and run.first_scan is not None:
            found = run.first_scan
        else:
            found = persist(lambda: _scan(cluster, bundle, old))
    adopting = _adoption(found, kfdef, adopt_all=run.adopt)
    _refuse_pruning_externals(old, kfdef)
    with talking_to(cluster, "reading the generated Secrets"):
        # Under the lock: two runs must not draw two passwords. In memory only, never in a file.
        with_values = persist(lambda: with_secret_values(cluster, bundle, run.reporter, known=found.live))
    return _Found(with_values, old, found, adopting)


def _record_old_and_new(run: _Run, found: _Found) -> _Recorded:
    """Inventory add: old and new are recorded before anything is applied, so a crash never loses track."""
    cluster, bundle, writes = run.cluster, found.bundle, 0
    with talking_to(cluster, f"recording the inventory {run.where} before applying"):
        run.persist(lambda: _ensure_inventory_namespace(cluster, bundle))
        current = found.old or inventory.Inventory(bundle.inventory_name, run.kfdef.namespace, run.cluster_id)
        current.cluster_id = current.cluster_id or run.cluster_id
        merged = current.merged(bundle.members(), adopted=found.adopting, also_in=bundle.also_in())
        if run.persist(lambda: inventory.write(cluster, merged, previous=found.old)):
            writes += 1
            note(
                run.reporter,
                f"{run.where}: {counted(len(merged.members), 'object')} recorded (old and new) before applying",
            )
    ClusterRecord(run.cluster_id, cluster.info.server, cluster.info.context).save(run.kfdef.app_dir)
    return _Recorded(merged, writes)


def _apply_and_wait(run: _Run, found: _Found, recorded: _Recorded) -> _Applied:
    """Apply in dependency order and wait until healthy (:mod:`kfctl.engine.apply`); the inventory to come holds
    every wanted object with the UID it got."""
    scan = found.found
    known = {**scan.live, **{f.key: f.live for f in scan.foreign}}
    announce(run.reporter, run.plan)
    engine = Engine(
        run.cluster,
        run.reporter,
        options=run.options,
        prepare=found.bundle.prepare,
        known=known,
        adopting=found.adopting,
    )
    since_start = time.monotonic() - run.start  # the engine counts from its own start; the table from the command's
    result = engine.run(run.plan)
    merged, shared = recorded.merged, found.bundle.also_in()
    final = inventory.Inventory(merged.name, merged.namespace, merged.cluster_id)
    for key, app in found.bundle.members():
        was = merged.members.get(key)
        uid = result.uids.get(key) or (was.uid if was else "")
        final.members[key] = inventory.Member(key, app, uid, was.adopted if was else "", shared.get(key, ()))
    return _Applied(result, since_start, final)


def _prune(run: _Run, found: _Found, recorded: _Recorded, applied: _Applied) -> _Pruned:
    """After a successful apply, remove what the KfDef no longer renders; what stays (kept, stuck, failed, or
    not pruned at all) stays recorded, so a later run can remove it."""
    merged = recorded.merged
    final = inventory.Inventory(applied.final.name, applied.final.namespace, applied.final.cluster_id)
    final.members.update(applied.final.members)
    if not (applied.result.ok and run.prune is not None):
        for key, m in merged.members.items():
            final.members.setdefault(key, m)
        return _Pruned(final, None)
    wanted = dict(found.bundle.members())
    gone = [m for k, m in merged.members.items() if k not in wanted]
    # A namespace dropped from the bundle while objects still wanted live in it must stay: deleting it
    # would delete them.
    still_used = {k.namespace for k in wanted if k.namespace}
    held = [m for m in gone if (m.key.group, m.key.kind) == ("", "Namespace") and m.key.name in still_used]
    gone = [m for m in gone if m not in held]
    run.check_lock("pruning")
    with talking_to(run.cluster, "pruning"):
        removed = remove(
            run.cluster,
            gone,
            applyset_id=found.bundle.applyset_id,
            reporter=run.reporter,
            options=run.prune,
            verb="Pruned",
        )
    for m in held:
        why = "still holds objects this KfDef applies; kept"
        removed.kept.append((m.key, why))
        run.reporter(Event("Kept", str(m.key), why, app=m.application))
    for key, _ in removed.kept + removed.stuck + removed.failed:
        final.members[key] = merged.members[key]
    return _Pruned(final, removed)


def _record_final(run: _Run, found: _Found, recorded: _Recorded, pruned: _Pruned) -> int:
    """Inventory set: it shrinks only now, after the prune that removed the rest succeeded. The writes (0 or 1)."""
    run.persist.deadline = time.monotonic() + run.options.wait_timeout
    previous = _after(recorded.merged, found.old)
    final = pruned.final
    run.check_lock("recording the inventory")
    with talking_to(run.cluster, f"recording the inventory {run.where} after applying"):
        if run.persist(lambda: inventory.write(run.cluster, final, previous=previous)):
            note(run.reporter, f"{run.where}: {counted(len(final.members), 'object')} recorded")
            return 1
    return 0


def _summarize(
    run: _Run, recorded: _Recorded, applied: _Applied, pruned: _Pruned, *, inventory_writes: int
) -> ApplySummary:
    plan, result, merged, removed = run.plan, applied.result, recorded.merged, pruned.removed
    gone = [merged.members[k] for k in (removed.removed if removed else []) if k in merged.members]
    # A pruned object several applications rendered (the inventory's alsoIn) counts under each, as an applied one.
    pruned_by_app = Counter(app for m in gone for app in (m.application, *m.also_in))
    return ApplySummary(
        objects=len(plan.objects()),
        created=len(result.created),
        configured=len(result.configured),
        corrected=len(result.corrected),
        adopted=len(result.adopted),
        recreated=len(result.recreated),
        unchanged=len(result.unchanged),
        pruned=len(removed.removed) if removed else 0,
        kept=[f"{k}: {why}" for k, why in removed.kept] if removed else [],
        inventory_writes=inventory_writes,
        applications=application_rows(plan, result, pruned_by_app, offset=applied.since_start),
        shared=sum(1 for step in plan.objects() if step.id in plan.copies) + sum(1 for m in gone if m.also_in),
        critical_path=critical_path(plan, result.ready_at),
        scheduling=summarize(
            scheduling_latencies(plan, result.ready_at, result.applied_at),
            plan=plan,
            queued=queue_waits(plan, result.ready_at, result.applied_at, result.started_at),
        ),
        error=_error(result, removed),
        seconds=time.monotonic() - run.start,
        requests=run.cluster.stats.as_dict(),
    )


def announce(reporter: Reporter, plan: Plan) -> None:
    """One Planned event per application, in the KfDef's order: how many objects, after which applications —
    what a live view needs before the first object is applied."""
    sizes = plan.sizes()  # a shared object counts under each application that renders it
    for app in plan.applications:
        after = f"; after {', '.join(app.depends_on)}" if app.depends_on else ""
        message = f"{counted(sizes[app.name], 'object')}{after}"
        reporter(Event("Planned", application_id(app.name), message, app=app.name, count=sizes[app.name]))


class _Persist:
    """Runs an inventory read or write, retrying transient failures (a restarting API server) until the
    deadline: the inventory is what makes a later run safe, so it is worth waiting for."""

    def __init__(self, cluster: Cluster, reporter: Reporter, *, deadline: float) -> None:
        self.cluster = cluster
        self.reporter = reporter
        self.deadline = deadline

    def __call__(self, fn: Callable[[], T]) -> T:
        def note(e: KubeError, delay: float) -> None:
            self.reporter(Event("Retrying", "inventory", f"{e.explanation} (retrying in {delay:.1f}s)"))

        return retry_transient(fn, deadline=self.deadline, on_retry=note)


def _after(merged: inventory.Inventory, old: inventory.Inventory | None) -> inventory.Inventory | None:
    """What the cluster holds now: ``merged`` if it was written, else ``old``."""
    return merged if not merged.same_as(old) else old


def _refuse_pruning_externals(old: inventory.Inventory | None, kfdef: KfDef) -> None:
    """An application this install applied, now marked external: pruning it would remove what the KfDef says
    the cluster provides (its CRDs and namespace kept, its controllers gone), so refuse instead."""
    externals = {a.name for a in kfdef.applications if a.enabled and a.external}
    counts = Counter(m.application for m in (old.members.values() if old else ()) if m.application in externals)
    if not counts:
        return
    recorded = ", ".join(f"{app}: {counted(n, 'object')}" for app, n in sorted(counts.items()))
    raise OwnershipError(
        f"{', '.join(sorted(counts))}: marked external: true, but this install applied it "
        f"({recorded} in its inventory); kfctl "
        "would prune what the KfDef says the cluster provides; nothing was written",
        hint=(
            "to keep kfctl managing it, drop external: true; to hand it over, first remove the application from "
            "the KfDef and apply (kfctl removes it), install it your way, then add it back with external: true"
        ),
    )


def _scan(cluster: Cluster, bundle: Bundle, recorded: inventory.Inventory | None) -> ownership.Scan:
    return ownership.scan(cluster, bundle.objects(), applyset_id=bundle.applyset_id, inventory=recorded)


def _adoption(found: ownership.Scan, kfdef: KfDef, *, adopt_all: bool) -> dict[ObjectKey, str]:
    """The foreign objects to take over, with who managed them; OwnershipError when any is not to be."""
    adopt_apps = {a.name for a in kfdef.applications if a.adopt}
    refused = [f for f in found.foreign if not (adopt_all or f.application in adopt_apps)]
    if refused:
        owners = sorted({f.owner.description for f in refused})
        engines = sorted({f.owner.engine for f in refused if f.owner.engine})
        raise OwnershipError(
            f"{len(refused)} object(s) the KfDef would install exist already under another owner "
            f"({'; '.join(owners[:3])}{' …' if len(owners) > 3 else ''}); nothing was written",
            details=[f.describe() for f in refused],
            hint=_gitops_hint(engines) if engines else _ADOPT_HINT,
        )
    adopting = {f.key: f.owner.description for f in found.foreign}
    adopting.update({f.key: f"the cluster (it existed before kfctl; {f.owner.description})" for f in found.shared})
    return adopting


_ADOPT_HINT = (
    "if the cluster already provides an application, mark it `external: true` in the KfDef: kfctl then checks it "
    "instead of installing it; to take the objects over, re-run with --adopt (or set `adopt: true` on the "
    "application): delete and prune keep adopted objects unless --delete-adopted / --prune-adopted"
)
_HAND_OVER = {
    "Argo CD": "Argo CD: delete its Application without cascading",
    "Flux": "Flux: set prune: false on its Kustomization, then delete it",
}


def _gitops_hint(engines: list[str]) -> str:
    """For objects a GitOps engine reconciles: kfctl must not fight it, so say where changes go instead, and how
    an application is handed over (the engine lets go of it first; kfctl then adopts what is left)."""
    return (
        f"a GitOps engine ({' and '.join(engines)}) reconciles these objects from git: change them there (kfctl "
        "generate, kfctl export, commit) rather than with kfctl apply, as --adopt would have both keep writing "
        "them. To hand an application over to kfctl, first remove it from the engine without deleting its objects "
        f"({'; '.join(_HAND_OVER[e] for e in engines)}), then kfctl apply --adopt"
    )


def _preflight_namespaces(cluster: Cluster, bundle: Bundle) -> None:
    """Namespaces objects go into that no application creates must exist already and not be terminating."""
    keys = [k for k, _ in bundle.members()]
    created = {k.name for k in keys if (k.group, k.kind) == ("", "Namespace")}
    problems = []
    for ns in sorted({k.namespace for k in keys if k.namespace} - created):
        live = cluster.get("v1", "Namespace", namespace="", name=ns)
        if live is None:
            problems.append(f"namespace {ns} does not exist and no application creates it")
        elif (live.get("status") or {}).get("phase") == "Terminating":
            problems.append(f"namespace {ns} is being terminated")
    if problems:
        raise PlanError(
            "objects target namespaces that are not available",
            details=problems,
            hint="create the namespace, or add an application that creates it",
        )


def _ensure_inventory_namespace(cluster: Cluster, bundle: Bundle) -> None:
    """The inventory must be written before anything else, so its namespace may have to come first."""
    ns = bundle.kfdef.namespace
    if cluster.get("v1", "Namespace", namespace="", name=ns) is not None:
        return
    for app, objs in bundle.objects_by_app:
        for obj in objs:
            if obj.get("kind") == "Namespace" and meta_of(obj).get("name") == ns:
                cluster.apply(
                    labels.prepare(obj, applyset_id=bundle.applyset_id, kfdef_name=bundle.kfdef.name, application=app)
                )
                return
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})


def _error(result: ApplyResult, removed: RemoveResult | None) -> KfctlError | None:
    if result.failed or result.blocked:
        details = []
        for f in result.failed:
            details.append(" ← ".join(f.chain) if f.chain else f"{f.subject}: {f.message}")
        if result.blocked:
            details.append(f"blocked behind them ({len(result.blocked)}):")
            details += [f"  {b.subject}" for b in result.blocked[:30]]
            if len(result.blocked) > 30:
                details.append(f"  … and {len(result.blocked) - 30} more")
        n = len(result.failed)
        if any(f.denied for f in result.failed):
            return ApiDeniedError(
                f"the API server rejected {n} object(s)",
                details=details,
                hint="fix the object (the message quotes the server); retrying will not help",
            )
        return HealthError(
            f"{n} object(s) did not become healthy" + (f"; {len(result.blocked)} blocked" if result.blocked else ""),
            details=details,
            hint="fix the root cause shown after the last ←, then re-run kfctl apply (it resumes)",
        )
    if removed is not None and not removed.ok:
        details = [f"{k}: {why}" for k, why in removed.stuck + removed.failed]
        if removed.denied:
            return ApiDeniedError(
                "the API server refused part of the prune",
                details=details,
                hint="the objects named stay recorded in the inventory; fix the permission, then re-run",
            )
        return HealthError("prune did not finish", details=details, hint="remove the finalizers' owners, then re-run")
    return None


def note(reporter: Reporter, message: str) -> None:
    reporter(Event("Inventory", "inventory", message))
