"""A minimal JSON client for the Kubernetes REST API: the one client of kfctl's tests (e2e/, bench/) and of the
test bed's own processes (localcluster, the stand-in, the runtime).

Test code only; kfctl never imports it, and it must never import kfctl: it is the tests' oracle, independent
of kfctl's own client (kfctl/k8s/). It needs neither kubectl nor the official client and its model classes
(nor their import time): it speaks plain JSON over one keep-alive HTTPS connection, authenticated as the
kubeconfig's current context says (client certificate or bearer token).
"""

from __future__ import annotations

import base64
import builtins
import http.client
import json
import os
import ssl
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

JSON = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class ApiError(Exception):
    """An HTTP error answer: its status code, its raw body and, when the body is a Status object, its reason
    ("NotFound", "AlreadyExists", "Invalid", "Conflict" …)."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        self.status = status
        self.body = body
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        answer = parsed if isinstance(parsed, dict) else {}
        self.reason: str | None = answer.get("reason")
        super().__init__(f"{method} {path}: HTTP {status}: {answer.get('message', body)}")


def webhook_not_answering(e: ApiError) -> bool:
    """The API server could not call an admission webhook (HTTP 500, "failed calling webhook"): its backend is
    gone or still starting — unlike a denial, worth another try while an operator starts."""
    return e.status == 500 and "failed calling webhook" in str(e)


class Client:
    """One API server, one connection at a time (a lock makes it usable from several threads)."""

    def __init__(self, kubeconfig: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.kubeconfig = Path(kubeconfig)
        config = yaml.safe_load(self.kubeconfig.read_text())
        context_name = config.get("current-context")
        context = _named(config.get("contexts", []), context_name)["context"]
        cluster = _named(config.get("clusters", []), context["cluster"])["cluster"]
        user = _named(config.get("users", []), context["user"])["user"]

        url = urllib.parse.urlsplit(cluster["server"])
        if url.scheme != "https" or not url.hostname:
            raise ValueError(f"{self.kubeconfig}: only https servers are supported, got {cluster['server']}")
        self.host = url.hostname
        self.port = url.port or 443
        self.base = url.path.rstrip("/")
        self.timeout = timeout
        self._token: str | None = user.get("token")
        self._ssl = self._ssl_context(cluster, user)
        self._conn: http.client.HTTPSConnection | None = None
        self._lock = threading.Lock()

    def _ssl_context(self, cluster: Mapping[str, Any], user: Mapping[str, Any]) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        if cluster.get("insecure-skip-tls-verify"):
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif "certificate-authority-data" in cluster:
            ctx.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        elif "certificate-authority" in cluster:
            ctx.load_verify_locations(cafile=self._relative(cluster["certificate-authority"]))
        cert, key = user.get("client-certificate-data"), user.get("client-key-data")
        if cert and key:
            # ssl only loads a key pair from files: write them to a private temporary directory.
            with tempfile.TemporaryDirectory(prefix="kube-rest-") as tmp:
                cert_file, key_file = Path(tmp, "client.crt"), Path(tmp, "client.key")
                cert_file.write_bytes(base64.b64decode(cert))
                key_file.touch(mode=0o600)
                key_file.write_bytes(base64.b64decode(key))
                ctx.load_cert_chain(cert_file, key_file)
        elif user.get("client-certificate") and user.get("client-key"):
            ctx.load_cert_chain(self._relative(user["client-certificate"]), self._relative(user["client-key"]))
        return ctx

    def _relative(self, path: str) -> str:
        return str(self.kubeconfig.parent / path)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        accept: str = "application/json",
        query: Mapping[str, str] | None = None,
    ) -> JSON:
        payload = None
        headers = {"Accept": accept}
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        status, data = self.send(method, path, payload, headers=headers, query=query)
        if status >= 400:
            raise ApiError(method, path, status, data.decode(errors="replace"))
        return json.loads(data) if data else {}

    def send(
        self,
        method: str,
        path: str,
        payload: bytes | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        query: Mapping[str, str] | None = None,
    ) -> tuple[int, bytes]:
        """One request as it is (status and body, an error status too), e.g. through a Service's `proxy`
        subresource to what a pod serves, with the headers given (the credentials are the kubeconfig's)."""
        url = self.base + path + (("?" + urllib.parse.urlencode(query)) if query else "")
        headers = dict(headers or {})
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        with self._lock:
            for attempt in (1, 2):
                conn = self._conn or http.client.HTTPSConnection(
                    self.host, self.port, context=self._ssl, timeout=self.timeout
                )
                try:
                    conn.request(method, url, body=payload, headers=headers)
                    response = conn.getresponse()
                    data = response.read()
                except (http.client.HTTPException, OSError):
                    conn.close()
                    self._conn = None
                    # A kept-alive connection the server closed meanwhile: one fresh retry.
                    if attempt == 2:
                        raise
                    continue
                self._conn = conn
                break
        return response.status, data

    def watch(self, path: str, *, timeout_seconds: int = 300, resource_version: str | None = None) -> Iterator[JSON]:
        """The events of a watch on the collection at ``path``, until the server ends it after
        ``timeout_seconds``. On a connection of its own: the keep-alive one stays free for requests meanwhile.
        From ``resource_version`` (a LIST's), with bookmarks: the changes since that LIST, and the latest version
        to go on from when the server ends the watch."""
        params = {"watch": "1", "timeoutSeconds": str(timeout_seconds)}
        if resource_version is not None:
            params |= {"resourceVersion": resource_version, "allowWatchBookmarks": "true"}
        query = urllib.parse.urlencode(params)
        headers = {"Accept": "application/json"} | ({"Authorization": f"Bearer {self._token}"} if self._token else {})
        conn = http.client.HTTPSConnection(self.host, self.port, context=self._ssl, timeout=timeout_seconds + 30)
        try:
            conn.request("GET", f"{self.base}{path}?{query}", headers=headers)
            response = conn.getresponse()
            if response.status >= 400:
                raise ApiError("GET", path, response.status, response.read().decode(errors="replace"))
            for line in response:
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()

    def get(self, path: str, **kwargs: Any) -> JSON | None:
        """The object at `path`, or None when it does not exist."""
        try:
            return self.request("GET", path, **kwargs)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def list(self, path: str, **kwargs: Any) -> list[JSON]:
        """Items of a list, or [] when the resource type is not served (yet)."""
        result = self.get(path, **kwargs)
        return list(result.get("items") or []) if result else []

    def create(self, path: str, body: JSON) -> JSON:
        return self.request("POST", path, body)

    def replace(self, path: str, body: JSON) -> JSON:
        return self.request("PUT", path, body)

    def merge_patch(self, path: str, patch: JSON) -> JSON:
        return self.request("PATCH", path, patch, content_type=MERGE_PATCH)

    def json_patch(self, path: str, ops: builtins.list[JSON]) -> JSON:
        return self.request("PATCH", path, ops, content_type=JSON_PATCH)

    def delete(self, path: str) -> None:
        try:
            self.request("DELETE", path)
        except ApiError as e:
            if e.status != 404:
                raise

    def close(self) -> None:
        with self._lock:
            if self._conn:
                self._conn.close()
                self._conn = None


def _named(entries: list[JSON], name: str | None) -> JSON:
    for entry in entries:
        if entry.get("name") == name:
            return entry
    if name is None and len(entries) == 1:
        return entries[0]
    raise ValueError(f"kubeconfig: no entry named {name!r}")
