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
    Listed,
    NotFound,
    ProxyAnswer,
    RequestStats,
    Resource,
    Unreachable,
    WatchStream,
)
from kfctl.k8s.discovery import Discovery
from kfctl.k8s.kubeconfig import kubeconfig_paths, load_kubeconfig
from kfctl.k8s.portforward import Tunnel, handshake_status
from kfctl.k8s.stream import HttpWatchStream
from kfctl.objects import Obj, ObjectKey, group_of, meta_of

REQUEST_TIMEOUT = 30.0
# Metadata only (names, labels, annotations, owners, managers): what an ownership check needs, without the
# specs of every object of a kind. Servers too old for it answer with the full list, which is fine too.
METADATA_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
POOL_SIZE = 32
WATCH_READ_GRACE = 30.0  # seconds past a watch's timeoutSeconds before a silent stream counts as dead


def connect(*, kubeconfig: str | None, context: str | None) -> KubeClient:
    """Load the kubeconfig (flag, $KUBECONFIG, ~/.kube/config) and build a client; no request is made yet."""
    loaded = load_kubeconfig(kubeconfig_paths(kubeconfig, environ=os.environ, home=Path.home()))
    path = loaded.source
    known = [str(c.get("name")) for c in loaded.config.get("contexts") or [] if isinstance(c, dict)]
    if context and context not in known:
        raise ClusterError(
            f"kubeconfig {path} has no context {context!r}"
            + (f"; its contexts: {', '.join(known)}" if known else "; it has no contexts"),
            hint="pass one of them with --context (kubectl config get-contexts lists them)",
        )
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
        self._discovery = Discovery(self._discovery_get)

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
        stream: float | None = None,
    ) -> Any:
        """The decoded JSON answer; with ``stream`` (a watch) the open response instead, whose reads may be
        up to ``stream`` seconds apart: a watch is quiet while nothing changes, which is no reason to end it."""
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
                timeout=urllib3.Timeout(connect=10.0, read=stream or REQUEST_TIMEOUT),
                retries=False,
                preload_content=stream is None,
            )
        except urllib3.exceptions.HTTPError as e:
            raise Unreachable(f"{method} {self._cfg.host}: {e}") from e
        if stream is not None and 200 <= resp.status < 300:
            return resp
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

    # --- discovery (kfctl.k8s.discovery) ------------------------------------------------------------------
    def _discovery_get(self, path: str, accept: str) -> Any:
        return self._request("GET", path, accept=accept)

    def resource(self, api_version: str, kind: str) -> Resource:
        group = group_of(api_version)
        version = api_version.split("/", 1)[1] if "/" in api_version else api_version
        return self._discovery.resource(group, version, kind)

    def resource_for_key(self, key: ObjectKey) -> Resource:
        """The mapping at the preferred version that serves the kind (a group's kinds may differ by version)."""
        return self._discovery.preferred(key.group, key.kind)

    def invalidate(self, group: str) -> None:
        self._discovery.invalidate(group)

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

    def list_with_version(self, api_version: str, kind: str, *, namespace: str | None = None) -> Listed:
        res = self.resource(api_version, kind)
        doc = self._request("GET", self._path(res, namespace=namespace))
        items: list[Obj] = doc.get("items") or []
        for item in items:  # list items lack apiVersion/kind
            item.setdefault("apiVersion", res.api_version)
            item.setdefault("kind", kind)
        return Listed(items, str(meta_of(doc).get("resourceVersion") or ""))

    def watch(
        self, api_version: str, kind: str, *, namespace: str | None, resource_version: str, timeout_seconds: int
    ) -> WatchStream:
        res = self.resource(api_version, kind)
        query = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(timeout_seconds),
        }
        # The server ends the stream after timeoutSeconds; the read timeout only guards against a dead peer.
        resp = self._request(
            "GET", self._path(res, namespace=namespace), query=query, stream=timeout_seconds + WATCH_READ_GRACE
        )
        return HttpWatchStream(resp, api_version=res.api_version, kind=kind)

    def apply(self, obj: Obj, *, force: bool = True, dry_run: bool = False) -> Obj:
        res = self.resource(str(obj["apiVersion"]), str(obj["kind"]))
        meta = meta_of(obj)
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
        path = self._path(res, namespace=meta_of(obj).get("namespace") or "default")
        out: Obj = self._request("POST", path, body=obj, lock=True)
        return out

    def replace(self, obj: Obj) -> Obj:
        res = self.resource(str(obj["apiVersion"]), str(obj["kind"]))
        meta = meta_of(obj)
        path = self._path(res, namespace=meta.get("namespace") or "default", name=str(meta["name"]))
        out: Obj = self._request("PUT", path, body=obj, lock=True)
        return out

    def delete_unchanged(self, obj: Obj) -> None:
        res = self.resource(str(obj["apiVersion"]), str(obj["kind"]))
        meta = meta_of(obj)
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
        return self._discovery.namespaced_resources()

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

    def post_to_service(self, *, namespace: str, name: str, port: int, path: str, body: Obj) -> ProxyAnswer:
        svc = f"https:{quote(name, safe='')}:{port}"
        url = f"{self._cfg.host.rstrip('/')}/api/v1/namespaces/{quote(namespace, safe='')}/services/{svc}/proxy{path}"
        headers = {"Accept": "application/json", "Content-Type": "application/json", "User-Agent": "kfctl"}
        token = self._authorization()
        if token:
            headers["Authorization"] = token
        self.stats.count("POST", dry_run=True)  # answered, never stored
        try:
            resp = self._pool.request(
                "POST",
                url,
                body=json.dumps(body).encode(),
                headers=headers,
                timeout=urllib3.Timeout(connect=10.0, read=REQUEST_TIMEOUT),
                retries=False,
            )
        except urllib3.exceptions.HTTPError as e:
            raise Unreachable(f"POST {self._cfg.host}: {e}") from e
        text = resp.data.decode("utf-8", errors="replace")
        return ProxyAnswer(resp.status, _is_status(text), text[:500])

    def port_forward(self, *, namespace: str, pod: str, port: int) -> Tunnel:
        """Over WebSocket (the ``v4.channel.k8s.io`` streams of the client library's ``PortForward``): one
        connection per tunnel, as the library carries one TCP stream per port and connection."""
        from kubernetes.client.exceptions import ApiException
        from kubernetes.stream import ws_client

        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(pod, safe='')}/portforward"
        url = self._cfg.host.rstrip("/") + path + "?" + urlencode({"ports": str(port)})
        headers = {"authorization": self._authorization() or ""} if self._authorization() else {}
        self.stats.count("GET")
        try:
            forward = ws_client.portforward_call(self._cfg, "GET", url, headers=headers)  # type: ignore[no-untyped-call]
        except ApiException as e:
            reason = str(e.reason or e)
            status, body = handshake_status(reason)
            if status == 404:
                raise NotFound(404, f"pod {namespace}/{pod} not found (port-forward)") from e
            if status:
                raise _api_error(status, body or f"port-forward to pod {namespace}/{pod}: HTTP {status}", None) from e
            raise Unreachable(f"port-forward to pod {namespace}/{pod} through {self._cfg.host}: {reason}") from e
        return Tunnel(forward.socket(port), error=lambda: str(forward.error(port) or ""), closer=forward.close)


def _is_status(text: str) -> bool:
    """Whether a body is the API server's own answer (a ``Status``) rather than the proxied backend's."""
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("kind") == "Status" and doc.get("apiVersion") == "v1"


def _api_error(status: int, text: str, retry_after: str | None) -> ApiError:
    try:
        doc = json.loads(text)
    except ValueError:
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    message = str(doc.get("message") or text.strip() or f"HTTP {status}")
    if status == 404:
        return NotFound(404, message, reason="NotFound")
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
