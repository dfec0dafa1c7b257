"""Category "bundle": what the rendered objects need of the cluster's API — versions it serves, and names no
one else owns. Reads only."""

from __future__ import annotations

from kfctl.check.model import Outcome, PreContext
from kfctl.engine import inventory, ownership
from kfctl.engine.served import HINT_UNSERVED, unserved


def api_versions(ctx: PreContext) -> Outcome:
    """Every apiVersion/kind of the bundle must be served, or served by a CRD the bundle installs; the API
    server refuses anything else (e.g. apiextensions.k8s.io/v1beta1, removed in Kubernetes 1.22)."""
    missing = unserved(ctx.cluster, ctx.objects)
    if missing:
        return Outcome(
            "fail",
            f"the cluster does not serve {len(missing)} apiVersion/kind(s) of the bundle: "
            f"{'; '.join(m.describe() for m in missing)}",
            HINT_UNSERVED,
        )
    kinds = len({(o.get("apiVersion"), o.get("kind")) for _, o in ctx.objects})
    return Outcome("pass", f"all {kinds} apiVersion/kinds of the bundle are served (or by its own CRDs)")


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
