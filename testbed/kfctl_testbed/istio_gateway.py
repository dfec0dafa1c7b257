#!/usr/bin/env python3
"""A stand-in for Istio's ingress gateway (Envoy configured by istiod). TEST CODE: kfctl never imports it.

STAND-IN: Istio's Envoy (gcr.io/istio-release/proxyv2:1.28.0 in Kubeflow manifests v1.11.0) cannot be built here
(it is C++ built with Bazel, not a Go module). The process runtime (runtime.py, STANDIN_IMAGES) runs this module for
the gateway's pod instead: an HTTP server in the pod's network namespace that plays the gateway with the
configuration istiod would give it, read from the API server (never hard-coded), and nothing more:

- listens on the targetPort of each HTTP server port of the Gateways that select the pod (istio_routes.py), and
  on 15021 for `/healthz/ready` (the pod's readinessProbe), ready once the objects are read;
- per request, in Envoy's filter order: the CUSTOM AuthorizationPolicy's ext_authz check against the
  `envoyExtAuthzHttp` provider of the mesh config (ConfigMap `istio` of the root namespace, key `mesh`):
  the request's method, `pathPrefix` + path, Host and the `includeRequestHeadersInCheck` headers, no body; a 2xx
  answer lets the request on with the `headersToUpstreamOnAllow` headers of the answer, any other is returned to
  the client (status, body, Location, WWW-Authenticate and `headersToDownstreamOnDeny`), an unreachable provider is
  `statusOnError` (403) unless `failOpen`; then RequestAuthentication (jwt_authn: verify against the issuer's JWKS,
  claims to headers), DENY and ALLOW policies (istio_authz.py); then the VirtualService route (istio_routes.py):
  the rewritten request goes to the destination Service with `x-forwarded-for`, `x-forwarded-proto`,
  `x-request-id` and, after a rewrite, `x-envoy-original-path`, as Envoy adds them;
- reaches Services (the destinations, the ext_authz provider, the issuer's JWKS) by their names, as any process
  of a pod does: the runtime's pod networking (podnet.py) resolves them and leads their cluster IPs to the process
  behind each Service (egress.route).

Every answer it makes itself says `server: istio-envoy-standin`, and its log starts with the line saying what it
stands in for. Not done: TLS, HTTP/2, WebSocket upgrades, request bodies in chunked encoding, retries, timeouts,
access log format, stats.
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import urlsplit

import yaml

from kfctl_testbed import informer, kube_rest
from kfctl_testbed.httpserve import http_server
from kfctl_testbed.istio_authz import (
    ACCESS_DENIED,
    ROOT_NAMESPACE_DEFAULT,
    Identity,
    Refused,
    Workload,
    allow_reason,
    applicable,
    authenticate,
    custom_provider,
    deny_reason,
)
from kfctl_testbed.istio_routes import (
    JSON,
    Forward,
    Request,
    Respond,
    http_ports,
    listen_ports,
    route,
    selected_gateways,
)

log = logging.getLogger("istio-gateway")

STANDS_IN_FOR = "Istio's ingress gateway (Envoy of gcr.io/istio-release/proxyv2, configured by istiod)"
SERVER = "istio-envoy-standin"
HEALTH_PORT = 15021
NETWORKING = "/apis/networking.istio.io/v1beta1"
SECURITY = "/apis/security.istio.io/v1beta1"
COLLECTIONS = (
    f"{NETWORKING}/gateways",
    f"{NETWORKING}/virtualservices",
    f"{SECURITY}/authorizationpolicies",
    f"{SECURITY}/requestauthentications",
    "/api/v1/services",
    "/api/v1/configmaps",
)
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
}
UPSTREAM_SECONDS = 30.0
JWKS_SECONDS = 60.0
# Envoy always returns these of a denying ext_authz answer, whatever headersToDownstreamOnDeny says.
DENY_ALWAYS = ("location", "www-authenticate")

# (host, port) → a connected socket: how the gateway reaches a Service (or, in tests, a local server).
Dialer = Callable[[str, int], socket.socket]


class Reader(Protocol):
    def get(self, path: str, **kwargs: Any) -> JSON | None: ...

    def list(self, path: str, **kwargs: Any) -> list[JSON]: ...


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    what: str = ""  # for the access log: which hop decided


def http_call(
    dialer: Dialer, host: str, port: int, method: str, target: str, headers: list[tuple[str, str]], body: bytes
) -> tuple[int, list[tuple[str, str]], bytes]:
    """One HTTP/1.1 request over a socket from `dialer` (Connection: close), its status, headers and body."""
    connection = http.client.HTTPConnection(host, port, timeout=UPSTREAM_SECONDS)
    connection.sock = dialer(host, port)
    connection.sock.settimeout(UPSTREAM_SECONDS)
    try:
        connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            connection.putheader(name, value)
        connection.putheader("Connection", "close")
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body or None)
        response = connection.getresponse()
        return response.status, list(response.getheaders()), response.read()
    finally:
        connection.close()


def get_json(dialer: Dialer, url: str) -> JSON:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname or ""
    status, _, body = http_call(dialer, host, port, "GET", parts.path or "/", [("host", parts.netloc)], b"")
    if status != 200:
        raise OSError(f"GET {url}: HTTP {status}")
    value = json.loads(body)
    if not isinstance(value, dict):
        raise OSError(f"GET {url}: not a JSON object")
    return value


class JwksCache:
    """The JWKS of each jwtRules entry, as istiod resolves it: inline `jwks`, `jwksUri`, or the issuer's OIDC
    discovery document's `jwks_uri`; kept JWKS_SECONDS."""

    def __init__(self, dialer: Dialer) -> None:
        self.dialer = dialer
        self.cache: dict[str, tuple[float, JSON]] = {}
        self.lock = threading.Lock()

    def __call__(self, rule: JSON) -> JSON:
        if rule.get("jwks"):
            value = json.loads(str(rule["jwks"]))
            return value if isinstance(value, dict) else {}
        issuer = str(rule.get("issuer", ""))
        key = str(rule.get("jwksUri") or issuer)
        with self.lock:
            cached = self.cache.get(key)
        if cached and time.monotonic() - cached[0] < JWKS_SECONDS:
            return cached[1]
        uri = (
            rule.get("jwksUri")
            or get_json(self.dialer, issuer.rstrip("/") + "/.well-known/openid-configuration")["jwks_uri"]
        )
        jwks = get_json(self.dialer, str(uri))
        with self.lock:
            self.cache[key] = (time.monotonic(), jwks)
        return jwks


@dataclass(frozen=True)
class Snapshot:
    """What istiod would have pushed to this gateway: the objects that apply to it and the mesh config."""

    workload: Workload
    gateways: list[JSON]
    virtual_services: list[JSON]
    policies: list[JSON]
    request_authentications: list[JSON]
    services: list[JSON]
    mesh: JSON


def take_snapshot(read: Reader, pod: JSON, listen_port: int = 0) -> Snapshot:
    namespace = pod["metadata"]["namespace"]
    labels = pod["metadata"].get("labels") or {}
    mesh: JSON = {}
    for cm in read.list("/api/v1/configmaps"):
        if cm["metadata"]["name"] == "istio" and "mesh" in (cm.get("data") or {}):
            candidate = yaml.safe_load(cm["data"]["mesh"]) or {}
            if cm["metadata"]["namespace"] == candidate.get("rootNamespace", ROOT_NAMESPACE_DEFAULT):
                mesh = candidate
    workload = Workload(namespace, labels, str(mesh.get("rootNamespace", ROOT_NAMESPACE_DEFAULT)), listen_port)
    return Snapshot(
        workload=workload,
        gateways=selected_gateways(read.list(f"{NETWORKING}/gateways"), labels),
        virtual_services=read.list(f"{NETWORKING}/virtualservices"),
        policies=applicable(read.list(f"{SECURITY}/authorizationpolicies"), workload),
        request_authentications=applicable(read.list(f"{SECURITY}/requestauthentications"), workload),
        services=read.list("/api/v1/services"),
        mesh=mesh,
    )


def _service_port(services: list[JSON], fqdn: str) -> int | None:
    name, namespace = fqdn.split(".")[:2]
    for service in services:
        if service["metadata"]["name"] == name and service["metadata"].get("namespace") == namespace:
            ports = (service.get("spec") or {}).get("ports") or []
            return int(ports[0]["port"]) if len(ports) == 1 else None
    return None


class Gateway:
    """The request pipeline over a snapshot: ext_authz, jwt_authn, RBAC, route, forward."""

    def __init__(self, snapshot: Callable[[int], Snapshot], dialer: Dialer) -> None:
        self.snapshot = snapshot
        self.dialer = dialer
        self.jwks = JwksCache(dialer)

    def handle(self, request: Request, body: bytes, listen_port: int) -> Answer:
        snap = self.snapshot(listen_port)
        headers = dict(request.headers)
        custom = custom_provider(snap.policies, request, snap.workload)
        if custom is not None:
            provider, what = custom
            checked = self.ext_authz(snap.mesh, provider, request, what)
            if isinstance(checked, Answer):
                return checked
            headers.update(checked)
        request = Request(request.method, request.target, request.host, headers, request.port)
        identity = authenticate(snap.request_authentications, request, self.jwks)
        if isinstance(identity, Refused):
            return self.local(identity.status, identity.reason, "RequestAuthentication")
        denied = deny_reason(snap.policies, request, identity, snap.workload)
        if denied is not None:
            return self.local(403, ACCESS_DENIED, denied)
        not_allowed = allow_reason(snap.policies, request, identity, snap.workload)
        if not_allowed is not None:
            return self.local(403, ACCESS_DENIED, not_allowed)
        decision = route(request, snap.virtual_services, snap.gateways)
        if isinstance(decision, Respond):
            answer = Answer(decision.status, list(decision.headers.items()), decision.body.encode(), decision.what)
            answer.headers.append(("server", SERVER))
            return answer
        return self.forward(request, identity, decision, body, snap.services)

    @staticmethod
    def local(status: int, text: str, what: str) -> Answer:
        return Answer(status, [("content-type", "text/plain"), ("server", SERVER)], text.encode(), what)

    def ext_authz(self, mesh: JSON, provider: str, request: Request, what: str) -> dict[str, str] | Answer:
        """The CUSTOM check: headers to add upstream when allowed, else the answer for the client."""
        entry = next((p for p in mesh.get("extensionProviders") or [] if p.get("name") == provider), None)
        config = (entry or {}).get("envoyExtAuthzHttp")
        if config is None:
            log.error("%s names provider %r, which the mesh config has no envoyExtAuthzHttp for", what, provider)
            return self.local(403, ACCESS_DENIED, f"{what}: no envoyExtAuthzHttp provider {provider!r}")
        included = [h.lower() for h in config.get("includeRequestHeadersInCheck") or []]
        check_headers = [("host", request.headers.get("host", request.host))]
        check_headers += [(h, request.headers[h]) for h in included if h in request.headers and h != "host"]
        check_headers += [
            (str(k).lower(), str(v)) for k, v in (config.get("includeAdditionalHeadersInCheck") or {}).items()
        ]
        host = str(config["service"])
        host = host if host.count(".") >= 2 else f"{host}.svc.cluster.local" if "." in host else host
        target = str(config.get("pathPrefix", "")) + request.target
        try:
            status, answer_headers, answer_body = http_call(
                self.dialer, host, int(config["port"]), request.method, target, check_headers, b""
            )
        except OSError as e:
            log.warning("ext_authz %s (%s:%s): %s", provider, host, config["port"], e)
            if config.get("failOpen"):
                return {}
            status_on_error = int(config.get("statusOnError", 403))
            return self.local(status_on_error, f"ext_authz {provider} unreachable", f"{what} → {provider}: {e}")
        lowered = [(k.lower(), v) for k, v in answer_headers]
        if 200 <= status < 300:
            upstream = [h.lower() for h in config.get("headersToUpstreamOnAllow") or []]
            return {k: v for k, v in lowered if k in upstream}
        downstream = {h.lower() for h in config.get("headersToDownstreamOnDeny") or []} | set(DENY_ALWAYS)
        kept = [(k, v) for k, v in lowered if k in downstream and k not in HOP_BY_HOP]
        return Answer(status, kept, answer_body, f"{what} → ext_authz {provider}: {status}")

    def forward(
        self, request: Request, identity: Identity, decision: Forward, body: bytes, services: list[JSON]
    ) -> Answer:
        headers = {k: v for k, v in request.headers.items() if k not in HOP_BY_HOP and k not in identity.remove_headers}
        headers.update(identity.set_headers)
        headers["host"] = decision.authority or request.headers.get("host", request.host)
        forwarded = headers.get("x-forwarded-for")
        headers["x-forwarded-for"] = f"{forwarded}, 127.0.0.1" if forwarded else "127.0.0.1"
        headers["x-forwarded-proto"] = headers.get("x-forwarded-proto", "http")
        headers.setdefault("x-request-id", str(uuid.uuid4()))
        if decision.target != request.target:
            headers["x-envoy-original-path"] = request.target
        for name in decision.remove_headers:
            headers.pop(name, None)
        headers.update(decision.set_headers)
        pairs = list(headers.items()) + list(decision.add_headers.items())
        port = decision.port or _service_port(services, decision.host)
        if port is None:
            return self.local(503, "no healthy upstream", f"{decision.what}: {decision.host} has no single port")
        try:
            status, answer_headers, answer_body = http_call(
                self.dialer, decision.host, port, request.method, decision.target, pairs, body
            )
        except OSError as e:
            log.warning("%s → %s:%d: %s", decision.what, decision.host, port, e)
            return self.local(503, "no healthy upstream", f"{decision.what} → {decision.host}:{port}: {e}")
        kept = [(k, v) for k, v in answer_headers if k.lower() not in HOP_BY_HOP]
        return Answer(status, kept, answer_body, f"{decision.what} → {decision.host}:{port}")


def dial(host: str, port: int) -> socket.socket:
    """A Service by its name, as any process of a pod dials it: the runtime's pod networking (podnet.py) resolves
    `<svc>.<ns>.svc.cluster.local` and leads its cluster IP to the process behind the Service."""
    return socket.create_connection((host, port), timeout=UPSTREAM_SECONDS)


# --- the server -------------------------------------------------------------------------------------------


def make_server(gateway: Gateway, port: int, server_port: int) -> ThreadingHTTPServer:
    """The listener on `port` for the Gateway server port `server_port`."""

    def handle(
        method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        authority = headers.get("host", "")
        host = authority if authority.endswith("]") else authority.rsplit(":", 1)[0]
        answer = gateway.handle(Request(method, target, host, headers, server_port), body, port)
        log.info("STAND-IN gateway: %s %s → %d (%s)", method, target, answer.status, answer.what)
        return answer.status, answer.headers, answer.body

    return http_server(("0.0.0.0", port), handle)  # noqa: S104 (the pod's network namespace: loopback only)


def health_server(ready: Callable[[], bool]) -> ThreadingHTTPServer:
    """Envoy's /healthz/ready on 15021: 200 once the configuration is read."""

    def handle(
        method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        return (200 if target.startswith("/healthz/ready") and ready() else 503), [], b""

    return http_server(("0.0.0.0", HEALTH_PORT), handle)  # noqa: S104 (the pod's network namespace)


def _serve(server: ThreadingHTTPServer) -> None:
    threading.Thread(target=server.serve_forever, name=f"serve {server.server_address}", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True, help="istiod's view of the cluster: the objects it reads")
    parser.add_argument("container_args", nargs=argparse.REMAINDER, help="the container's own arguments (unused)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    log.warning("STAND-IN for %s: routes and authorizes by the installed Istio objects, not Envoy", STANDS_IN_FOR)
    log.info("the container's arguments, unused: %s", " ".join(a for a in args.container_args if a != "--"))
    namespace, name = os.environ.get("POD_NAMESPACE", ""), os.environ.get("POD_NAME", "")
    if not namespace or not name:
        log.error("POD_NAMESPACE and POD_NAME must be set (the gateway Deployment's fieldRef env)")
        return 2
    api = kube_rest.Client(args.kubeconfig)
    read = informer.Cache(api, COLLECTIONS).start()
    pod_path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    pod: JSON | None = None
    while pod is None:
        pod = api.get(pod_path)
        if pod is None:
            time.sleep(1)
    gateway = Gateway(lambda listen_port: take_snapshot(read, pod, listen_port), dial)
    loaded = threading.Event()
    _serve(health_server(loaded.is_set))
    serving: dict[int, ThreadingHTTPServer] = {}
    while True:
        try:
            snap = take_snapshot(read, pod)
            ports = listen_ports(http_ports(snap.gateways), snap.services, pod)
        except (kube_rest.ApiError, OSError) as e:
            log.warning("reading the Istio objects: %s", e)
            time.sleep(1)
            continue
        for listen_port, server_port in ports.items():
            if listen_port not in serving:
                serving[listen_port] = make_server(gateway, listen_port, server_port)
                _serve(serving[listen_port])
                log.info("listening on %d for Gateway server port %d", listen_port, server_port)
        loaded.set()
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
