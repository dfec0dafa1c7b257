"""The real cluster client: kubeconfig loading, discovery (REST mapping) and raw REST calls.

The only module that imports ``kubernetes`` (for kubeconfig parsing and its TLS-configured urllib3 pool).
Requests are made directly with that pool rather than through the generated API classes, so that every
kind, built-in or custom, takes one code path, server-side apply sends ``application/apply-patch+yaml``,
and every request is counted (``stats``) — the re-apply "0 writes" promise is checked from these counts.
It never retries and never decides what an error means; the engine does.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import kubernetes.client
import kubernetes.config
import urllib3

from kfctl.errors import ClusterError
from kfctl.k8s.api import (
    FIELD_MANAGER,
    Access,
    ApiError,
    ClusterInfo,
    NoKindMatch,
    NotFound,
    RequestStats,
    Resource,
    Unreachable,
)
from kfctl.k8s.kubeconfig import kubeconfig_paths, load_kubeconfig
from kfctl.objects import Obj, ObjectKey, group_of

REQUEST_TIMEOUT = 30.0
# Metadata only (names, labels, annotations, owners, managers): what an ownership check needs, without the
# specs of every object of a kind. Servers too old for it answer with the full list, which is fine too.
METADATA_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
POOL_SIZE = 32


def connect(*, kubeconfig: str | None, context: str | None) -> KubeClient:
    """Load the kubeconfig (flag, $KUBECONFIG, ~/.kube/config) and build a client; no request is made yet."""
    loaded = load_kubeconfig(kubeconfig_paths(kubeconfig, environ=os.environ, home=Path.home()))
    path = loaded.source
    cfg = kubernetes.client.Configuration()
    try:  # the merge's paths are absolute, so the library needs no base directory
        kubernetes.config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
            loaded.config, context=context, client_configuration=cfg, persist_config=False
        )
    except Exception as e:  # whatever the file holds (bad YAML, wrong shapes), it is the kubeconfig at fault
        where = f"context {context!r} of " if context else ""
        what = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ClusterError(
            f"cannot load {where}kubeconfig {path}: {what}",
            hint="check the file (kubectl config view --kubeconfig FILE shows what is wrong), or pass another",
        ) from e
    name = context or loaded.config.get("current-context") or ""
    cfg.connection_pool_maxsize = POOL_SIZE
    api = kubernetes.client.ApiClient(cfg)
    return KubeClient(api, ClusterInfo(server=str(cfg.host), context=str(name), kubeconfig=path))


class KubeClient:
    """Implements :class:`kfctl.k8s.api.Cluster` over HTTP."""

    def __init__(self, api: Any, info: ClusterInfo) -> None:
        self._api = api
        self._cfg = api.configuration
        self._pool = api.rest_client.pool_manager
        self.info = info
        self.stats = RequestStats()
        self._lock = threading.Lock()
        self._groups: dict[str, list[str]] | None = None  # group -> versions, preferred first
        self._resources: dict[str, dict[str, Resource]] = {}  # "group/version" -> kind -> Resource

    # --- HTTP -------------------------------------------------------------------------------------------
    def _request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        dry_run: bool = False,
        accept: str = "application/json",
        lock: bool = False,
    ) -> Any:
        url = self._cfg.host.rstrip("/") + path + (("?" + urlencode(query)) if query else "")
        headers = {"Accept": accept, "User-Agent": "kfctl"}
        token = self._authorization()
        if token:
            headers["Authorization"] = token
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        self.stats.count(method, dry_run=dry_run, lock=lock)
        try:
            resp = self._pool.request(
                method,
                url,
                body=data,
                headers=headers,
                timeout=urllib3.Timeout(connect=10.0, read=REQUEST_TIMEOUT),
                retries=False,
                preload_content=True,
            )
        except urllib3.exceptions.HTTPError as e:
            raise Unreachable(f"{method} {self._cfg.host}: {e}") from e
        text = resp.data.decode("utf-8", errors="replace")
        if 200 <= resp.status < 300:
            return json.loads(text) if text else {}
        raise _api_error(resp.status, text, resp.headers.get("Retry-After"))

    def _authorization(self) -> str | None:
        """The Authorization header for a bearer token (ServiceAccount tokens, exec and OIDC plugins).

        The client library stores it under ``api_key["BearerToken"]`` (older releases: ``"authorization"``);
        its ``auth_settings()`` knows which, and calls the refresh hook of expiring tokens."""
        for setting in self._cfg.auth_settings().values():
            if setting.get("in") == "header" and str(setting.get("key", "")).lower() == "authorization":
                value = setting.get("value")
                if value:
                    return str(value)
        value = self._cfg.get_api_key_with_prefix("authorization")
        return str(value) if value else None

    # --- discovery ----------------------------------------------------------------------------------------
    def _versions(self, group: str, *, refresh: bool = False) -> list[str]:
        """The group's served versions, preferred first."""
        if group == "":
            return ["v1"]
        with self._lock:
            groups = None if refresh else self._groups
        if groups is None:
            doc = self._request("GET", "/apis")
            groups = {}
            for g in doc.get("groups", []):
                preferred = g["preferredVersion"]["version"]
                others = [v["version"] for v in g.get("versions", []) if v["version"] != preferred]
                groups[g["name"]] = [preferred, *others]
            with self._lock:
                self._groups = groups
        return groups.get(group, [])

    def _group_version(self, group: str, version: str, *, refresh: bool = False) -> dict[str, Resource]:
        gv = f"{group}/{version}" if group else version
        with self._lock:
            cached = None if refresh else self._resources.get(gv)
        if cached is not None:
            return cached
        path = f"/apis/{gv}" if group else f"/api/{version}"
        try:
            doc = self._request("GET", path)
        except NotFound:
            doc = {"resources": []}
        kinds: dict[str, Resource] = {}
        for r in doc.get("resources", []):
            if "/" in r["name"]:
                continue  # subresources
            kinds[r["kind"]] = Resource(group, version, r["kind"], r["name"], bool(r.get("namespaced")))
        with self._lock:
            self._resources[gv] = kinds
        return kinds

    def resource(self, api_version: str, kind: str) -> Resource:
        group = group_of(api_version)
        version = api_version.split("/", 1)[1] if "/" in api_version else api_version
        found = self._group_version(group, version).get(kind)
        if found is None:
            found = self._group_version(group, version, refresh=True).get(kind)
        if found is None:
            raise NoKindMatch(group, version, kind)
        return found

    def resource_for_key(self, key: ObjectKey) -> Resource:
        """The mapping at the preferred version that serves the kind (a group's kinds may differ by version)."""
        versions = self._versions(key.group) or self._versions(key.group, refresh=True)
        for version in versions:
            found = self._group_version(key.group, version).get(key.kind)
            if found is not None:
                return found
        for version in self._versions(key.group, refresh=True):
            found = self._group_version(key.group, version, refresh=True).get(key.kind)
            if found is not None:
                return found
        raise NoKindMatch(key.group, versions[0] if versions else "", key.kind)

    def invalidate(self, group: str) -> None:
        with self._lock:
            self._groups = None
            for gv in [gv for gv in self._resources if gv.split("/")[0] == group and "/" in gv]:
                del self._resources[gv]

    # --- objects --------------------------------------------------------------------------------------------
    def _path(self, res: Resource, *, namespace: str | None, name: str | None = None) -> str:
        base = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
        if res.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{res.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
        return base

    def get(self, api_version: str, kind: str, *, namespace: str, name: str) -> Obj | None:
        res = self.resource(api_version, kind)
        try:
            obj: Obj = self._request("GET", self._path(res, namespace=namespace or "default", name=name))
        except NotFound:
            return None
        return obj

    def list_metadata(self, api_version: str, kind: str, *, namespace: str | None = None) -> list[Obj]:
        res = self.resource(api_version, kind)
        doc = self._request("GET", self._path(res, namespace=namespace), accept=METADATA_LIST)
        items: list[Obj] = doc.get("items") or []
        for item in items:  # PartialObjectMetadata says its own kind; make it look like the object
            item["apiVersion"], item["kind"] = res.api_version, kind
        return items

    def list(
        self, api_version: str, kind: str, *, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Obj]:
        res = self.resource(api_version, kind)
        query = {"labelSelector": label_selector} if label_selector else None
        doc = self._request("GET", self._path(res, namespace=namespace), query=query)
        items: list[Obj] = doc.get("items") or []
        for item in items:  # list items lack apiVersion/kind
            item.setdefault("apiVersion", res.api_version)
            item.setdefault("kind", kind)
        return items

    def apply(self, obj: Obj, *, force: bool = True, dry_run: bool = False) -> Obj:
        res = self.resource(str(obj["apiVersion"]), str(obj["kind"]))
        meta = obj.get("metadata") or {}
        query = {"fieldManager": FIELD_MANAGER, "force": "true" if force else "false"}
        if dry_run:
            query["dryRun"] = "All"
        path = self._path(res, namespace=meta.get("namespace") or "default", name=str(meta["name"]))
        out: Obj = self._request(
            "PATCH", path, query=query, body=obj, content_type="application/apply-patch+yaml", dry_run=dry_run
        )
        return out

    def create(self, obj: Obj) -> Obj:
        res = self.resource(str(obj["apiVersion"]), str(obj["kind"]))
        path = self._path(res, namespace=(obj.get("metadata") or {}).get("namespace") or "default")
        out: Obj = self._request("POST", path, body=obj, lock=True)
        return out

    def replace(self, obj: Obj) -> Obj:
        res = self.resource(str(obj["apiVersion"]), str(obj["kind"]))
        meta = obj.get("metadata") or {}
        path = self._path(res, namespace=meta.get("namespace") or "default", name=str(meta["name"]))
        out: Obj = self._request("PUT", path, body=obj, lock=True)
        return out

    def delete_unchanged(self, obj: Obj) -> None:
        res = self.resource(str(obj["apiVersion"]), str(obj["kind"]))
        meta = obj.get("metadata") or {}
        path = self._path(res, namespace=meta.get("namespace") or "default", name=str(meta["name"]))
        body = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "preconditions": {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")},
        }
        self._request("DELETE", path, body=body, lock=True)

    def delete(self, api_version: str, kind: str, *, namespace: str, name: str, uid: str | None = None) -> bool:
        res = self.resource(api_version, kind)
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            self._request("DELETE", self._path(res, namespace=namespace or "default", name=name), body=body)
        except NotFound:
            return False
        return True

    def namespaced_resources(self) -> tuple[Resource, ...]:
        docs: list[tuple[str, str, Any]] = [("", "v1", self._request("GET", "/api/v1"))]
        for g in self._request("GET", "/apis").get("groups", []):
            version = g["preferredVersion"]["version"]
            try:
                docs.append((g["name"], version, self._request("GET", f"/apis/{g['name']}/{version}")))
            except ApiError:
                continue  # an aggregated API whose backend is down: nothing of it can be listed either
        return tuple(
            Resource(group, version, r["kind"], r["name"], True)
            for group, version, doc in docs
            for r in doc.get("resources", [])
            if "/" not in r["name"] and r.get("namespaced") and "list" in (r.get("verbs") or [])
        )

    def server_version(self) -> str:
        return str(self._request("GET", "/version").get("gitVersion", ""))

    def review_access(self, *, verb: str, group: str, resource: str, namespace: str = "") -> Access:
        attributes = {"verb": verb, "group": group, "resource": resource}
        if namespace:
            attributes["namespace"] = namespace
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
        # A review is answered, not stored: counted with the dry runs, not as a write to the platform.
        status = (
            self._request(
                "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=body, dry_run=True
            ).get("status")
            or {}
        )
        return Access(bool(status.get("allowed")), str(status.get("reason") or status.get("evaluationError") or ""))


def _api_error(status: int, text: str, retry_after: str | None) -> ApiError:
    try:
        doc = json.loads(text)
    except ValueError:
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    message = str(doc.get("message") or text.strip() or f"HTTP {status}")
    if status == 404:
        return NotFound(message)
    seconds: float | None = None
    if retry_after:
        try:
            seconds = float(retry_after)
        except ValueError:
            seconds = None
    details = doc.get("details") or {}
    return ApiError(
        status,
        message,
        reason=str(doc.get("reason") or ""),
        retry_after=seconds,
        causes=list(details.get("causes") or []),
    )
