"""Opening the cluster for a command, taking the install's lock for it, and the messages for when it cannot be
reached.

The CLI passes --kubeconfig/--context through; this module turns "connection refused" into a ClusterError
that names the kubeconfig, the context and the server, so the user knows which cluster was tried.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kfctl.config.model import KfDef
from kfctl.engine.events import Reporter
from kfctl.engine.inventory import cluster_identity
from kfctl.engine.lease import Held, install_lock
from kfctl.errors import ApiDeniedError, ClusterError
from kfctl.k8s.api import ApiError, Cluster, Unreachable
from kfctl.k8s.client import connect
from kfctl.k8s.errors import Forbidden, Unauthorized

RECORD = Path(".cache") / "cluster.json"


def open_cluster(*, kubeconfig: str | None, context: str | None) -> Cluster:
    return connect(kubeconfig=kubeconfig, context=context)


def identify(cluster: Cluster) -> str:
    """The cluster's identity (kube-system UID); the first request a command makes, so it checks reachability."""
    try:
        uid = cluster_identity(cluster)
    except Unreachable as e:
        raise unreachable(cluster, e) from e
    except Unauthorized as e:  # authentication, not a denial: exit 6, as the README's table says
        raise ClusterError(
            f"the API server at {cluster.info.server} refused our credentials: {e.message}",
            hint=f"check the user of context {cluster.info.context!r} in {cluster.info.kubeconfig}",
        ) from e
    except Forbidden as e:
        raise ApiDeniedError(
            f"forbidden: reading namespace kube-system (kfctl's record of which cluster this is): {e.message}",
            hint=f"grant the user of context {cluster.info.context!r} get on namespaces (e.g. a ClusterRole "
            "with get on namespaces), or use a kubeconfig with more rights",
        ) from e
    except ApiError as e:
        raise ClusterError(f"{cluster.info.describe()}: {e}") from e
    if not uid:
        raise ClusterError(f"{cluster.info.describe()}: namespace kube-system not found; is this a Kubernetes cluster?")
    return uid


@contextmanager
def talking_to(cluster: Cluster, doing: str) -> Iterator[None]:
    """Turn a failure of the API conversation while ``doing`` something into kfctl's errors: a lost
    connection or rejected credentials is a cluster error (exit 6), a refusal names what was refused
    (exit 7), never a traceback."""
    try:
        yield
    except Unreachable as e:
        raise ClusterError(
            f"lost the connection to the cluster while {doing}: {cluster.info.describe()}",
            details=[str(e)],
            hint="when the API server is back, re-run the command: kfctl resumes where it stopped",
        ) from e
    except ApiError as e:
        raise api_failure(cluster, e, doing) from e


def api_failure(cluster: Cluster, err: ApiError, doing: str) -> ClusterError:
    # The one reader of HTTP codes above kfctl/k8s/: a webhook's denial (WebhookDenied, whatever its code) reads
    # here as the code its webhook chose — controller-runtime's 403 as "forbidden", the API server's default 400
    # as "rejected" — and a 406/409/413 as exit 6; by type these messages and codes would change.
    if err.status == 403:
        # The server's message names the user, the verb, the resource and the namespace.
        return ApiDeniedError(
            f"forbidden while {doing}: {err.message}",
            hint=f"grant the user of context {cluster.info.context!r} that permission, or use a kubeconfig "
            "with more rights",
        )
    if err.status == 401:
        return ClusterError(
            f"the API server at {cluster.info.server} refused our credentials while {doing}: {err.message}",
            hint=f"check the user of context {cluster.info.context!r} in {cluster.info.kubeconfig}",
        )
    if err.status in (400, 405, 415, 422):
        return ApiDeniedError(f"the API server rejected a request while {doing}: {err}")
    return ClusterError(
        f"the API server failed while {doing}: {err}",
        hint="when the API server is healthy again, re-run the command: kfctl resumes where it stopped",
    )


# When a command takes the install's lock: apply always (it made the namespace first); `secrets apply` when the
# namespace exists (no namespace, no Lease to take, and nothing of the install's to race); delete when it exists
# and is not being deleted (an earlier delete still waiting on finalizers: the namespace refuses the Lease —
# Forbidden, NamespaceTerminating — and for the same reason no other run can take one there).
LockNeed = Literal["always", "if its namespace exists", "if its namespace is active"]


@contextmanager
def install_locked(
    cluster: Cluster, kfdef: KfDef, *, command: str, wait: float, reporter: Reporter, need: LockNeed = "always"
) -> Iterator[Held | None]:
    """Hold the install's lock (:func:`kfctl.engine.lease.install_lock`) for the block, or go on unlocked (None)
    when ``need`` says its namespace allows none. A failure to take it is reported as every API conversation's
    (:func:`talking_to`); what the block raises is left as it is."""
    with ExitStack() as held:
        lock: Held | None = None
        with talking_to(cluster, f"taking the lock of install {kfdef.name}"):
            if need == "always" or _lockable(cluster, kfdef.namespace, need):
                lock = held.enter_context(
                    install_lock(
                        cluster,
                        install=kfdef.name,
                        namespace=kfdef.namespace,
                        command=command,
                        wait=wait,
                        reporter=reporter,
                    )
                )
        yield lock


def _lockable(cluster: Cluster, namespace: str, need: LockNeed) -> bool:
    ns = cluster.get("v1", "Namespace", namespace="", name=namespace)
    if ns is None:
        return False
    return need != "if its namespace is active" or (ns.get("status") or {}).get("phase") != "Terminating"


def unreachable(cluster: Cluster, err: Exception) -> ClusterError:
    return ClusterError(
        f"cannot reach the cluster: {cluster.info.describe()}",
        details=[str(err)],
        hint="is the cluster running? check --kubeconfig/--context (or KUBECONFIG) point at it",
    )


@dataclass(frozen=True)
class ClusterRecord:
    """What APPDIR/.cache/cluster.json remembers about the cluster an app was applied to."""

    cluster_id: str
    server: str
    context: str

    @staticmethod
    def load(app_dir: Path) -> ClusterRecord | None:
        try:
            data = json.loads((app_dir / RECORD).read_text(encoding="utf-8"))
            return ClusterRecord(str(data["clusterId"]), str(data.get("server", "")), str(data.get("context", "")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, app_dir: Path) -> None:
        path = app_dir / RECORD
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"clusterId": self.cluster_id, "server": self.server, "context": self.context}, indent=2)
        if not path.exists() or path.read_text(encoding="utf-8") != text + "\n":
            path.write_text(text + "\n", encoding="utf-8")
