"""What kfctl needs from a Kubernetes API server, as a typed protocol plus the errors it raises.

This module does not import ``kubernetes``: the engine, the planner's callers and the tests depend on this
protocol only, so a fake cluster (tests/fakecluster.py) can stand in for the real client
(:mod:`kfctl.k8s.client`). The errors it raises are typed by :mod:`kfctl.k8s.errors` (transient, denied,
immutable …) and re-exported here.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from kfctl.k8s.errors import ApiError, NoKindMatch, NotFound, Unreachable
from kfctl.k8s.portforward import Tunnel
from kfctl.objects import Obj, ObjectKey

__all__ = [
    "FIELD_MANAGER",
    "Access",
    "ApiError",
    "Cluster",
    "ClusterInfo",
    "Listed",
    "NoKindMatch",
    "NotFound",
    "ProxyAnswer",
    "RequestStats",
    "Resource",
    "Tunnel",
    "Unreachable",
    "WatchEvent",
    "WatchStream",
]

FIELD_MANAGER = "kfctl"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class Resource:
    """The REST mapping of a kind: where its objects live in the API."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass
class RequestStats:
    """Requests sent, counted by method; writes exclude dry runs. Thread-safe."""

    by_method: Counter[str] = field(default_factory=Counter)
    writes: int = 0
    dry_runs: int = 0
    lock_writes: int = 0  # the run lock's Lease: coordination, not a change to the platform
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, method: str, *, dry_run: bool = False, lock: bool = False) -> None:
        with self._lock:
            self.by_method[method] += 1
            if dry_run:
                self.dry_runs += 1
            elif method in WRITE_METHODS:
                if lock:
                    self.lock_writes += 1
                else:
                    self.writes += 1

    @property
    def total(self) -> int:
        return sum(self.by_method.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "writes": self.writes,
            "dryRuns": self.dry_runs,
            "lockWrites": self.lock_writes,
            "byMethod": dict(self.by_method),
        }


@dataclass(frozen=True)
class Access:
    """A SelfSubjectAccessReview's answer: may the current user do ``verb`` on ``resource`` there?"""

    allowed: bool
    reason: str = ""  # the authorizer's words, when it gave any


@dataclass(frozen=True)
class ClusterInfo:
    """Where the client points, for messages and for delete's same-cluster check."""

    server: str
    context: str
    kubeconfig: str

    def describe(self) -> str:
        return f"server {self.server} (context {self.context or '-'}, kubeconfig {self.kubeconfig or '-'})"


@dataclass(frozen=True)
class Listed:
    """A LIST's items and the collection's resourceVersion: where a watch of the same kind starts."""

    items: list[Obj]
    resource_version: str


WatchType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]


@dataclass(frozen=True)
class WatchEvent:
    """One line of a watch stream. ``object`` is the object (apiVersion/kind set); for BOOKMARK only its
    metadata.resourceVersion is meaningful; for ERROR it is a Status (code 410: the resourceVersion is too old)."""

    type: WatchType
    object: Obj


class WatchStream(Protocol):
    """An open watch: events in the server's order until the server ends it (``timeoutSeconds``), the
    connection breaks (Unreachable) or ``close`` is called from another thread."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ProxyAnswer:
    """What came back through the service proxy: the HTTP status, and whether the API server said it itself
    (a Kubernetes ``Status``: the Service is missing, the proxy is forbidden, the backend cannot be reached)
    or the backend did."""

    status: int
    from_api_server: bool
    text: str = ""


class Cluster(Protocol):
    """The operations kfctl performs. ``obj`` arguments carry apiVersion/kind/metadata."""

    info: ClusterInfo
    stats: RequestStats

    def resource(self, api_version: str, kind: str) -> Resource:
        """The REST mapping; raises NoKindMatch after one discovery refresh."""
        ...

    def resource_for_key(self, key: ObjectKey) -> Resource:
        """The REST mapping of a group/kind at its preferred version."""
        ...

    def invalidate(self, group: str) -> None:
        """Forget discovery for a group (after its CRD became Established)."""
        ...

    def get(self, api_version: str, kind: str, *, namespace: str, name: str) -> Obj | None:
        """The live object, or None when it does not exist."""
        ...

    def list_metadata(self, api_version: str, kind: str, *, namespace: str | None = None) -> list[Obj]:
        """Every object of the kind (in ``namespace``, or everywhere), metadata only; apiVersion/kind set."""
        ...

    def list(
        self, api_version: str, kind: str, *, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Obj]: ...

    def list_with_version(self, api_version: str, kind: str, *, namespace: str | None = None) -> Listed:
        """Every object of the kind (in ``namespace``, or everywhere) and the list's resourceVersion."""
        ...

    def watch(
        self, api_version: str, kind: str, *, namespace: str | None, resource_version: str, timeout_seconds: int
    ) -> WatchStream:
        """Changes after ``resource_version`` (from :meth:`list_with_version` or the last event), with
        bookmarks, for at most ``timeout_seconds``. ApiError 410 when that version is too old to watch from."""
        ...

    def apply(self, obj: Obj, *, force: bool = True, dry_run: bool = False) -> Obj:
        """Server-side apply with field manager ``kfctl``; returns the object the server stored."""
        ...

    def create(self, obj: Obj) -> Obj:
        """Create (POST): ApiError 409 when the object exists. Only for the run lock's Lease and the scratch
        objects of `kfctl check --smoke`: neither is a change to the platform (counted as lock writes)."""
        ...

    def replace(self, obj: Obj) -> Obj:
        """Update (PUT) guarded by ``metadata.resourceVersion``: ApiError 409 when someone wrote it since.
        Only for the run lock's Lease."""
        ...

    def delete_unchanged(self, obj: Obj) -> None:
        """Delete ``obj`` only if nobody wrote it since it was read (UID and resourceVersion preconditions):
        ApiError 409 otherwise, 404 when it is gone. Only for the run lock's Lease."""
        ...

    def delete(self, api_version: str, kind: str, *, namespace: str, name: str, uid: str | None = None) -> bool:
        """Delete (background propagation, UID precondition when given); False when already gone."""
        ...

    def namespaced_resources(self) -> tuple[Resource, ...]:
        """Every namespaced kind the server lets clients list, at its group's preferred version (fresh
        discovery: kinds of CRDs deleted meanwhile are gone). Groups whose discovery fails are left out."""
        ...

    def server_version(self) -> str:
        """The API server's gitVersion ("v1.33.13"), from /version."""
        ...

    def review_access(self, *, verb: str, group: str, resource: str, namespace: str = "") -> Access:
        """Ask the server (a SelfSubjectAccessReview; nothing is stored) whether the current user may do
        ``verb`` on ``resource`` (plural) of ``group`` in ``namespace`` ("" for cluster scope)."""
        ...

    def post_to_service(self, *, namespace: str, name: str, port: int, path: str, body: Obj) -> ProxyAnswer:
        """POST ``body`` to ``https://<name>.<namespace>:<port><path>`` through the API server's service proxy
        (the way the API server itself reaches a webhook); the answer, whoever gave it. Needs ``create`` on
        ``services/proxy``. Nothing is stored."""
        ...

    def port_forward(self, *, namespace: str, pod: str, port: int) -> Tunnel:
        """A TCP connection to ``port`` of pod ``namespace/pod`` through the API server (``pods/portforward``,
        what `kubectl port-forward` opens). Needs ``create`` on ``pods/portforward``. ApiError when the server
        refuses (the pod is gone: 404; not allowed: 403); a port where nothing listens shows in the tunnel's
        ``error()`` once the server has tried it."""
        ...
