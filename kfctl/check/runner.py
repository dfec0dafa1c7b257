"""The checks of both modes in the order they run — before an install (fixed) and of an installed platform
(one per application, one per sample of an installed component) — and the loop that runs the ones asked for.

A check that raises the cluster's errors fails with the server's words instead of stopping the others; when
the cluster cannot be reached, the checks that need it are skipped rather than failed again and again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

from kfctl.check import bundle, capacity, cluster, permissions, secrets, tools
from kfctl.check.admission import dry_run_create
from kfctl.check.applications import application_health
from kfctl.check.login import dashboard_check, login_check
from kfctl.check.model import Check, CheckReport, CheckResult, InstalledContext, Outcome, PreContext
from kfctl.check.samples import SAMPLES
from kfctl.check.smoke import SCENARIOS, smoke_run
from kfctl.errors import KfctlError, UsageError
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch, Unreachable
from kfctl.k8s.errors import Forbidden
from kfctl.objects import Obj

PRE_CHECKS: tuple[Check[PreContext], ...] = (
    Check("cluster", "cluster-reachable", cluster.reachable),
    Check("cluster", "kubernetes-version", cluster.kubernetes_version),
    Check("permissions", "can-create", permissions.can_create),
    Check("storage", "default-storage-class", capacity.default_storage_class),
    Check("resources", "node-capacity", capacity.node_capacity),
    Check("resources", "gpu-nodes", capacity.gpu_nodes),
    Check("bundle", "api-versions", bundle.api_versions),
    Check("bundle", "foreign-owners", bundle.foreign_owners),
    Check("secrets", "brought-secrets", secrets.brought_secrets),
    Check("tools", "kustomize", tools.kustomize, needs_cluster=False),
)
REACHABLE = "cluster-reachable"
# The names of an installed platform's checks that do not depend on the KfDef (for --help).
PROBES = tuple(f"{s.check} ({s.category})" for s in SAMPLES)
SMOKES = tuple(s.check for s in SCENARIOS)

C = TypeVar("C")


def installed_checks(
    applications: Sequence[str],
    components: Collection[str],
    *,
    smoke: bool = False,
    served: Collection[str] = (),
    ingress: bool = False,
) -> tuple[Check[InstalledContext], ...]:
    """cluster-reachable, the health of each application (named after it), then a dry-run create of each sample
    whose catalog component is installed or whose kinds the cluster serves (``served``: the samples' and
    scenarios' check names, whoever installed the kinds: upstream's trees, Helm); with ``ingress`` (the cluster
    has an Istio Gateway: upstream's full platform), a login through it and the dashboard's answer for that user;
    with ``smoke``, then the job of each such scenario run to its end."""
    return (
        Check("cluster", REACHABLE, cluster.reachable),
        *(Check("health", app, application_health(app)) for app in applications),
        *(
            Check(s.category, s.check, dry_run_create(s))
            for s in SAMPLES
            if s.component in components or s.check in served
        ),
        *(
            (Check("dashboard", "login", login_check), Check("dashboard", "dashboard", dashboard_check))
            if ingress
            else ()
        ),
        *(
            Check("smoke", s.check, smoke_run(s))
            for s in SCENARIOS
            if smoke and (s.component in components or s.check in served)
        ),
    )


def served_checks(api: Cluster) -> frozenset[str]:
    """The samples and smoke scenarios whose every kind the cluster serves (nothing when it cannot be reached:
    the cluster-reachable check says why)."""

    def serves(objects: Sequence[Obj]) -> bool:
        try:
            for obj in objects:
                api.resource(str(obj["apiVersion"]), str(obj["kind"]))
        except (NoKindMatch, ApiError):
            return False
        return True

    try:
        samples = [s.check for s in SAMPLES if serves(s.objects)]
        return frozenset(samples + [s.check for s in SCENARIOS if serves((s.job,))])
    except Unreachable:
        return frozenset()


def select(checks: Sequence[Check[C]], *, only: Collection[str] = (), skip: Collection[str] = ()) -> list[Check[C]]:
    """The checks ``--only`` keeps and ``--skip`` drops; an unknown name is a usage error naming the known."""
    known = [c.name for c in checks]
    unknown = sorted({*only, *skip} - set(known))
    if unknown:
        raise UsageError(f"unknown check(s): {', '.join(unknown)}", hint=f"the checks are: {', '.join(known)}")
    return [c for c in checks if (not only or c.name in only) and c.name not in skip]


def run_checks(
    checks: Sequence[Check[C]], ctx: C, *, on_start: Callable[[str], None] = lambda _name: None
) -> CheckReport:
    """Run ``checks`` in order; ``on_start`` hears each check's name as it begins (the CLI shows it while a slow
    one, a smoke job, runs)."""
    start = time.monotonic()
    report = CheckReport()
    unreachable = False
    for check in checks:
        if check.needs_cluster and unreachable:
            outcome = Outcome("skip", "not run: the cluster cannot be reached (see cluster-reachable)")
        else:
            on_start(check.name)
            outcome = _run_one(check, ctx)
        if check.name == REACHABLE and outcome.verdict == "fail":
            unreachable = True
        report.results.append(CheckResult(check.category, check.name, outcome.verdict, outcome.message, outcome.hint))
    report.seconds = time.monotonic() - start
    return report


def _run_one(check: Check[C], ctx: C) -> Outcome:
    """The check's outcome; errors of the conversation with the cluster become its failure."""
    try:
        return check.run(ctx)
    except Unreachable as e:
        return Outcome("fail", f"lost the connection to the cluster: {e}", "re-run when the API server answers")
    except ApiError as e:
        hint = (
            "grant the user that permission, or use a kubeconfig with more rights" if isinstance(e, Forbidden) else ""
        )
        return Outcome("fail", f"the API server refused a request of this check: {e}", hint)
    except KfctlError as e:
        return Outcome("fail", e.message, e.hint or "")
