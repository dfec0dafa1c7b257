"""`kfctl status`: the health of every object kfctl recorded, per object and per application, and of the
applications the KfDef says the cluster provides (``external: true``), checked as apply checks them; and the
Secrets the applications need, generated or brought, by their keys (never a value)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kfctl.app.cluster import identify, talking_to
from kfctl.app.secrets import secret_states
from kfctl.catalog.model import Catalog
from kfctl.config.model import KfDef
from kfctl.engine import inventory
from kfctl.engine.probe import external_health, get_key, handler_problem, object_health, webhook_problem
from kfctl.health.model import Health, failed, progressing
from kfctl.health.waitrules import SHIPPED
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch
from kfctl.objects import Obj, ObjectKey
from kfctl.plan.graph import ExternalCheck
from kfctl.secrets.declared import is_generated
from kfctl.secrets.report import SecretState, describe_generated
from kfctl.wording import counted


@dataclass(frozen=True)
class ObjectStatus:
    key: ObjectKey
    application: str
    health: Health
    also_in: tuple[str, ...] = ()  # later applications that render it too (applied once, under ``application``)

    @property
    def applications(self) -> tuple[str, ...]:
        return (self.application, *self.also_in)


@dataclass
class StatusReport:
    applied: bool
    objects: list[ObjectStatus] = field(default_factory=list)
    externals: dict[str, Health] = field(default_factory=dict)  # application → its check, "external: …"
    secrets: list[SecretState] = field(default_factory=list)  # generated and brought, keys only

    def by_application(self) -> dict[str, Health]:
        out: dict[str, Health] = dict(self.externals)
        apps: dict[str, list[ObjectStatus]] = {}
        for o in self.objects:  # a shared object counts under each application that renders it
            for app in o.applications:
                apps.setdefault(app, []).append(o)
        for app, objs in sorted(apps.items()):
            bad = [o for o in objs if not o.health.ready]
            if any(o.health.failed for o in bad):
                out[app] = failed(f"{sum(o.health.failed for o in bad)} failed of {len(objs)}")
            elif bad:
                out[app] = progressing(f"{len(bad)} of {len(objs)} not ready")
            else:
                out[app] = Health("ready", f"{counted(len(objs), 'object')} ready")
        return out

    @property
    def shared(self) -> int:
        """Objects several applications render: under each in by_application, once among the objects."""
        return sum(1 for o in self.objects if o.also_in)

    @property
    def healthy(self) -> bool:
        return (
            self.applied
            and all(o.health.ready for o in self.objects)
            and all(h.ready for h in self.externals.values())
            and all(s.ok for s in self.secrets)
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "healthy": self.healthy,
            "applications": {
                a: {"state": h.state, "message": h.message, "external": a in self.externals}
                for a, h in sorted(self.by_application().items())
            },
            "objects": [
                {
                    "object": str(o.key),
                    "application": o.application,
                    "state": o.health.state,
                    "message": o.health.message,
                }
                | ({"alsoIn": list(o.also_in)} if o.also_in else {})
                for o in self.objects
            ],
            "secrets": [s.as_dict() for s in self.secrets],
            "shared": self.shared,
        }


WEBHOOK_CONFIGURATIONS = frozenset({"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"})


def webhooks_answer(cluster: Cluster, config: Obj) -> Health | None:
    """A webhook configuration is healthy when the API server can call each of its webhooks and each server
    serves its path (kfctl.engine.probe); None when they all do."""
    problems = []
    for hook in config.get("webhooks") or []:
        why = webhook_problem(cluster, hook) or handler_problem(cluster, hook)
        if why:
            problems.append(why if why.startswith("webhook ") else f"webhook {hook.get('name')}: {why}")
    return progressing("; ".join(problems)) if problems else None


def status_of(kfdef: KfDef, catalog: Catalog, *, open_cluster: Callable[[], Cluster]) -> StatusReport:
    cluster = open_cluster()
    identify(cluster)
    wait_rules = SHIPPED.with_overrides(kfdef.wait_rules)
    externals: dict[str, Health] = {}
    with talking_to(cluster, "checking the applications the cluster provides"):
        for app in kfdef.enabled_applications():
            if app.external:
                component = catalog.components.get(app.component or "")
                h = external_health(cluster, ExternalCheck(app.name, component.crds if component else ()))
                externals[app.name] = Health(h.state, f"external: {h.message}")
    with talking_to(cluster, "reading the inventory"):
        inv = inventory.read(cluster, name=inventory.parent_name(kfdef.name), namespace=kfdef.namespace)
    if inv is None:
        return StatusReport(applied=False, externals=externals)

    def probe(m: inventory.Member) -> ObjectStatus:
        try:
            live = get_key(cluster, m.key)
        except NoKindMatch:
            live = None
        except ApiError as e:
            return ObjectStatus(m.key, m.application, failed(f"cannot read: {e.message}"), m.also_in)
        if live is None:
            return ObjectStatus(m.key, m.application, failed("missing"), m.also_in)
        health = object_health(cluster, live, wait_rules=wait_rules)
        if is_generated(live):
            health = Health(health.state, describe_generated(live))
        if health.ready and m.key.kind in WEBHOOK_CONFIGURATIONS:
            health = webhooks_answer(cluster, live) or health
        return ObjectStatus(m.key, m.application, health, m.also_in)

    with talking_to(cluster, "reading the objects' health"), ThreadPoolExecutor(max_workers=8) as pool:
        objects = list(pool.map(probe, sorted(inv.members.values(), key=lambda m: (m.application, m.key))))
    with talking_to(cluster, "reading the Secrets the applications need"):
        secrets = secret_states(cluster, kfdef, catalog)
    return StatusReport(applied=True, objects=objects, externals=externals, secrets=secrets)
