"""An in-memory stand-in for the API server, implementing kfctl.k8s.api.Cluster for hermetic engine tests.

It is deliberately simple: apply replaces the object's spec (keeping status), kinds of a CRD are served
only once the CRD is Established, and tests script everything else — statuses via ``on_apply`` hooks or
``set_status``, failures via ``fail``. Every request is counted like the real client counts them.

Watches behave as the API server's do: every stored change gets a new resourceVersion and is sent to the open
watches of its kind (ADDED, MODIFIED, DELETED); a watch from a version older than ``compact()`` left is
answered 410 Gone; ``break_watches`` ends the open streams with an error and ``fail_watches`` scripts the
next LIST/WATCH calls' errors. A test that edits ``objects`` in place bypasses all that, as a controller
writing etcd directly would: watchers do not see it.
"""

from __future__ import annotations

import copy
import itertools
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kfctl.k8s.api import (
    Access,
    ApiError,
    ClusterInfo,
    Listed,
    NoKindMatch,
    ProxyAnswer,
    RequestStats,
    Resource,
    Tunnel,
    WatchEvent,
    WatchType,
)
from kfctl.objects import Obj, ObjectKey, group_of, key_of

BUILTIN: dict[tuple[str, str], tuple[str, bool]] = {
    ("", "Namespace"): ("namespaces", False),
    ("apiregistration.k8s.io", "APIService"): ("apiservices", False),
    ("", "Node"): ("nodes", False),
    ("", "ConfigMap"): ("configmaps", True),
    ("", "Secret"): ("secrets", True),
    ("", "Service"): ("services", True),
    ("", "ServiceAccount"): ("serviceaccounts", True),
    ("", "Pod"): ("pods", True),
    ("", "Event"): ("events", True),
    ("", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("apps", "Deployment"): ("deployments", True),
    ("apps", "StatefulSet"): ("statefulsets", True),
    ("apps", "DaemonSet"): ("daemonsets", True),
    ("apps", "ReplicaSet"): ("replicasets", True),
    ("discovery.k8s.io", "EndpointSlice"): ("endpointslices", True),
    ("rbac.authorization.k8s.io", "Role"): ("roles", True),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("rolebindings", True),
    ("rbac.authorization.k8s.io", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("clusterrolebindings", False),
    ("storage.k8s.io", "StorageClass"): ("storageclasses", False),
    ("coordination.k8s.io", "Lease"): ("leases", True),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("customresourcedefinitions", False),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): ("validatingwebhookconfigurations", False),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): ("mutatingwebhookconfigurations", False),
}
VERSIONS = {
    "": "v1",
    "apps": "v1",
    "discovery.k8s.io": "v1",
    "rbac.authorization.k8s.io": "v1",
    "storage.k8s.io": "v1",
    "coordination.k8s.io": "v1",
    "apiextensions.k8s.io": "v1",
    "admissionregistration.k8s.io": "v1",
}

Hook = Callable[[Obj], None]


def served_crd(group: str, kind: str, plural: str) -> Obj:
    """An Established namespaced CRD: the fake cluster serves its kind."""
    return obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        f"{plural}.{group}",
        spec={"group": group, "scope": "Namespaced", "names": {"kind": kind, "plural": plural}},
        status={"conditions": [{"type": "Established", "status": "True"}]},
    )


def established(crd: Obj) -> None:
    crd["status"] = {
        "conditions": [{"type": "Established", "status": "True"}, {"type": "NamesAccepted", "status": "True"}]
    }


def available(dep: Obj) -> None:
    n = (dep.get("spec") or {}).get("replicas", 1)
    dep["status"] = {
        "observedGeneration": dep["metadata"]["generation"],
        "replicas": n,
        "updatedReplicas": n,
        "availableReplicas": n,
        "readyReplicas": n,
    }


class FakeWatch:
    """An open watch of one kind: the events after its resourceVersion, then live ones, until closed, broken
    or ``timeout_seconds`` passed (the server ending it)."""

    END = object()

    def __init__(self, group: str, kind: str, namespace: str | None, timeout_seconds: int) -> None:
        self.group, self.kind, self.namespace = group, kind, namespace
        self.deadline = time.monotonic() + timeout_seconds
        self.queue: queue.Queue[object] = queue.Queue()

    def matches(self, key: ObjectKey) -> bool:
        return (key.group, key.kind) == (self.group, self.kind) and self.namespace in (None, key.namespace)

    def __iter__(self) -> Iterator[WatchEvent]:
        while True:
            try:
                item = self.queue.get(timeout=max(0.0, self.deadline - time.monotonic()))
            except queue.Empty:
                return
            if item is FakeWatch.END:
                return
            if isinstance(item, Exception):
                raise item
            assert isinstance(item, WatchEvent)
            yield item

    def close(self) -> None:
        self.queue.put(FakeWatch.END)


class FakeCluster:
    def __init__(self) -> None:
        self.info = ClusterInfo(server="https://fake.invalid", context="fake", kubeconfig="-")
        self.stats = RequestStats()
        self.objects: dict[ObjectKey, Obj] = {}
        self.writes: list[tuple[str, str]] = []  # (method, key) in order
        self.hooks: dict[str, list[Hook]] = {}  # kind -> hooks run after each (non dry-run) apply
        self.failures: dict[ObjectKey, list[Exception]] = {}
        self._uids = itertools.count(1)
        self._versions = itertools.count(1000)  # resourceVersions, one per stored change
        self.changes: list[tuple[int, ObjectKey, WatchEvent]] = []  # every stored change, for watches to replay
        self.compacted = 0  # watches from an older resourceVersion are answered 410 Gone
        self.watches: list[FakeWatch] = []
        self.watch_failures: list[Exception] = []  # raised by the next list_with_version / watch calls
        self.version = "v1.33.1"  # what /version answers
        # (namespace, service, path) -> what the service proxy answers, in turn (the last one from then on); a
        # backend's 200 for anything else.
        self.proxied: dict[tuple[str, str, str], list[ProxyAnswer]] = {}
        self.proxy_calls: list[tuple[str, str, int, str]] = []
        self.denied: set[tuple[str, str, str, str]] = set()  # (verb, group, plural, namespace) reviews refuse
        self.unserved: set[str] = set()  # apiVersions discovery does not know ("apiextensions.k8s.io/v1beta1")
        # (namespace, pod, port) -> the port on 127.0.0.1 a port-forward to it reaches (a test double's)
        self.forwards: dict[tuple[str, str, int], int] = {}
        self.forward_calls: list[tuple[str, str, int]] = []
        self._lock = threading.RLock()
        self.hooks["Namespace"] = [lambda o: o.setdefault("status", {}).update({"phase": "Active"})]
        self.hooks["Service"] = [lambda o: o["spec"].setdefault("clusterIP", "10.96.0.10")]
        self.hooks["CustomResourceDefinition"] = [established]
        self.hooks["Deployment"] = [available]
        self.put(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "kube-system", "uid": "cluster-1"},
                "status": {"phase": "Active"},
            }
        )

    # --- test controls -------------------------------------------------------------------------------
    def put(self, obj: Obj) -> Obj:
        """Create or replace an object as another actor would (no request counted); watches see it."""
        obj = self._stamped(copy.deepcopy(obj))
        with self._lock:
            key = key_of(obj)
            self._store(key, obj, "MODIFIED" if key in self.objects else "ADDED")
        return obj

    def _stamped(self, obj: Obj) -> Obj:
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{next(self._uids)}")
        meta.setdefault("creationTimestamp", datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        meta.setdefault("generation", 1)
        return obj

    def _store(self, key: ObjectKey, obj: Obj, change: WatchType) -> None:
        """Store (or, for DELETED, drop) under a new resourceVersion and tell the open watches. Holds the lock."""
        version = next(self._versions)
        obj["metadata"]["resourceVersion"] = str(version)
        if change == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        event = WatchEvent(change, copy.deepcopy(obj))
        self.changes.append((version, key, event))
        for w in self.watches:
            if w.matches(key):
                w.queue.put(event)

    def set_status(self, key: ObjectKey, status: dict[str, Any]) -> None:
        """A controller writes an object's status (the status subresource): a new version, watches see it."""
        with self._lock:
            self._store(key, copy.deepcopy(self.objects[key]) | {"status": copy.deepcopy(status)}, "MODIFIED")

    def compact(self) -> None:
        """As etcd compaction does: watches from any version up to now are answered 410 Gone."""
        with self._lock:
            self.compacted = next(self._versions)

    def break_watches(self, error: Exception) -> None:
        """Every open watch stream ends with ``error`` (a connection reset, say)."""
        with self._lock:
            for w in self.watches:
                w.queue.put(error)
            self.watches.clear()

    def fail_watches(self, *errors: Exception) -> None:
        self.watch_failures.extend(errors)

    def on_apply(self, kind: str, hook: Hook | None) -> None:
        """Replace the hooks for a kind (None: objects of the kind get no status at all)."""
        self.hooks[kind] = [hook] if hook else []

    def fail(self, key: ObjectKey, *errors: Exception) -> None:
        self.failures.setdefault(key, []).extend(errors)

    def _scripted_failure(self, key: ObjectKey) -> None:
        """Raise the next error ``fail`` scripted for the key (apply, create and replace honour them)."""
        errors = self.failures.get(key)
        if errors:
            raise errors.pop(0)

    def live(self, key: ObjectKey) -> Obj | None:
        return self.objects.get(key)

    # --- Cluster protocol ----------------------------------------------------------------------------
    def resource(self, api_version: str, kind: str) -> Resource:
        group = group_of(api_version)
        version = api_version.split("/", 1)[-1]
        if api_version in self.unserved:
            raise NoKindMatch(group, version, kind)
        if (group, kind) in BUILTIN:
            plural, namespaced = BUILTIN[(group, kind)]
            return Resource(group, version, kind, plural, namespaced)
        with self._lock:
            for k, crd in self.objects.items():
                if k.kind != "CustomResourceDefinition":
                    continue
                spec = crd.get("spec") or {}
                conds = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
                if spec.get("group") == group and spec["names"]["kind"] == kind and conds.get("Established") == "True":
                    return Resource(group, version, kind, spec["names"]["plural"], spec.get("scope") == "Namespaced")
        raise NoKindMatch(group, version, kind)

    def resource_for_key(self, key: ObjectKey) -> Resource:
        version = VERSIONS.get(key.group, "v1")
        return self.resource(f"{key.group}/{version}" if key.group else version, key.kind)

    def invalidate(self, group: str) -> None:
        pass

    def get(self, api_version: str, kind: str, *, namespace: str, name: str) -> Obj | None:
        self.stats.count("GET")
        res = self.resource(api_version, kind)
        key = ObjectKey(res.group, kind, namespace if res.namespaced else "", name)
        with self._lock:
            obj = self.objects.get(key)
            return copy.deepcopy(obj) if obj else None

    def list(
        self, api_version: str, kind: str, *, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Obj]:
        self.stats.count("GET")
        res = self.resource(api_version, kind)
        return self._select(res, namespace, label_selector)

    def _select(self, res: Resource, namespace: str | None, label_selector: str | None = None) -> list[Obj]:
        wanted = dict(p.split("=", 1) for p in label_selector.split(",")) if label_selector else {}
        with self._lock:
            return [
                copy.deepcopy(o)
                for k, o in sorted(self.objects.items())
                if k.group == res.group
                and k.kind == res.kind
                and (namespace is None or k.namespace == namespace)
                and all(((o.get("metadata") or {}).get("labels") or {}).get(a) == b for a, b in wanted.items())
            ]

    def _scripted_watch_failure(self) -> None:
        with self._lock:
            if self.watch_failures:
                raise self.watch_failures.pop(0)

    def list_with_version(self, api_version: str, kind: str, *, namespace: str | None = None) -> Listed:
        self.stats.count("GET")
        self._scripted_watch_failure()
        res = self.resource(api_version, kind)
        with self._lock:  # items and version from one moment
            return Listed(self._select(res, namespace), str(next(self._versions)))

    def watch(
        self, api_version: str, kind: str, *, namespace: str | None, resource_version: str, timeout_seconds: int
    ) -> FakeWatch:
        self.stats.count("GET")
        self._scripted_watch_failure()
        res = self.resource(api_version, kind)
        since = int(resource_version or 0)
        with self._lock:
            if since < self.compacted:
                raise ApiError(410, f"too old resource version: {since} ({self.compacted})", reason="Expired")
            w = FakeWatch(res.group, kind, namespace if res.namespaced else None, timeout_seconds)
            for version, key, event in self.changes:
                if version > since and w.matches(key):
                    w.queue.put(event)
            self.watches.append(w)
        return w

    def list_metadata(self, api_version: str, kind: str, *, namespace: str | None = None) -> list[Obj]:
        return [
            {"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": o["metadata"]}
            for o in self.list(api_version, kind, namespace=namespace)
        ]

    def apply(self, obj: Obj, *, force: bool = True, dry_run: bool = False) -> Obj:
        self.stats.count("PATCH", dry_run=dry_run)
        key = key_of(obj)
        self.resource(str(obj["apiVersion"]), key.kind)
        with self._lock:
            self._scripted_failure(key)
            if not dry_run:
                self.writes.append(("PATCH", str(key)))
            old = self.objects.get(key)
            new = copy.deepcopy(obj)
            meta = new.setdefault("metadata", {})
            if old:
                meta["uid"] = old["metadata"]["uid"]
                meta["creationTimestamp"] = old["metadata"]["creationTimestamp"]
                changed = {k: v for k, v in obj.items() if k != "metadata"} != {
                    k: v for k, v in old.items() if k not in ("metadata", "status")
                }
                meta["generation"] = old["metadata"].get("generation", 1) + (1 if changed else 0)
                if "status" in old:
                    new["status"] = old["status"]
            if dry_run:
                return new
            stored = self._stamped(new)
            for hook in self.hooks.get(key.kind, []):  # the controllers' answers, in the same version
                hook(stored)
            self._store(key, stored, "MODIFIED" if old else "ADDED")
            return copy.deepcopy(stored)

    def namespaced_resources(self) -> tuple[Resource, ...]:
        self.stats.count("GET")
        out = [
            Resource(group, VERSIONS.get(group, "v1"), kind, plural, True)
            for (group, kind), (plural, namespaced) in sorted(BUILTIN.items())
            if namespaced
        ]
        with self._lock:
            for k, crd in sorted(self.objects.items()):
                spec = crd.get("spec") or {}
                if k.kind == "CustomResourceDefinition" and spec.get("scope") == "Namespaced":
                    out.append(Resource(spec["group"], "v1", spec["names"]["kind"], spec["names"]["plural"], True))
        return tuple(out)

    def create(self, obj: Obj) -> Obj:
        self.stats.count("POST", lock=True)
        key = key_of(obj)
        new = copy.deepcopy(obj)
        new["metadata"].update(uid=f"uid-{next(self._uids)}")
        with self._lock:
            self._scripted_failure(key)
            if key in self.objects:
                raise ApiError(409, f"{key} already exists", reason="AlreadyExists")
            self._store(key, new, "ADDED")
        return copy.deepcopy(new)

    def replace(self, obj: Obj) -> Obj:
        self.stats.count("PUT", lock=True)
        key = key_of(obj)
        with self._lock:
            self._scripted_failure(key)
            old = self.objects.get(key)
            if old is None:
                raise ApiError(404, f"{key} not found", reason="NotFound")
            if (obj.get("metadata") or {}).get("resourceVersion") != old["metadata"].get("resourceVersion"):
                raise ApiError(409, "the object has been modified; please apply your changes", reason="Conflict")
            new = copy.deepcopy(obj)
            new["metadata"].update(uid=old["metadata"]["uid"])
            self._store(key, new, "MODIFIED")
        return copy.deepcopy(new)

    def delete_unchanged(self, obj: Obj) -> None:
        self.stats.count("DELETE", lock=True)
        key = key_of(obj)
        with self._lock:
            old = self.objects.get(key)
            if old is None:
                raise ApiError(404, f"{key} not found", reason="NotFound")
            if old["metadata"].get("resourceVersion") != (obj.get("metadata") or {}).get("resourceVersion"):
                raise ApiError(409, "Precondition failed: ResourceVersion in precondition", reason="Conflict")
            self._store(key, old, "DELETED")

    def delete(self, api_version: str, kind: str, *, namespace: str, name: str, uid: str | None = None) -> bool:
        self.stats.count("DELETE")
        res = self.resource(api_version, kind)
        key = ObjectKey(res.group, kind, namespace if res.namespaced else "", name)
        with self._lock:
            obj = self.objects.get(key)
            if obj is None:
                return False
            if uid and obj["metadata"]["uid"] != uid:
                raise ApiError(409, "Precondition failed: UID in precondition does not match", reason="Conflict")
            self.writes.append(("DELETE", str(key)))
            if obj["metadata"].get("finalizers"):
                obj["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
                self._store(key, obj, "MODIFIED")
                return True
            self._store(key, obj, "DELETED")
            if kind == "Namespace":
                for k in [k for k in self.objects if k.namespace == name]:
                    self._store(k, self.objects[k], "DELETED")
            return True

    def server_version(self) -> str:
        self.stats.count("GET")
        return self.version

    def post_to_service(self, *, namespace: str, name: str, port: int, path: str, body: Obj) -> ProxyAnswer:
        self.stats.count("POST", dry_run=True)
        self.proxy_calls.append((namespace, name, port, path))
        answers = self.proxied.get((namespace, name, path))
        if not answers:
            return ProxyAnswer(200, from_api_server=False)
        return answers.pop(0) if len(answers) > 1 else answers[0]

    def port_forward(self, *, namespace: str, pod: str, port: int) -> Tunnel:
        """As the API server's pods/portforward: 404 for a pod that does not exist; a port of it that
        ``forwards`` does not map, or whose double does not listen, answers on the error stream."""
        self.stats.count("GET")
        self.forward_calls.append((namespace, pod, port))
        if self.live(ObjectKey("", "Pod", namespace, pod)) is None:
            raise ApiError(404, f'pods "{pod}" not found', reason="NotFound")
        said = (
            f"error forwarding port {port} to pod {pod}, uid : failed to connect to localhost:{port} inside "
            "namespace: connection refused"
        )
        target = self.forwards.get((namespace, pod, port))
        if target is not None:
            try:
                sock = socket.create_connection(("127.0.0.1", target), timeout=10)
                sock.settimeout(None)
                return Tunnel(sock)
            except OSError:
                pass
        ours, theirs = socket.socketpair()
        theirs.close()
        return Tunnel(ours, error=lambda: said)

    def review_access(self, *, verb: str, group: str, resource: str, namespace: str = "") -> Access:
        self.stats.count("POST", dry_run=True)
        if (verb, group, resource, namespace) in self.denied:
            return Access(False, "denied by the test")
        return Access(True)


def ready_endpoint(namespace: str, service: str) -> Obj:
    """An EndpointSlice with one ready endpoint behind ``service``: what the endpointslice controller writes once
    a pod behind it is Ready."""
    return obj(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        f"{service}-1",
        namespace,
        labels={"kubernetes.io/service-name": service},
        endpoints=[{"conditions": {"ready": True}}],
    )


def obj(api_version: str, kind: str, name: str, namespace: str = "", **fields: Any) -> Obj:
    """A manifest, tersely: obj("apps/v1", "Deployment", "web", "ns", spec={...})."""
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if "labels" in fields:
        meta["labels"] = fields.pop("labels")
    if "annotations" in fields:
        meta["annotations"] = fields.pop("annotations")
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **fields}


def kfdef_text(*apps: str) -> str:
    """A KfDef `demo` (namespace kubeflow, platform kind) of these built-in catalog components."""
    lines = [
        "apiVersion: kfdef.apps.kubeflow.org/v1",
        "kind: KfDef",
        "metadata: {name: demo, namespace: kubeflow}",
        "spec:",
        "  platform: kind",
        "  applications:",
    ]
    for app in apps:
        lines += [f"  - name: {app}", f"    kustomizeConfig: {{repoRef: {{name: manifests, path: manifests/{app}}}}}"]
    return "\n".join(lines) + "\n"


def write_app(app_dir: Path, *apps: str, rendered: dict[str, str] | None = None) -> Path:
    """APPDIR with kfdef.yaml (see kfdef_text) and, for `--skip-generate` runs, rendered/<app>.yaml as given."""
    app_dir.mkdir(parents=True, exist_ok=True)
    path = app_dir / "kfdef.yaml"
    path.write_text(kfdef_text(*apps))
    if rendered is not None:
        (app_dir / "rendered").mkdir(exist_ok=True)
        for app, text in rendered.items():
            (app_dir / "rendered" / f"{app}.yaml").write_text(text)
    return path


def v1_app(
    name: str, path: str, overlays: list[str] | None = None, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An application of a kfctl v1 KfDef: repo `manifests`, a package path, v1 overlays and parameters."""
    kc: dict[str, Any] = {"repoRef": {"name": "manifests", "path": path}}
    if overlays is not None:
        kc["overlays"] = overlays
    if params:
        kc["parameters"] = [{"name": k, "value": v} for k, v in params.items()]
    return {"name": name, "kustomizeConfig": kc}
