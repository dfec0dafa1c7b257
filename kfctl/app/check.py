"""`kfctl check --pre`: render (unless told not to), read the bundle as apply would, and run the pre-install
checks against the target cluster. `kfctl check`: the installed platform's health (what `kfctl status` reads)
and a server-side dry-run create per installed component through its admission webhooks. Both write nothing
to the cluster; they return the report for the CLI to print."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection, Mapping

from kfctl.app.bundle import load_bundle
from kfctl.app.generate import rendered_privately
from kfctl.app.status import StatusReport, status_of
from kfctl.catalog.model import Catalog
from kfctl.check.login import has_ingress
from kfctl.check.model import CheckReport, InstalledContext, PreContext
from kfctl.check.runner import PRE_CHECKS, installed_checks, run_checks, select, served_checks
from kfctl.config.model import KfDef
from kfctl.health.model import Health
from kfctl.k8s.api import Cluster
from kfctl.render import kustomize


def check_before_install(
    kfdef: KfDef,
    catalog: Catalog,
    *,
    open_cluster: Callable[[], Cluster],
    render: bool = True,
    only: Collection[str] = (),
    skip: Collection[str] = (),
    find_kustomize: Callable[[], kustomize.Kustomize] = kustomize.find_kustomize,
) -> CheckReport:
    checks = select(PRE_CHECKS, only=only, skip=skip)  # a wrong name fails before any rendering
    if render:
        with rendered_privately(kfdef, catalog, find=find_kustomize) as rendered:  # check writes nothing into APPDIR
            bundle = load_bundle(kfdef, catalog, rendered=rendered)
    else:
        bundle = load_bundle(kfdef, catalog)
    apps = [a for a in kfdef.enabled_applications() if not a.external]
    components = {a.name: catalog.components[a.component] for a in apps if a.component in catalog.components}
    ctx = PreContext(
        cluster=open_cluster(),
        objects=tuple(bundle.objects()),
        components=components,
        non_catalog=tuple(sorted(a.name for a in apps if a.name not in components)),
        adoptable=frozenset(a.name for a in kfdef.applications if a.adopt),
        applyset_id=bundle.applyset_id,
        inventory_name=bundle.inventory_name,
        namespace=kfdef.namespace,
        find_kustomize=find_kustomize,
        brought=tuple(s for s in bundle.secrets if not s.generated),
    )
    return run_checks(checks, ctx)


def check_installed(
    kfdef: KfDef,
    catalog: Catalog,
    *,
    open_cluster: Callable[[], Cluster],
    only: Collection[str] = (),
    skip: Collection[str] = (),
    suffix: str | None = None,
    smoke_timeout: float = 0.0,
    on_start: Callable[[str], None] = lambda _name: None,
) -> CheckReport:
    """The checks of the platform kfctl installed from ``kfdef``; with a ``smoke_timeout`` (seconds), also the
    smoke jobs, each given that long. ``suffix`` names the samples (kfctl-check-<suffix>) and the smoke jobs'
    namespaces (kfctl-smoke-<suffix>-…): random unless a test fixes it."""
    apps = kfdef.enabled_applications()
    components = {a.component: catalog.components[a.component] for a in apps if a.component in catalog.components}
    smoke = smoke_timeout > 0
    cluster = open_cluster()
    served = served_checks(cluster)
    checks = select(
        installed_checks([a.name for a in apps], components, smoke=smoke, served=served, ingress=has_ingress(cluster)),
        only=only,
        skip=skip,
    )
    read: list[StatusReport] = []

    def health() -> Mapping[str, Health] | None:
        if not read:  # once for every application's check, and only when one is asked for
            read.append(status_of(kfdef, catalog, open_cluster=lambda: cluster))
        return health_by_application(read[0])

    ctx = InstalledContext(
        cluster=cluster,
        health=health,
        namespaces={name: c.namespace or kfdef.namespace for name, c in components.items()},
        namespace=kfdef.namespace,
        suffix=suffix or secrets.token_hex(4),
        smoke_timeout=smoke_timeout,
    )
    return run_checks(checks, ctx, on_start=on_start)


def health_by_application(report: StatusReport) -> dict[str, Health] | None:
    """Each application's health as `kfctl status` sums it up, with the objects that are not ready named (the
    first three), or None when kfctl never installed the platform there."""
    if not report.applied:
        return None
    out = {}
    for app, h in report.by_application().items():
        bad = [f"{o.key}: {o.health.message}" for o in report.objects if o.application == app and not o.health.ready]
        more = f"; … {len(bad) - 3} more" if len(bad) > 3 else ""
        out[app] = h if not bad else Health(h.state, f"{h.message} — {'; '.join(bad[:3])}{more}")
    return out
