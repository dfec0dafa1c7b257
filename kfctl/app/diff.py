"""`kfctl diff`: what apply would change — a server-side dry run of each object against the live one.

An upgrade (a new release of a repo, new paths) changes hundreds of objects at once, so the report leads with
a summary per application: objects added, changed, removed, and those whose change the API server refuses
as immutable (a Deployment's selector, a Service's clusterIP …), which apply recreates only when told to
(``--recreate-immutable``). Objects the new render no longer holds are listed as removed, with the flag
apply needs to delete a kind it keeps by default (Namespaces, CRDs, storage, adopted objects).

Secrets' values are masked (a short digest shows whether a value changed without revealing it); the Secrets
kfctl generates show their keys only, "generated" or "present". Fields the
server owns (managedFields, resourceVersion, status …) and kfctl's content-hash annotation are left
out of the comparison, so only changes the user made show.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import jsonpatch

from kfctl.app.bundle import Bundle, load_bundle
from kfctl.app.cluster import identify, talking_to
from kfctl.app.generate import rendered_privately
from kfctl.catalog.model import Catalog
from kfctl.config.model import KfDef
from kfctl.engine import inventory, labels
from kfctl.engine.drift import comparable, corrected_fields, differences
from kfctl.engine.served import refuse_unserved
from kfctl.errors import ApiDeniedError, ClusterError
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch
from kfctl.k8s.errors import Immutable, Transient
from kfctl.objects import Obj
from kfctl.plan import rules
from kfctl.plan.graph import Plan, PlannedObject
from kfctl.secrets.brought import check_brought
from kfctl.secrets.values import read_values

ACTIONS = ("create", "update", "prune", "recreate")


@dataclass(frozen=True)
class ObjectDiff:
    subject: str
    action: str  # one of ACTIONS; recreate: an immutable field changes (apply needs --recreate-immutable)
    application: str
    patch: list[dict[str, Any]] = field(default_factory=list)
    immutable: tuple[str, ...] = ()  # the refused fields, for recreate
    reason: str = ""  # recreate: the API server's words; prune: why apply keeps it by default ("" if not)
    also_in: tuple[str, ...] = ()  # later applications that render it too (applied once, under ``application``)

    @property
    def applications(self) -> tuple[str, ...]:
        return (self.application, *self.also_in)


@dataclass
class DiffReport:
    diffs: list[ObjectDiff] = field(default_factory=list)
    unchanged: int = 0
    unchanged_by_app: dict[str, int] = field(default_factory=dict)
    shared: int = 0  # objects several applications render: counted under each in the summary, once in the totals

    def summary(self) -> dict[str, dict[str, int]]:
        """Application → count per action, plus unchanged; every application of the bundle or the inventory.
        An object several applications render counts under each of them."""
        out: dict[str, dict[str, int]] = {}
        for app in sorted({*self.unchanged_by_app, *(a for d in self.diffs for a in d.applications)}):
            out[app] = {a: 0 for a in ACTIONS} | {"unchanged": self.unchanged_by_app.get(app, 0)}
        for d in self.diffs:
            for app in d.applications:
                out[app][d.action] += 1
        return out

    def totals(self) -> dict[str, int]:
        """Count per action, plus unchanged, over the objects: a shared one once."""
        out = {a: 0 for a in ACTIONS} | {"unchanged": self.unchanged}
        for d in self.diffs:
            out[d.action] += 1
        return out

    def as_dict(self) -> dict[str, Any]:
        changes = []
        for d in self.diffs:
            change: dict[str, Any] = {"object": d.subject, "application": d.application, "action": d.action}
            change["patch"] = d.patch
            if d.action == "recreate":
                change["immutable"] = list(d.immutable)
            if d.reason:
                change["reason"] = d.reason
            if d.also_in:
                change["alsoIn"] = list(d.also_in)
            changes.append(change)
        return {"summary": self.summary(), "changes": changes, "unchanged": self.unchanged, "shared": self.shared}


def against_cluster(
    kfdef: KfDef, catalog: Catalog, *, open_cluster: Callable[[], Cluster], render: bool
) -> tuple[Bundle, Plan, Cluster]:
    """What diff and apply --dry-run compare: the rendered bundle (rendered first unless told not to), its plan,
    and the target cluster, identified."""
    if render:
        with rendered_privately(kfdef, catalog) as rendered:  # diff writes nothing into APPDIR
            bundle = load_bundle(kfdef, catalog, rendered=rendered)
    else:
        bundle = load_bundle(kfdef, catalog)
    cluster = open_cluster()
    identify(cluster)
    with talking_to(cluster, "checking that the cluster serves the bundle's apiVersions"):
        refuse_unserved(cluster, bundle.objects())
    with talking_to(cluster, "checking the Secrets the KfDef brings and reading the generated ones"):
        check_brought(cluster, bundle.secrets)
        # A missing key is drawn only for the dry run, which stores nothing: apply draws its own.
        bundle = bundle.with_secret_values(read_values(cluster, bundle.secrets))
    return bundle, bundle.plan(), cluster


def diff_kfdef(
    kfdef: KfDef, catalog: Catalog, *, open_cluster: Callable[[], Cluster], render: bool = True
) -> DiffReport:
    bundle, plan, cluster = against_cluster(kfdef, catalog, open_cluster=open_cluster, render=render)

    def one(step: PlannedObject) -> ObjectDiff | None:
        try:
            return compare(cluster, bundle, step)
        except ApiError as e:
            if isinstance(e, Transient):  # a webhook not answering yet, a throttled or restarting server
                raise ClusterError(
                    f"{step.id}: the server-side dry run could not run: {e.explanation}",
                    hint="re-run kfctl diff when the API server and the platform's webhooks answer (kfctl status)",
                ) from e
            raise ApiDeniedError(f"{step.id}: the server-side dry run was rejected: {e.explanation}") from e

    steps = sorted(plan.objects(), key=lambda s: s.id)
    with talking_to(cluster, "comparing with the live objects"), ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, steps))
    report = DiffReport()
    for step, r in zip(steps, results, strict=True):
        apps = plan.applications_of(step.id)  # a shared object is each of its applications' (plan.copies)
        report.shared += int(len(apps) > 1)
        if r is None:
            report.unchanged += 1
            for app in apps:
                report.unchanged_by_app[app] = report.unchanged_by_app.get(app, 0) + 1
        else:
            report.diffs.append(replace(r, also_in=apps[1:]))
    with talking_to(cluster, "reading the inventory"):
        inv = inventory.read(cluster, name=bundle.inventory_name, namespace=kfdef.namespace)
    gone = removed(bundle, inv)
    report.shared += sum(1 for d in gone if d.also_in)
    report.diffs += gone
    return report


def compare(
    cluster: Cluster, bundle: Bundle, step: PlannedObject, *, dry_run_create: bool = False
) -> ObjectDiff | None:
    """What applying the step's object would do (None: nothing, as apply skips it), from a server-side dry run
    of the update. A new object is sent as a dry run too when ``dry_run_create`` (its admission webhooks judge
    it), unless its kind is not served yet (its CRD comes with this apply). Raises the API server's refusal:
    an immutable field comes back as a recreate."""
    desired = bundle.prepare(step)
    try:
        res = cluster.resource(str(desired["apiVersion"]), step.key.kind)
    except NoKindMatch:
        return ObjectDiff(step.id, "create", step.app, reason="not sent: its kind is served once its CRD is applied")
    live = cluster.get(res.api_version, step.key.kind, namespace=step.key.namespace, name=step.key.name)
    if live is None:
        if dry_run_create:
            cluster.apply(desired, dry_run=True)
        return ObjectDiff(step.id, "create", step.app)
    unchanged_render = labels.applied_hash(live) == labels.desired_hash(desired)
    if unchanged_render and not differences(desired, live):
        # What apply skips (kfctl.engine.work): a dry run would "change" fields another manager fills
        # after every apply, e.g. the rules of an aggregated ClusterRole that kfctl renders empty.
        return None
    try:
        after = cluster.apply(desired, dry_run=True)
    except Immutable as e:
        return ObjectDiff(step.id, "recreate", step.app, immutable=e.fields, reason=e.explanation)
    if unchanged_render and not corrected_fields(desired, live, after):
        # The render is the one applied and none of kfctl's fields would go back: apply skips it too (an
        # empty caBundle kfctl renders and cert-manager's cainjector fills reads as a difference, not a change).
        return None
    patch = jsonpatch.make_patch(comparable(live), comparable(after)).patch
    if step.key in bundle.generated_keys:
        patch = _keys_only(patch, live)
    return ObjectDiff(step.id, "update", step.app, patch) if patch else None


def _keys_only(patch: list[dict[str, Any]], live: Obj) -> list[dict[str, Any]]:
    """A generated Secret's changes name its keys, "generated" (drawn by this apply) or "present" (the
    cluster's value, kept): not even a digest of a value, which a short one could help guess."""
    have = set(live.get("data") or {})
    out = []
    for op in patch:
        path = str(op.get("path", ""))
        if path.startswith("/data/") and "value" in op:
            op = {**op, "value": "present" if path.removeprefix("/data/") in have else "generated"}
        out.append(op)
    return out


def removed(bundle: Bundle, inv: inventory.Inventory | None) -> list[ObjectDiff]:
    """What the inventory records and the bundle no longer holds: apply prunes it (or keeps it without a flag)."""
    if inv is None:
        return []
    wanted = {k for k, _ in bundle.members()}
    return [
        ObjectDiff(
            str(key),
            "prune",
            inv.members[key].application,
            reason=_kept_without(inv.members[key]),
            also_in=inv.members[key].also_in,
        )
        for key in sorted(set(inv.members) - wanted)
    ]


def _kept_without(member: inventory.Member) -> str:
    """The flag without which apply keeps this object rather than pruning it (see kfctl.engine.remove)."""
    gk = (member.key.group, member.key.kind)
    if member.adopted:
        return f"adopted from {member.adopted}: apply keeps it without --prune-adopted"
    if gk == ("", "Namespace"):
        return "apply keeps namespaces without --prune-namespaces"
    if gk == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        return "apply keeps CRDs without --prune-crds"
    if gk in rules.STORAGE_KINDS:
        return "apply keeps storage without --prune-storage"
    return ""
