"""`kfctl apply --dry-run`: every write apply would make, sent as a server-side dry run in apply's order, and
the API server's verdict on each — nothing is persisted, no lock is taken, nothing is waited for. What
`kubectl apply --dry-run=server` tells a kubectl user, for the whole platform: which objects would be created,
configured, left alone or pruned, which the admission webhooks or the schema refuse (quoted), which need
--recreate-immutable, and which cannot be judged yet (a kind whose CRD this apply brings, a Namespace it
creates, a webhook whose backend it installs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from kfctl.app.cluster import talking_to
from kfctl.app.diff import against_cluster, compare, removed
from kfctl.catalog.model import Catalog
from kfctl.config.model import KfDef
from kfctl.engine import inventory, ownership
from kfctl.k8s.api import ApiError, Cluster
from kfctl.k8s.errors import Transient
from kfctl.plan.graph import PlannedObject, topological_order

# The verdicts, in the order a summary lists them.
VERDICTS = ("created", "configured", "unchanged", "pruned", "recreate", "pending", "foreign", "denied")
_ACTIONS = {"create": "created", "update": "configured", "prune": "pruned", "recreate": "recreate"}


@dataclass(frozen=True)
class Verdict:
    subject: str
    application: str
    # One of VERDICTS. pending: cannot be judged before apply has made what it needs; foreign: another owner's
    # (Helm, Argo CD, another install …): apply stops before writing anything (exit 11) unless it adopts it.
    verdict: str
    message: str = ""
    also_in: tuple[str, ...] = ()  # later applications that render it too (applied once, under ``application``)

    @property
    def applications(self) -> tuple[str, ...]:
        return (self.application, *self.also_in)

    def as_dict(self) -> dict[str, Any]:
        return (
            {"object": self.subject, "application": self.application, "verdict": self.verdict}
            | ({"message": self.message} if self.message else {})
            | ({"alsoIn": list(self.also_in)} if self.also_in else {})
        )


@dataclass
class DryRunReport:
    verdicts: list[Verdict] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Count per verdict over the objects: a shared one once."""
        seen = Counter(v.verdict for v in self.verdicts)
        return {v: seen[v] for v in VERDICTS}

    def by_application(self) -> dict[str, dict[str, int]]:
        """Application → count per verdict; an object several applications render counts under each."""
        out: dict[str, dict[str, int]] = {}
        for v in self.verdicts:
            for app in v.applications:
                out.setdefault(app, dict.fromkeys(VERDICTS, 0))[v.verdict] += 1
        return out

    @property
    def shared(self) -> int:
        """Objects several applications render: under each in by_application, once in counts."""
        return sum(1 for v in self.verdicts if v.also_in)

    @property
    def changes(self) -> bool:
        return any(v.verdict not in ("unchanged", "denied", "foreign") for v in self.verdicts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dryRun": "server",
            "objects": [v.as_dict() for v in self.verdicts],
            "summary": self.counts(),
            "applications": self.by_application(),
            "shared": self.shared,
        }


def dry_run_apply(
    kfdef: KfDef, catalog: Catalog, *, open_cluster: Callable[[], Cluster], render: bool = True
) -> DryRunReport:
    bundle, plan, cluster = against_cluster(kfdef, catalog, open_cluster=open_cluster, render=render)
    steps = [s for s in (plan.steps[sid] for sid in topological_order(plan)) if isinstance(s, PlannedObject)]
    with talking_to(cluster, "reading the inventory and who owns what exists"):
        inv = inventory.read(cluster, name=bundle.inventory_name, namespace=kfdef.namespace)
        found = ownership.scan(cluster, bundle.objects(), applyset_id=bundle.applyset_id, inventory=inv)
    adopting = {a.name for a in kfdef.applications if a.adopt}
    foreign = {str(f.key): f.owner.description for f in found.foreign if f.application not in adopting}

    def one(step: PlannedObject) -> Verdict:
        if step.id in foreign:
            return Verdict(step.id, step.app, "foreign", f"{foreign[step.id]}; apply stops (exit 11) unless --adopt")
        try:
            d = compare(cluster, bundle, step, dry_run_create=True)
        except ApiError as e:
            if isinstance(e, Transient):
                # A webhook not answering (its backend comes with this apply), a Namespace not found (it does
                # too): apply would wait and retry; a dry run cannot.
                return Verdict(step.id, step.app, "pending", e.explanation)
            return Verdict(step.id, step.app, "denied", e.explanation)
        if d is None:
            return Verdict(step.id, step.app, "unchanged")
        return Verdict(step.id, step.app, _ACTIONS[d.action], d.reason)

    with talking_to(cluster, "sending apply's writes as server-side dry runs"), ThreadPoolExecutor(8) as pool:
        judged = list(pool.map(one, steps))
    # A shared object is each of its applications' (plan.copies; for a prune, the inventory's alsoIn).
    report = DryRunReport([replace(v, also_in=plan.copies.get(v.subject, ())) for v in judged])
    report.verdicts += [Verdict(d.subject, d.application, "pruned", d.reason, d.also_in) for d in removed(bundle, inv)]
    return report
