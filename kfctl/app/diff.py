"""`kfctl diff`: what apply would change — a server-side dry run of each object against the live one.

Secrets' values are masked (a short digest shows whether a value changed without revealing it). Fields
the server owns (managedFields, resourceVersion, status …) and kfctl's content-hash annotation are left
out of the comparison, so only changes the user made show.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from kfctl.app.bundle import load_bundle
from kfctl.app.cluster import identify, talking_to
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.config.model import KfDef
from kfctl.engine import inventory
from kfctl.engine.drift import comparable
from kfctl.engine.retry import classify
from kfctl.errors import ApiDeniedError, ClusterError
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch
from kfctl.plan.graph import Step


@dataclass(frozen=True)
class ObjectDiff:
    subject: str
    action: str  # create | update | prune
    patch: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class DiffReport:
    diffs: list[ObjectDiff] = field(default_factory=list)
    unchanged: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "changes": [{"object": d.subject, "action": d.action, "patch": d.patch} for d in self.diffs],
            "unchanged": self.unchanged,
        }


def diff_kfdef(
    kfdef: KfDef, catalog: Catalog, *, open_cluster: Callable[[], Cluster], render: bool = True
) -> DiffReport:
    if render:
        generate(kfdef, catalog)
    bundle = load_bundle(kfdef, catalog)
    plan = bundle.plan()
    cluster = open_cluster()
    identify(cluster)

    def one(step: Step) -> ObjectDiff | None:
        assert step.key is not None
        desired = bundle.prepare(step)
        try:
            res = cluster.resource(str(desired["apiVersion"]), step.key.kind)
        except NoKindMatch:
            return ObjectDiff(step.id, "create")  # its CRD is not installed yet
        live = cluster.get(res.api_version, step.key.kind, namespace=step.key.namespace, name=step.key.name)
        if live is None:
            return ObjectDiff(step.id, "create")
        try:
            after = cluster.apply(desired, dry_run=True)
        except ApiError as e:
            c = classify(e)
            if c.verdict == "transient":  # a webhook not answering yet, a throttled or restarting server
                raise ClusterError(
                    f"{step.id}: the server-side dry run could not run: {c.message}",
                    hint="re-run kfctl diff when the API server and the platform's webhooks answer (kfctl status)",
                ) from e
            raise ApiDeniedError(f"{step.id}: the server-side dry run was rejected: {c.message}") from e
        patch = jsonpatch.make_patch(comparable(live), comparable(after)).patch
        return ObjectDiff(step.id, "update", patch) if patch else None

    with talking_to(cluster, "comparing with the live objects"), ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, sorted(plan.objects(), key=lambda s: s.id)))
    report = DiffReport()
    for r in results:
        if r is None:
            report.unchanged += 1
        else:
            report.diffs.append(r)
    with talking_to(cluster, "reading the inventory"):
        inv = inventory.read(cluster, name=bundle.inventory_name, namespace=kfdef.namespace)
    wanted = {k for k, _ in bundle.members()}
    for key in sorted(set(inv.members) - wanted if inv else set()):
        report.diffs.append(ObjectDiff(str(key), "prune"))
    return report
