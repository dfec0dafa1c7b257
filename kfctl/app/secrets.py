"""Generated Secrets in the cluster commands: read before apply, created out of band for GitOps, reported.

`apply` plans each generated Secret with the rest of the bundle; here its data is read from the cluster (under
the install's lock, so two runs cannot draw two passwords) and what is missing drawn, before the engine sends
it. `kfctl secrets apply` runs the same steps without the rest of the bundle, for a cluster that a GitOps
engine fills from the generated files (which hold no Secret): same objects, same labels, same values rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kfctl.app.bundle import Bundle
from kfctl.app.cluster import identify, install_locked, talking_to
from kfctl.catalog.model import Catalog
from kfctl.config.model import KfDef
from kfctl.engine import drift, inventory, labels
from kfctl.engine.events import Event, Reporter
from kfctl.errors import PlanError
from kfctl.k8s.api import Cluster
from kfctl.objects import Obj, ObjectKey
from kfctl.secrets.brought import check_brought
from kfctl.secrets.declared import Declared, declared, shell
from kfctl.secrets.report import SecretState, secret_state
from kfctl.secrets.values import SecretValues, read_values, with_data


def with_secret_values(
    cluster: Cluster, bundle: Bundle, reporter: Reporter, *, known: Mapping[ObjectKey, Obj | None] | None = None
) -> Bundle:
    """The bundle with its generated Secrets' data: the cluster's values, the missing keys drawn (reported by
    name). Call it under the install's lock, after the ownership check (``known``: what that check read)."""
    values = read_values(cluster, bundle.secrets, known=known)
    report_drawn(reporter, bundle.secrets, values)
    return bundle.with_secret_values(values)


def report_drawn(reporter: Reporter, wanted: tuple[Declared, ...] | list[Declared], values: SecretValues) -> None:
    for secret in wanted:
        shared = values.shared.get(secret.key) or ()
        if shared:
            reporter(
                Event(
                    "Kept",
                    str(secret.key),
                    f"{', '.join(shared)} still {'holds' if len(shared) == 1 else 'hold'} the catalog's former "
                    "shared default (every install had it): "
                    "change the value in the service and in the Secret together (see docs/credentials.md)",
                )
            )
        drawn, fixed = values.drawn.get(secret.key) or (), values.fixed.get(secret.key) or ()
        if not drawn and not fixed:
            continue
        parts = [f"{', '.join(drawn)} drawn at random for this install"] if drawn else []
        if fixed:
            parts.append(f"{', '.join(fixed)} set as the component declares")
        kept = values.carried.get(secret.key) or ()
        if kept:
            parts.append(f"{', '.join(kept)} kept as the cluster holds them")
        claim = values.orphaned.get(secret.key)
        if claim:
            parts.append(
                f"warning: PersistentVolumeClaim {secret.namespace}/{claim} exists already, its data set up with "
                "values this Secret no longer holds; restore the Secret from a backup, or delete the claim too"
            )
        reporter(Event("Generated", str(secret.key), "; ".join(parts) + " (values are never shown)"))


@dataclass
class SecretsSummary:
    """What `kfctl secrets apply` did, per Secret: created, configured (a key added), unchanged, kept (not
    kfctl's: left as it is) or brought (checked)."""

    results: list[tuple[Declared, str]] = field(default_factory=list)  # (the Secret, verdict)
    requests: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return any(v in ("created", "configured") for _, v in self.results)

    def rows(self) -> list[tuple[str, str]]:
        return [(str(s.key), v) for s, v in self.results]

    def as_dict(self) -> dict[str, Any]:
        return {
            "secrets": [
                {
                    "object": str(s.key),
                    "namespace": s.namespace,
                    "name": s.name,
                    "application": s.application,
                    "keys": list(s.spec.key_names),
                    "result": v,
                }
                for s, v in self.results
            ],
            "changed": self.changed,
            "requests": self.requests,
        }


def apply_secrets(
    kfdef: KfDef,
    catalog: Catalog,
    *,
    open_cluster: Callable[[], Cluster],
    reporter: Reporter,
    lock_timeout: float = 30.0,
) -> SecretsSummary:
    """Create the install's generated Secrets that are missing and add keys they lack, never changing a value;
    check the brought ones. For clusters a GitOps engine syncs: no rendered files, no inventory needed."""
    wanted = declared(kfdef, catalog)
    cluster = open_cluster()
    identify(cluster)
    summary = SecretsSummary()
    with talking_to(cluster, "checking the Secrets the KfDef brings"):
        check_brought(cluster, wanted)
    generated = [s for s in wanted if s.generated]
    with talking_to(cluster, "checking the generated Secrets' namespaces"):
        _namespaces_exist(cluster, generated)
    locked = install_locked(
        cluster, kfdef, command="secrets apply", wait=lock_timeout, reporter=reporter, need="if its namespace exists"
    )
    with locked, talking_to(cluster, "creating the generated Secrets"):
        values = read_values(cluster, generated)
        applyset = inventory.applyset_id(name=inventory.parent_name(kfdef.name), namespace=kfdef.namespace)
        for secret in generated:
            summary.results.append((secret, _apply_one(cluster, secret, values, applyset, kfdef, reporter)))
    summary.results += [(s, "brought") for s in wanted if not s.generated]
    summary.requests = cluster.stats.as_dict()
    return summary


def _apply_one(
    cluster: Cluster, secret: Declared, values: SecretValues, applyset: str, kfdef: KfDef, reporter: Reporter
) -> str:
    """What apply's engine does with the Secret, alone: skip it when the live one holds everything, else send
    it (server-side apply); but leave one that is not kfctl's alone, as apply would refuse to touch it."""
    subject = str(secret.key)
    live = cluster.get("v1", "Secret", namespace=secret.namespace, name=secret.name)
    if live is not None and not labels.owned_by(live, applyset):
        why = "exists and is not this install's: left as it is (kfctl apply would ask for --adopt)"
        reporter(Event("Skipped", subject, why, app=secret.application))
        return "kept"
    planned = shell(secret)
    desired = with_data(
        labels.prepare(planned, applyset_id=applyset, kfdef_name=kfdef.name, application=secret.application), values
    )
    if (
        live is not None
        and labels.applied_hash(live) == labels.desired_hash(desired)
        and not drift.differences(desired, live)
    ):
        reporter(Event("Unchanged", subject, app=secret.application))
        return "unchanged"
    report_drawn(reporter, [secret], values)
    cluster.apply(desired)
    verdict = "created" if live is None else "configured"
    reporter(Event("Created" if live is None else "Configured", subject, app=secret.application))
    return verdict


def _namespaces_exist(cluster: Cluster, generated: list[Declared]) -> None:
    missing = sorted(
        {s.namespace for s in generated if cluster.get("v1", "Namespace", namespace="", name=s.namespace) is None}
    )
    if missing:
        raise PlanError(
            f"namespace(s) {', '.join(missing)} do not exist; the generated Secrets go there",
            details=[f"{s.key} ({s.application})" for s in generated if s.namespace in missing],
            hint=(
                "let the GitOps engine sync the application that creates the namespace first (common), or create it "
                f"(kubectl create namespace {missing[0]}), then re-run kfctl secrets apply"
            ),
        )


def secret_states(cluster: Cluster, kfdef: KfDef, catalog: Catalog) -> list[SecretState]:
    """Every Secret the KfDef's applications need, generated or brought, as the cluster holds it (keys only)."""
    return [
        secret_state(s, cluster.get("v1", "Secret", namespace=s.namespace, name=s.name))
        for s in declared(kfdef, catalog)
    ]
