"""A :class:`~kfctl.k8s.api.Cluster` whose reads of watched kinds come from memory (:mod:`kfctl.k8s.watch`).

The engine and the health probes keep calling ``get`` and ``list`` as before; this wrapper answers from a
live watch when :class:`~kfctl.k8s.watch.WatchCache` can vouch the answer is not older than a write this
process made, and asks the API server otherwise. A kind read from the server ``reads_before_watch`` times
in a run (a webhook backend's Deployment and EndpointSlices, a PVC's StorageClasses …) is watched from then
on: after a few reads, one LIST + WATCH is cheaper than the polls still to come. Writes always go to the
server, and their answers are remembered for read-your-writes.
"""

from __future__ import annotations

import builtins
import threading
from collections import Counter
from typing import cast

from kfctl.k8s.api import Access, Cluster, Listed, ProxyAnswer, Resource, Tunnel, WatchStream
from kfctl.k8s.watch import MISS, WatchCache
from kfctl.objects import Obj, ObjectKey

READS_BEFORE_WATCH = 3
# Churning kinds only read to explain a failure: a cluster-wide watch of them would cost more than it saves.
# Secrets and ConfigMaps are read only around their applies (a retry), never to judge health: a cluster-wide
# watch would hold every Secret of the cluster in memory (and most installs may not list them cluster-wide).
NEVER_WATCHED = frozenset({("", "Event"), ("", "Pod"), ("events.k8s.io", "Event"), ("", "Secret"), ("", "ConfigMap")})


def equality_selector(selector: str | None) -> dict[str, str] | None:
    """``a=b,c=d`` as a dict; None for anything else (set-based, negated, existence): those go to the server."""
    if not selector:
        return {}
    out: dict[str, str] = {}
    for part in selector.split(","):
        name, sep, value = part.partition("=")
        if not sep or value.startswith("=") or name.endswith("!") or not name.strip():
            return None
        out[name.strip()] = value.strip()
    return out


class CachedCluster:
    """Implements :class:`kfctl.k8s.api.Cluster`: reads from ``cache`` when it can answer, else from ``cluster``."""

    def __init__(self, cluster: Cluster, cache: WatchCache, *, reads_before_watch: int = READS_BEFORE_WATCH) -> None:
        self.inner = cluster
        self.cache = cache
        self.info = cluster.info
        self.stats = cluster.stats
        self.reads_before_watch = reads_before_watch
        self._reads: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def _missed(self, res: Resource) -> None:
        """A read went to the server: after enough of them, watch the kind."""
        if (res.group, res.kind) in NEVER_WATCHED:
            return
        with self._lock:
            self._reads[(res.group, res.kind)] += 1
            due = self._reads[(res.group, res.kind)] == self.reads_before_watch
        if due:
            self.cache.watch(res.api_version, res.kind)

    # --- reads, from memory when possible ------------------------------------------------------------------
    def get(self, api_version: str, kind: str, *, namespace: str, name: str) -> Obj | None:
        res = self.inner.resource(api_version, kind)
        found = self.cache.read(ObjectKey(res.group, kind, namespace if res.namespaced else "", name))
        if found is not MISS:
            return cast("Obj | None", found)
        self._missed(res)
        return self.inner.get(api_version, kind, namespace=namespace, name=name)

    def list(
        self, api_version: str, kind: str, *, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Obj]:
        res = self.inner.resource(api_version, kind)
        labels = equality_selector(label_selector)
        if labels is not None:
            found = self.cache.read_all(res.group, kind, namespace if res.namespaced else None, labels)
            if found is not MISS:
                return cast("builtins.list[Obj]", found)
        self._missed(res)
        return self.inner.list(api_version, kind, namespace=namespace, label_selector=label_selector)

    # --- writes, remembered ------------------------------------------------------------------------------
    def apply(self, obj: Obj, *, force: bool = True, dry_run: bool = False) -> Obj:
        out = self.inner.apply(obj, force=force, dry_run=dry_run)
        if not dry_run:
            self.cache.wrote(out)
        return out

    def create(self, obj: Obj) -> Obj:
        out = self.inner.create(obj)
        self.cache.wrote(out)
        return out

    def replace(self, obj: Obj) -> Obj:
        out = self.inner.replace(obj)
        self.cache.wrote(out)
        return out

    # --- everything else, as is ---------------------------------------------------------------------------
    def resource(self, api_version: str, kind: str) -> Resource:
        return self.inner.resource(api_version, kind)

    def resource_for_key(self, key: ObjectKey) -> Resource:
        return self.inner.resource_for_key(key)

    def invalidate(self, group: str) -> None:
        self.inner.invalidate(group)

    def list_metadata(self, api_version: str, kind: str, *, namespace: str | None = None) -> builtins.list[Obj]:
        return self.inner.list_metadata(api_version, kind, namespace=namespace)

    def list_with_version(self, api_version: str, kind: str, *, namespace: str | None = None) -> Listed:
        return self.inner.list_with_version(api_version, kind, namespace=namespace)

    def watch(
        self, api_version: str, kind: str, *, namespace: str | None, resource_version: str, timeout_seconds: int
    ) -> WatchStream:
        return self.inner.watch(
            api_version, kind, namespace=namespace, resource_version=resource_version, timeout_seconds=timeout_seconds
        )

    def delete_unchanged(self, obj: Obj) -> None:
        self.inner.delete_unchanged(obj)

    def delete(self, api_version: str, kind: str, *, namespace: str, name: str, uid: str | None = None) -> bool:
        return self.inner.delete(api_version, kind, namespace=namespace, name=name, uid=uid)

    def namespaced_resources(self) -> tuple[Resource, ...]:
        return self.inner.namespaced_resources()

    def server_version(self) -> str:
        return self.inner.server_version()

    def review_access(self, *, verb: str, group: str, resource: str, namespace: str = "") -> Access:
        return self.inner.review_access(verb=verb, group=group, resource=resource, namespace=namespace)

    def post_to_service(self, *, namespace: str, name: str, port: int, path: str, body: Obj) -> ProxyAnswer:
        return self.inner.post_to_service(namespace=namespace, name=name, port=port, path=path, body=body)

    def port_forward(self, *, namespace: str, pod: str, port: int) -> Tunnel:
        return self.inner.port_forward(namespace=namespace, pod=pod, port=port)
