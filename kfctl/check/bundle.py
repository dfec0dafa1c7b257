"""Category "bundle": what the rendered objects need of the cluster's API — versions it serves, and names no
one else owns. Reads only."""

from __future__ import annotations

from kfctl.check.model import Outcome, PreContext
from kfctl.engine import inventory, ownership
from kfctl.k8s.api import NoKindMatch
from kfctl.objects import group_of

CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")


def bundle_served(ctx: PreContext) -> set[tuple[str, str, str]]:
    """(group, version, kind) the bundle's own CRDs serve: those kinds are fine though not served yet."""
    out = set()
    for _, obj in ctx.objects:
        if (group_of(str(obj.get("apiVersion", ""))), obj.get("kind")) != CRD:
            continue
        spec = obj.get("spec") or {}
        for v in spec.get("versions") or []:
            if v.get("served", True):
                out.add(
                    (str(spec.get("group", "")), str(v.get("name", "")), str((spec.get("names") or {}).get("kind")))
                )
    return out


def api_versions(ctx: PreContext) -> Outcome:
    """Every apiVersion/kind of the bundle must be served, or served by a CRD the bundle installs; the API
    server refuses anything else (e.g. apiextensions.k8s.io/v1beta1, removed in Kubernetes 1.22)."""
    own = bundle_served(ctx)
    users: dict[tuple[str, str], list[str]] = {}
    for app, obj in ctx.objects:
        users.setdefault((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))), []).append(app)
    missing = []
    for (api_version, kind), apps in sorted(users.items()):
        version = api_version.split("/", 1)[-1]
        if (group_of(api_version), version, kind) in own:
            continue
        try:
            ctx.cluster.resource(api_version, kind)
        except NoKindMatch:
            missing.append(f"{api_version} {kind} ({', '.join(sorted(set(apps)))})")
    if missing:
        return Outcome(
            "fail",
            f"the cluster does not serve {len(missing)} apiVersion/kind(s) of the bundle: {'; '.join(missing)}",
            "render these objects at a version the cluster serves (kubectl api-resources lists them), or install "
            "the CRD that serves them first (an application marked `external: true` checks it is there)",
        )
    return Outcome("pass", f"all {len(users)} apiVersion/kinds of the bundle are served (or by its own CRDs)")


def foreign_owners(ctx: PreContext) -> Outcome:
    """The ownership scan apply runs before its first write (kfctl.engine.ownership): objects another tool
    manages stop apply with exit 11 unless their application is adopted."""
    recorded = inventory.read(ctx.cluster, name=ctx.inventory_name, namespace=ctx.namespace)
    found = ownership.scan(ctx.cluster, ctx.objects, applyset_id=ctx.applyset_id, inventory=recorded)
    refused = [f for f in found.foreign if f.application not in ctx.adoptable]
    if refused:
        return Outcome(
            "fail",
            f"{len(refused)} object(s) exist already under another owner: {'; '.join(f.describe() for f in refused)}",
            "if the cluster already provides an application, mark it `external: true` in the KfDef; to take the "
            "objects over, apply with --adopt (or set `adopt: true` on the application)",
        )
    adopted = len(found.foreign)
    existing = sum(1 for v in found.live.values() if v is not None)
    extra = f", {adopted} to adopt" if adopted else ""
    return Outcome("pass", f"no object of the bundle is owned by someone else ({existing} exist already{extra})")
