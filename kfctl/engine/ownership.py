"""Who owns each object a bundle is about to apply: this install, nobody yet, or someone else.

Before its first write, apply reads every bundle object that already exists. An object is this install's
when it carries the install's ApplySet label (only kfctl sets it) or the inventory recorded it with the same
UID (someone stripped the label); those come back whole, for the engine's drift check. Anything else is
*foreign*, described by who manages it — a Helm release, an Argo CD application, a Flux Kustomization or
HelmRelease, a kapp app, another kfctl install or ApplySet, a controlling owner, else its field managers —
and stops the run unless the user adopts it (Helm and kapp refuse the same way). A Namespace that carries no
one's marks is shared as it always was, but recorded as adopted: kfctl did not create it, so it does not
delete it by default.

Reads cost one labelled LIST per kind (our objects, whole) and, only for bundle objects not found in it, one
metadata-only LIST per kind (across namespaces, or per namespace where the user may not list everywhere). A kind
the inventory records no member of starts with the metadata LIST instead: apply records an object in the
inventory before it first writes it, so such a kind holds nothing of ours (a first install: one LIST per kind,
not two), and the labelled LIST follows only if that list shows our label after all (an inventory deleted by
hand); the metadata list already read serves what the labelled one does not find. This module only reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kfctl.engine import drift, labels
from kfctl.engine.inventory import Inventory
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch, Resource
from kfctl.objects import Obj, ObjectKey, key_of, meta_of

HELM_RELEASE = "meta.helm.sh/release-name"
HELM_NAMESPACE = "meta.helm.sh/release-namespace"
MANAGED_BY = "app.kubernetes.io/managed-by"
ARGOCD_TRACKING = "argocd.argoproj.io/tracking-id"  # <app>:<group>/<kind>:<namespace>/<name>
ARGOCD_LABEL = "app.kubernetes.io/instance"  # Argo CD's label tracking (its default before v3)
ARGOCD_CUSTOM_LABEL = "argocd.argoproj.io/instance"  # the custom tracking label its docs suggest
FLUX_OWNERS = (
    ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace", "Flux Kustomization"),
    ("helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace", "Flux HelmRelease"),
)
KAPP_APP = "kapp.k14s.io/app"
NOT_ALLOWED = (401, 403, 405)


@dataclass(frozen=True)
class Owner:
    """Who manages a foreign object, in words, and whether that is a tool's mark (not just field managers)."""

    description: str
    marked: bool
    # The GitOps engine that reconciles the object from git ("Flux", "Argo CD"), "" for any other owner: applying
    # or adopting its objects would have kfctl and the engine keep writing them, so the refusal says so.
    engine: str = ""


@dataclass(frozen=True)
class ForeignObject:
    key: ObjectKey
    application: str  # the bundle's application that renders it
    owner: Owner
    uid: str
    live: Obj = field(default_factory=dict, compare=False, repr=False)  # its metadata, as read

    def describe(self) -> str:
        return f"{self.key} ({self.application}): {self.owner.description}"


@dataclass
class Scan:
    """What exists of the bundle. ``live`` is exact for every key it holds: this install's object (whole), or
    None when nothing exists; a key it lacks (its kind could not be listed) must be read before applying."""

    live: dict[ObjectKey, Obj | None] = field(default_factory=dict)
    foreign: list[ForeignObject] = field(default_factory=list)  # stop the run unless adopted
    shared: list[ForeignObject] = field(default_factory=list)  # plain namespaces: applied, recorded as adopted


def owner_of(obj: Mapping[str, Any]) -> Owner:
    """Who manages ``obj``, from the marks each tool leaves on what it installs."""
    meta = meta_of(obj)
    tags: Mapping[str, str] = meta.get("labels") or {}
    notes: Mapping[str, str] = meta.get("annotations") or {}
    if notes.get(HELM_RELEASE) or tags.get(MANAGED_BY) == "Helm":
        release = notes.get(HELM_RELEASE, "?")
        where = f"{notes[HELM_NAMESPACE]}/" if notes.get(HELM_NAMESPACE) else ""
        return Owner(f"Helm release {where}{release}", True)
    if notes.get(ARGOCD_TRACKING):
        return Owner(f"Argo CD application {str(notes[ARGOCD_TRACKING]).split(':', 1)[0]}", True, "Argo CD")
    if tags.get(ARGOCD_CUSTOM_LABEL):
        return Owner(f"Argo CD application {tags[ARGOCD_CUSTOM_LABEL]}", True, "Argo CD")
    for name_label, ns_label, what in FLUX_OWNERS:
        if tags.get(name_label):
            where = f"{tags[ns_label]}/" if tags.get(ns_label) else ""
            return Owner(f"{what} {where}{tags[name_label]}", True, "Flux")
    if tags.get(KAPP_APP):
        return Owner(f"kapp app ({KAPP_APP}={tags[KAPP_APP]})", True)
    if tags.get(labels.PART_OF):
        if tags.get(labels.APP_LABEL):
            return Owner(f"kfctl install {tags[labels.APP_LABEL]} (ApplySet {tags[labels.PART_OF]})", True)
        return Owner(f"ApplySet {tags[labels.PART_OF]}", True)
    if tags.get(ARGOCD_LABEL):
        # Argo CD's label tracking (its default before v3) — but most Helm charts and plain manifests set this
        # label too, so it is named, not taken as a tool's mark: a Namespace carrying only it is shared.
        return Owner(f"Argo CD application or chart instance {tags[ARGOCD_LABEL]} (label {ARGOCD_LABEL})", False)
    controller = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
    if controller is not None:
        return Owner(f"controlled by {controller.get('kind')} {controller.get('name')}", True)
    managers = list(dict.fromkeys(str(f.get("manager", "?")) for f in meta.get("managedFields") or []))
    if managers:
        return Owner(f"field managers: {', '.join(managers)}", False)
    return Owner("no owner recorded", False)


def scan(
    cluster: Cluster,
    objects: Iterable[tuple[str, Obj]],
    *,
    applyset_id: str,
    inventory: Inventory | None,
    workers: int = 8,
) -> Scan:
    """Read what exists of ``objects`` (application, object) and sort it into ours, absent and foreign."""
    kinds: dict[tuple[str, str], list[tuple[ObjectKey, str, Obj]]] = {}
    for app, obj in objects:
        key = key_of(obj)
        kinds.setdefault((key.group, key.kind), []).append((key, app, obj))
    recorded = {k: m.uid for k, m in (inventory.members.items() if inventory else ()) if m.uid}
    recorded_kinds = frozenset((k.group, k.kind) for k in (inventory.members if inventory else ()))
    result = Scan()

    def one(members: Sequence[tuple[ObjectKey, str, Obj]]) -> Scan:
        first = members[0][0]
        return _scan_kind(
            cluster,
            members,
            applyset_id=applyset_id,
            recorded=recorded,
            maybe_ours=(first.group, first.kind) in recorded_kinds,
        )

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kfctl-scan") as pool:
        for part in pool.map(one, kinds.values()):
            result.live.update(part.live)
            result.foreign += part.foreign
            result.shared += part.shared
    result.foreign.sort(key=lambda f: (f.owner.description, f.key))
    result.shared.sort(key=lambda f: f.key)
    return result


def _scan_kind(
    cluster: Cluster,
    members: Sequence[tuple[ObjectKey, str, Obj]],
    *,
    applyset_id: str,
    recorded: Mapping[ObjectKey, str],
    maybe_ours: bool = True,
) -> Scan:
    """``maybe_ours``: the inventory records objects of this kind. Without any, the metadata list alone sorts the
    members, unless it shows our label on one of them."""
    out = Scan()
    first = members[0][0]
    res = _resource(cluster, str(members[0][2].get("apiVersion", "")), first)
    if res is None:  # the kind is not served: its CRD is not installed, so no object of it exists
        out.live.update({key: None for key, _, _ in members})
        return out
    others: dict[tuple[str, str], Obj] | None = None  # the metadata list, once read
    if not maybe_ours:
        try:
            listed = _metadata_where(cluster, res, sorted({_stored_at(key, res)[0] for key, _, _ in members}))
        except ApiError as e:
            if e.status not in NOT_ALLOWED:
                raise
            return _scan_each(cluster, res, members, applyset_id=applyset_id, recorded=recorded)
        others = {_where(item, res): item for item in listed}
        maybe_ours = any(labels.owned_by(others.get(_stored_at(key, res), {}), applyset_id) for key, _, _ in members)
    found: dict[tuple[str, str], Obj] = {}
    if maybe_ours:
        try:
            ours = cluster.list(res.api_version, first.kind, label_selector=f"{labels.PART_OF}={applyset_id}")
        except ApiError as e:
            if e.status not in NOT_ALLOWED:
                raise
            return _scan_each(cluster, res, members, applyset_id=applyset_id, recorded=recorded)
        found = {_where(item, res): item for item in ours}
    missing = [(key, app) for key, app, _ in members if _stored_at(key, res) not in found]
    for key, _, _ in members:
        item = found.get(_stored_at(key, res))
        if item is not None:
            out.live[key] = _trim(item, key.kind)
    if not missing:
        return out
    if others is None:
        try:
            listed = _metadata_where(cluster, res, sorted({_stored_at(key, res)[0] for key, _ in missing}))
        except ApiError as e:
            if e.status not in NOT_ALLOWED:
                raise
            rest: list[tuple[ObjectKey, str, Obj]] = [(k, a, {}) for k, a in missing]
            return _scan_each(cluster, res, rest, applyset_id=applyset_id, recorded=recorded, into=out)
        others = {_where(item, res): item for item in listed}
    for key, app in missing:
        _sort(cluster, res, key, app, others.get(_stored_at(key, res)), out, recorded=recorded, applyset_id=applyset_id)
    return out


def _metadata_where(cluster: Cluster, res: Resource, namespaces: Sequence[str]) -> list[Obj]:
    """The kind's objects (metadata only) in ``namespaces``: one list across all namespaces when they are
    several (a platform's kinds spread over a dozen: one request instead of one each), per namespace when
    the user may not list the kind everywhere."""
    if res.namespaced and len(namespaces) > 1:
        try:
            return cluster.list_metadata(res.api_version, res.kind, namespace=None)
        except ApiError as e:
            if e.status not in NOT_ALLOWED:
                raise
    return [
        item for ns in namespaces for item in cluster.list_metadata(res.api_version, res.kind, namespace=ns or None)
    ]


def _scan_each(
    cluster: Cluster,
    res: Resource,
    members: Sequence[tuple[ObjectKey, str, Obj]],
    *,
    applyset_id: str,
    recorded: Mapping[ObjectKey, str],
    into: Scan | None = None,
) -> Scan:
    """Where listing is not allowed (namespace-scoped RBAC), read each object; unreadable ones stay unknown
    (their apply will meet the same refusal and say so)."""
    out = into or Scan()
    for key, app, _ in members:
        try:
            live = cluster.get(res.api_version, key.kind, namespace=key.namespace, name=key.name)
        except ApiError as e:
            if e.status not in NOT_ALLOWED:
                raise
            continue
        if live is not None and labels.owned_by(live, applyset_id):
            out.live[key] = _trim(live, key.kind)
        else:
            _sort(cluster, res, key, app, live, out, recorded=recorded, applyset_id=applyset_id)
    return out


def _sort(
    cluster: Cluster,
    res: Resource,
    key: ObjectKey,
    app: str,
    meta_obj: Obj | None,
    out: Scan,
    *,
    recorded: Mapping[ObjectKey, str],
    applyset_id: str,
) -> None:
    """File one object that does not carry our label: absent, ours by recorded UID or because an earlier delete
    of this install released it, shared, or foreign."""
    if meta_obj is None:
        out.live[key] = None
        return
    meta = meta_of(meta_obj)
    uid = str(meta.get("uid", ""))
    owner = owner_of(meta_obj)
    # Ours by the UID the inventory recorded, its label removed by someone; not when another tool has marked
    # it since (another install adopted it): then it is theirs, and taking it back would be a tug of war.
    if (recorded.get(key) == uid or labels.released_from(meta_obj) == applyset_id) and not owner.marked:
        live = cluster.get(res.api_version, key.kind, namespace=key.namespace, name=key.name)
        out.live[key] = _trim(live, key.kind) if live is not None else None
        return
    foreign = ForeignObject(key, app, owner, uid, meta_obj)
    if (key.group, key.kind) == ("", "Namespace") and not owner.marked:
        out.shared.append(foreign)
        live = cluster.get(res.api_version, key.kind, namespace="", name=key.name)
        out.live[key] = _trim(live, key.kind) if live is not None else None
        return
    out.foreign.append(foreign)


def _resource(cluster: Cluster, api_version: str, key: ObjectKey) -> Resource | None:
    """The kind's mapping at the bundle's version, else at any served version (objects are the same object
    at every version), else None: not served at all."""
    try:
        return cluster.resource(api_version, key.kind)
    except NoKindMatch:
        pass
    try:
        return cluster.resource_for_key(key)
    except NoKindMatch:
        return None


def _stored_at(key: ObjectKey, res: Resource) -> tuple[str, str]:
    """Where the server keeps a bundle object: a namespaced one rendered without a namespace is applied to
    "default" (as kubectl does), a cluster-scoped one has none whatever it was rendered with."""
    return ((key.namespace or "default") if res.namespaced else "", key.name)


def _where(item: Mapping[str, Any], res: Resource) -> tuple[str, str]:
    meta = meta_of(item)
    return (str(meta.get("namespace") or "") if res.namespaced else "", str(meta.get("name", "")))


def _trim(item: Obj, kind: str) -> Obj:
    """Drop managedFields: the bulk of a listed object, and compared only for admission webhook configurations
    (a field their own server took over is its; see drift.py)."""
    if kind not in drift.WEBHOOK_CONFIGURATIONS:
        meta_of(item).pop("managedFields", None)
    return item
