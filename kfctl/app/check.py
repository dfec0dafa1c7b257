"""`kfctl check --pre`: render (unless told not to), read the bundle as apply would, and run the pre-install
checks against the target cluster. Reads only; returns the report for the CLI to print."""

from __future__ import annotations

from collections.abc import Callable, Collection

from kfctl.app.bundle import load_bundle
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.check.model import CheckReport, PreContext
from kfctl.check.runner import PRE_CHECKS, run_checks, select
from kfctl.config.model import KfDef
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
        generate(kfdef, catalog, find=find_kustomize)
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
    )
    return run_checks(checks, ctx)
