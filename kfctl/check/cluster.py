"""Category "cluster": can kfctl reach and authenticate to the target cluster, and is its Kubernetes minor one
every chosen catalog component supports (the `kubernetes: {min, max}` of its component.yaml)?"""

from __future__ import annotations

import re

from kfctl.check.model import HasCluster, Outcome, PreContext
from kfctl.engine.inventory import cluster_identity
from kfctl.k8s.api import ApiError, Unreachable
from kfctl.k8s.errors import Forbidden, Unauthorized


def reachable(ctx: HasCluster) -> Outcome:
    """kfctl identifies a cluster by namespace kube-system's UID (see kfctl.app.cluster.identify): reading it
    proves the server answers and accepts the credentials, and is the first request apply makes."""
    info = ctx.cluster.info
    try:
        version = ctx.cluster.server_version()
        cluster_identity(ctx.cluster)
    except Unreachable as e:
        return Outcome(
            "fail",
            f"cannot reach {info.describe()}: {e}",
            "is the cluster running? check --kubeconfig/--context (or KUBECONFIG) point at it",
        )
    except Unauthorized as e:
        return Outcome(
            "fail",
            f"the API server at {info.server} refused our credentials: {e.message}",
            f"check the user of context {info.context!r} in {info.kubeconfig}",
        )
    except Forbidden as e:
        return Outcome(
            "fail",
            f"authenticated, but may not read namespace kube-system (kfctl's record of which cluster this is): "
            f"{e.message}",
            f"grant the user of context {info.context!r} get on namespaces, or use a kubeconfig with more rights",
        )
    except ApiError as e:
        return Outcome("fail", f"{info.describe()}: {e}", "check the API server's health (kubectl get --raw /readyz)")
    return Outcome("pass", f"reached {info.server} (Kubernetes {version}), credentials accepted")


def _minor(version: str) -> tuple[int, int] | None:
    m = re.match(r"v?(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def kubernetes_version(ctx: PreContext) -> Outcome:
    """Below a component's minimum is a failure (its objects or operators rely on newer APIs); above its
    maximum a warning: it was not tested there, which usually still works. A range is what the component's
    upstream documents (cited in its component.yaml), often only a minimum; an application without one is
    named as not checked, never passed over in silence."""
    version = ctx.cluster.server_version()
    server = _minor(version)
    ranged = {app: c.kubernetes for app, c in sorted(ctx.components.items()) if c.kubernetes}
    unchecked = sorted({*ctx.non_catalog, *(app for app in ctx.components if app not in ranged)})
    note = f" ({', '.join(unchecked)}: no supported range declared, not checked)" if unchecked else ""
    if not ranged:
        return Outcome("skip", f"no application declares a supported Kubernetes range{note}")
    if server is None:
        return Outcome(
            "warn",
            f"cannot read a version from the server's {version!r}{note}",
            "compare the server's Kubernetes minor with the kubernetes: ranges in the components' component.yaml",
        )
    too_old = [f"{app} needs ≥ {r.min}" for app, r in ranged.items() if server < _bound(r.min)]
    too_new = [f"{app} is supported up to {r.max}" for app, r in ranged.items() if r.max and server > _bound(r.max)]
    shown = f"{server[0]}.{server[1]}"
    newer = f"newer than tested: {'; '.join(too_new)}"
    if too_old:
        return Outcome(
            "fail",
            f"Kubernetes {shown} is too old: {'; '.join(too_old)}{f'; {newer}' if too_new else ''}{note}",
            "upgrade the cluster, or leave out the components that need a newer Kubernetes",
        )
    if too_new:
        return Outcome(
            "warn",
            f"Kubernetes {shown} is {newer}{note}",
            "it usually works; check the components' release notes for removed APIs",
        )
    within = ", ".join(f"{app} {r.describe()}" for app, r in ranged.items())
    return Outcome("pass", f"Kubernetes {shown} is within the supported range of {within}{note}")


def _bound(minor: str) -> tuple[int, int]:
    parsed = _minor(minor)
    assert parsed is not None  # the catalog loader validated it
    return parsed
