"""Routing as Istio's ingress gateway does it from the installed Gateway and VirtualService objects. TEST CODE.

Pure functions over the objects as the API server returns them (istio_gateway.py reads them; the unit tests give
them as tables): which Gateways select the gateway pod, which ports it listens on, and where a request goes.

- A Gateway applies when its `spec.selector` labels are all on the pod (any namespace, as istiod's default
  PILOT_SCOPE_GATEWAY_TO_NAMESPACE=false). Its HTTP servers' port numbers are Service ports: the gateway listens on
  the targetPort of the Service that selects the pod (80 → 8080 for istio-ingressgateway), as Envoy does.
- A VirtualService applies when one of its `gateways` (`<ns>/<name>`, or `<name>` in its own namespace) is such a
  Gateway with a server on the request's port, and one of its `hosts` matches the request's Host (`*`, `*.suffix`,
  exact). Their `http` routes are taken in the VirtualServices' creation order (oldest first, then by name), and
  the catch-all routes (a `/` prefix, or no match at all) go last, as istiod's sortVHostRoutes does, so that
  `/dex/` wins over the central dashboard's `/`.
- A route's `match` entries are OR'ed; one entry's conditions AND'ed: `uri` and `authority` (exact, prefix,
  regex), `method`, `headers`, `queryParams`, `port`, `ignoreUriCase`; `withoutHeaders`. The route answers with
  its `redirect` or `directResponse`, or forwards to its first (heaviest) `route` destination after `rewrite`
  (`uri`: the matched prefix replaced, the whole path for exact and regex matches; `authority`) and `headers.request`
  (`set`, `add`, `remove`). Destination hosts are made FQDNs (`<svc>.<ns>.svc.cluster.local`), a short name in the
  VirtualService's namespace.

Not done: TLS servers, `delegate`, mirroring, retries, timeouts, fault injection, CORS, `headers.response`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

JSON = dict[str, Any]
CLUSTER_DOMAIN = "svc.cluster.local"


@dataclass(frozen=True)
class Request:
    method: str
    target: str  # path with query
    host: str  # the Host header, port stripped
    headers: dict[str, str]  # lower-case names
    port: int  # the Gateway server port it came in on (the Service port, 80)

    @property
    def path(self) -> str:
        return urlsplit(self.target).path or "/"

    @property
    def query(self) -> str:
        return urlsplit(self.target).query


@dataclass(frozen=True)
class Forward:
    host: str  # FQDN of a Service
    port: int | None  # None: the Service's only port
    target: str  # path and query after the rewrite
    authority: str | None  # the rewritten Host, or None to keep the request's
    set_headers: dict[str, str] = field(default_factory=dict)
    add_headers: dict[str, str] = field(default_factory=dict)
    remove_headers: tuple[str, ...] = ()
    what: str = ""  # "VirtualService <ns>/<name> http[<i>]"


@dataclass(frozen=True)
class Respond:
    """A route's redirect or directResponse, or the 404 of no route."""

    status: int
    headers: dict[str, str]
    body: str
    what: str


def labels_match(selector: dict[str, str] | None, labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def _key(obj: JSON) -> str:
    return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


def selected_gateways(gateways: list[JSON], pod_labels: dict[str, str]) -> list[JSON]:
    """The Gateways whose selector picks the gateway pod (one without a selector picks none)."""
    return [
        g for g in gateways if (g.get("spec") or {}).get("selector") and labels_match(g["spec"]["selector"], pod_labels)
    ]


def http_ports(gateways: list[JSON]) -> set[int]:
    """The port numbers of the HTTP servers of these Gateways (TLS servers are not served)."""
    ports = set()
    for gateway in gateways:
        for server in (gateway.get("spec") or {}).get("servers") or []:
            port = server.get("port") or {}
            if str(port.get("protocol", "")).upper() in ("HTTP", "HTTP2") and not server.get("tls"):
                ports.add(int(port["number"]))
    return ports


def listen_ports(server_ports: set[int], services: list[JSON], pod: JSON) -> dict[int, int]:
    """{the port the gateway process listens on: the Gateway server port}: a Service selecting the pod maps its port
    to a targetPort (a number, or a name of the pod's container ports); a port no Service maps is listened on as is."""
    labels = pod["metadata"].get("labels") or {}
    named = {
        p["name"]: int(p["containerPort"])
        for c in pod["spec"]["containers"]
        for p in c.get("ports") or []
        if p.get("name")
    }
    result: dict[int, int] = {}
    for number in sorted(server_ports):
        target = number
        for service in services:
            spec = service.get("spec") or {}
            if service["metadata"].get("namespace") != pod["metadata"].get("namespace"):
                continue
            if not spec.get("selector") or not labels_match(spec["selector"], labels):
                continue
            for port in spec.get("ports") or []:
                if port.get("port") == number:
                    wanted = port.get("targetPort", number)
                    target = named.get(wanted, 0) if isinstance(wanted, str) and not wanted.isdigit() else int(wanted)
        if target:
            result[target] = number
    return result


def _host_matches(pattern: str, host: str) -> bool:
    pattern, host = pattern.lower(), host.lower()
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return pattern == host


def _server_hosts(gateway: JSON, port: int) -> list[str]:
    hosts: list[str] = []
    for server in (gateway.get("spec") or {}).get("servers") or []:
        if int((server.get("port") or {}).get("number", 0)) == port:
            hosts += [h.split("/", 1)[-1] for h in server.get("hosts") or []]
    return hosts


def _string_match(matcher: JSON, value: str | None, *, ignore_case: bool = False) -> bool:
    if value is None:
        return False
    if ignore_case:
        value = value.lower()
    if "exact" in matcher:
        expected = str(matcher["exact"])
        return value == (expected.lower() if ignore_case else expected)
    if "prefix" in matcher:
        expected = str(matcher["prefix"])
        return value.startswith(expected.lower() if ignore_case else expected)
    if "regex" in matcher:
        return re.fullmatch(str(matcher["regex"]), value) is not None
    return True  # an empty matcher: presence


def _match_entry(entry: JSON, request: Request) -> bool:
    ignore_case = bool(entry.get("ignoreUriCase"))
    if "uri" in entry and not _string_match(entry["uri"], request.path, ignore_case=ignore_case):
        return False
    if "authority" in entry and not _string_match(entry["authority"], request.host):
        return False
    if "method" in entry and not _string_match(entry["method"], request.method):
        return False
    if "port" in entry and int(entry["port"]) != request.port:
        return False
    for name, matcher in (entry.get("headers") or {}).items():
        if not _string_match(matcher, request.headers.get(name.lower())):
            return False
    for name, matcher in (entry.get("withoutHeaders") or {}).items():
        if _string_match(matcher, request.headers.get(name.lower())):
            return False
    params = {k: v[0] for k, v in parse_qs(request.query, keep_blank_values=True).items()}
    return all(_string_match(matcher, params.get(name)) for name, matcher in (entry.get("queryParams") or {}).items())


def _matching_entry(route: JSON, request: Request) -> JSON | None:
    entries = route.get("match") or [{}]
    return next((e for e in entries if _match_entry(e, request)), None)


def _is_catch_all(route: JSON) -> bool:
    """istiod's isCatchAllRoute: no match, or a match that is only a `/` prefix (or a `.*`/`*` regex)."""
    entries = route.get("match")
    if not entries:
        return True
    for entry in entries:
        uri = entry.get("uri") or {}
        others = {k for k in entry if k not in ("uri", "name")}
        if not others and (uri == {} or uri.get("prefix") == "/" or uri.get("regex") in ("*", ".*")):
            return True
    return False


def fqdn(host: str, namespace: str) -> str:
    """A destination host as a Service FQDN: `svc` and `svc.ns` are completed; anything longer is kept."""
    parts = host.split(".")
    if len(parts) == 1:
        return f"{host}.{namespace}.{CLUSTER_DOMAIN}"
    if len(parts) == 2:
        return f"{host}.{CLUSTER_DOMAIN}"
    return host


def _rewrite(target: str, matched: JSON, rewrite: JSON) -> str:
    if "uri" not in rewrite:
        return target
    url = urlsplit(target)
    uri = matched.get("uri") or {}
    replaced = len(str(uri["prefix"])) if "prefix" in uri else len(url.path)  # exact and regex: the whole path
    path = str(rewrite["uri"]) + url.path[replaced:]
    return path + (f"?{url.query}" if url.query else "")


def http_routes(
    virtual_services: list[JSON], gateway_keys: set[str], request: Request, gateways: list[JSON]
) -> list[tuple[JSON, int, JSON]]:
    """(VirtualService, index, route) for the request's port and host, in the order Envoy's virtual host holds them."""
    hosts_on_port = {_key(g): _server_hosts(g, request.port) for g in gateways if _key(g) in gateway_keys}
    chosen = []
    for vs in sorted(virtual_services, key=lambda v: (v["metadata"].get("creationTimestamp", ""), _key(v))):
        spec = vs.get("spec") or {}
        namespace = vs["metadata"].get("namespace", "")
        names = {g if "/" in g else f"{namespace}/{g}" for g in spec.get("gateways") or []}
        via = [k for k in names if hosts_on_port.get(k)]
        if not via:
            continue
        server_hosts = [h for k in via for h in hosts_on_port[k]]
        if not any(_host_matches(s, request.host) for s in server_hosts):
            continue
        if not any(_host_matches(h, request.host) for h in spec.get("hosts") or []):
            continue
        chosen += [(vs, i, route) for i, route in enumerate(spec.get("http") or [])]
    return [r for r in chosen if not _is_catch_all(r[2])] + [r for r in chosen if _is_catch_all(r[2])]


def route(request: Request, virtual_services: list[JSON], gateways: list[JSON]) -> Forward | Respond:
    """Where the request goes (gateways: those that select the gateway pod)."""
    keys = {_key(g) for g in gateways}
    for vs, index, http in http_routes(virtual_services, keys, request, gateways):
        matched = _matching_entry(http, request)
        if matched is None:
            continue
        what = f"VirtualService {_key(vs)} http[{index}]"
        if "directResponse" in http:
            response = http["directResponse"]
            return Respond(int(response["status"]), {}, str((response.get("body") or {}).get("string", "")), what)
        if "redirect" in http:
            redirect = http["redirect"]
            url = urlsplit(request.target)
            path = str(redirect.get("uri", url.path))
            authority = str(redirect.get("authority", request.host))
            scheme = str(redirect.get("scheme", "http"))
            location = f"{scheme}://{authority}{path}" + (f"?{url.query}" if url.query else "")
            return Respond(int(redirect.get("redirectCode", 301)), {"location": location}, "", what)
        destinations = http.get("route") or []
        if not destinations:
            return Respond(500, {}, f"{what} has no route", what)
        best = max(destinations, key=lambda d: int(d.get("weight", 100 if len(destinations) == 1 else 0)))
        destination = best["destination"]
        rewrite = http.get("rewrite") or {}
        request_headers = (http.get("headers") or {}).get("request") or {}
        number = (destination.get("port") or {}).get("number")
        return Forward(
            host=fqdn(str(destination["host"]), vs["metadata"].get("namespace", "")),
            port=int(number) if number is not None else None,
            target=_rewrite(request.target, matched, rewrite),
            authority=str(rewrite["authority"]) if "authority" in rewrite else None,
            set_headers={k.lower(): str(v) for k, v in (request_headers.get("set") or {}).items()},
            add_headers={k.lower(): str(v) for k, v in (request_headers.get("add") or {}).items()},
            remove_headers=tuple(h.lower() for h in request_headers.get("remove") or []),
            what=what,
        )
    return Respond(404, {}, "", f"no VirtualService route for {request.host}{request.path} on port {request.port}")
