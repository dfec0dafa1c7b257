"""Istio's AuthorizationPolicy and RequestAuthentication at the ingress gateway, from the installed objects. TEST CODE.

Pure functions (istio_gateway.py runs them per request; the unit tests as tables). What applies to the gateway pod:
a policy in the mesh's root namespace (`rootNamespace` of the mesh config, istio-system) or in the pod's own, whose
`selector.matchLabels` are all on the pod (or that has no selector); one with a `targetRef(s)` is for Gateway API
gateways and does not apply. The order is Istio's (the ext_authz filter of CUSTOM policies comes before jwt_authn,
then RBAC): `custom_provider` → `authenticate` → `deny_reason` → `allow_reason`.

- CUSTOM: the provider of the first CUSTOM policy with a matching rule; the gateway then asks that provider (an
  `envoyExtAuthzHttp` entry of the mesh config's `extensionProviders`, istio_gateway.py).
- RequestAuthentication: each `jwtRules` entry takes its token from `fromHeaders` (default `Authorization: Bearer`)
  or `fromParams` (default `access_token`). No token: the request goes on without a principal. A token whose issuer
  no rule names: 401 `Jwt issuer is not configured`. A token that does not verify with its issuer's JWKS (`jwks`,
  `jwksUri`, or the issuer's OIDC discovery, as istiod fetches it): 401 with jws.py's reason. A verified one gives
  the request principal `<iss>/<sub>` and its claims, sets each `outputClaimToHeaders` header from its claim (a
  list joined with ","), and is removed from the request unless `forwardOriginalToken`.
- DENY: 403 `RBAC: access denied` when a rule of a DENY policy matches; ALLOW: when ALLOW policies apply and no
  rule of theirs matches, 403 too. A policy without `rules` matches nothing (so `spec: {}`, the global deny-all,
  only makes ALLOW policies count).
- A rule matches when one of its `from` sources, one of its `to` operations and all of its `when` conditions do
  (each absent part matches). Sources: `requestPrincipals`, `principals`, `namespaces`, `ipBlocks`,
  `remoteIpBlocks` and their `not*` (the gateway has no mTLS peer: no principal, no namespace; the client is on
  loopback). Operations: `hosts`, `ports`, `methods`, `paths` and their `not*`, Istio's string matching (exact,
  `prefix*`, `*suffix`, `*` for presence; paths without the query). Conditions: `request.headers[...]`,
  `request.auth.principal`, `request.auth.claims[...]`, `request.auth.audiences`, `source.ip`,
  `remote.ip`, `destination.port`. A condition key not in that list makes the rule not match in an ALLOW or CUSTOM
  policy and match in a DENY one (the safe side; it is logged).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from kfctl_testbed.istio_routes import JSON, Request, labels_match
from kfctl_testbed.jws import JwtError, unverified_claims, verify

log = logging.getLogger("istio-gateway")

ROOT_NAMESPACE_DEFAULT = "istio-system"
CLIENT_IP = "127.0.0.1"  # every client of the stand-in is on loopback
ACCESS_DENIED = "RBAC: access denied"


@dataclass(frozen=True)
class Workload:
    namespace: str
    labels: dict[str, str]
    root_namespace: str = ROOT_NAMESPACE_DEFAULT
    listen_port: int = 0  # destination.port: the port the gateway process listens on


@dataclass
class Identity:
    """What jwt_authn found: the principal and claims of a verified token, the headers to set and remove."""

    principal: str = ""
    claims: JSON = field(default_factory=dict)
    set_headers: dict[str, str] = field(default_factory=dict)
    remove_headers: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Refused:
    status: int
    reason: str


def applicable(policies: list[JSON], workload: Workload) -> list[JSON]:
    """The policies (AuthorizationPolicy or RequestAuthentication) that apply to the gateway pod."""
    chosen = []
    for policy in policies:
        namespace = policy["metadata"].get("namespace")
        spec = policy.get("spec") or {}
        if namespace not in (workload.namespace, workload.root_namespace):
            continue
        if spec.get("targetRef") or spec.get("targetRefs"):
            continue
        if labels_match((spec.get("selector") or {}).get("matchLabels"), workload.labels):
            chosen.append(policy)
    return sorted(chosen, key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))


# --- string and rule matching -----------------------------------------------------------------------------


def istio_match(pattern: str, value: str | None) -> bool:
    if value is None:
        return False
    if pattern == "*":
        return value != ""
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    if pattern.startswith("*"):
        return value.endswith(pattern[1:])
    return value == pattern


def _any(patterns: list[str], value: str | None) -> bool:
    return any(istio_match(str(p), value) for p in patterns)


def _ip_in(blocks: list[str], ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    return any(address in ipaddress.ip_network(b, strict=False) for b in blocks)


def _pairs(spec: JSON, name: str) -> tuple[list[str] | None, list[str] | None]:
    plural = name[0].upper() + name[1:]
    return spec.get(name), spec.get(f"not{plural}")


def _field_matches(spec: JSON, name: str, test: Callable[[list[str]], bool]) -> bool:
    positive, negative = _pairs(spec, name)
    if positive is not None and not test(positive):
        return False
    return not (negative is not None and test(negative))


def _source_matches(source: JSON, identity: Identity) -> bool:
    return (
        _field_matches(source, "requestPrincipals", lambda p: _any(p, identity.principal or None))
        and _field_matches(source, "principals", lambda p: _any(p, None))
        and _field_matches(source, "namespaces", lambda p: _any(p, None))
        and _field_matches(source, "ipBlocks", lambda b: _ip_in(b, CLIENT_IP))
        and _field_matches(source, "remoteIpBlocks", lambda b: _ip_in(b, CLIENT_IP))
    )


def _operation_matches(operation: JSON, request: Request, workload: Workload) -> bool:
    return (
        _field_matches(operation, "hosts", lambda p: any(istio_match(x.lower(), request.host.lower()) for x in p))
        and _field_matches(operation, "ports", lambda p: str(workload.listen_port) in [str(x) for x in p])
        and _field_matches(operation, "methods", lambda p: _any(p, request.method))
        and _field_matches(operation, "paths", lambda p: _any(p, request.path))
    )


def _claim(claims: JSON, path: str) -> list[str]:
    value: Any = claims
    for part in path.split("]["):
        value = value.get(part.strip("[]")) if isinstance(value, dict) else None
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def condition_values(key: str, request: Request, identity: Identity, workload: Workload) -> list[str] | None:
    """The values a `when` key has for this request ([] when absent); None for a key the stand-in does not know."""
    if key.startswith("request.headers[") and key.endswith("]"):
        value = request.headers.get(key[len("request.headers[") : -1].lower())
        return [] if value is None else [value]
    if key == "request.auth.principal":
        return [identity.principal] if identity.principal else []
    if key.startswith("request.auth.claims[") and key.endswith("]"):
        return _claim(identity.claims, key[len("request.auth.claims[") : -1])
    if key == "request.auth.audiences":
        return _claim(identity.claims, "aud")
    if key in ("source.ip", "remote.ip"):
        return [CLIENT_IP]
    if key == "destination.port":
        return [str(workload.listen_port)]
    return None


def _condition_matches(condition: JSON, request: Request, identity: Identity, workload: Workload) -> bool | None:
    values = condition_values(str(condition.get("key", "")), request, identity, workload)
    if values is None:
        return None
    wanted, unwanted = condition.get("values"), condition.get("notValues")
    if wanted is not None and not any(istio_match(str(p), v) for p in wanted for v in values):
        return False
    return not (unwanted is not None and any(istio_match(str(p), v) for p in unwanted for v in values))


def rule_matches(rule: JSON, request: Request, identity: Identity, workload: Workload, *, action: str) -> bool:
    sources = rule.get("from")
    if sources is not None and not any(_source_matches(s.get("source") or {}, identity) for s in sources):
        return False
    operations = rule.get("to")
    if operations is not None and not any(
        _operation_matches(o.get("operation") or {}, request, workload) for o in operations
    ):
        return False
    for condition in rule.get("when") or []:
        matched = _condition_matches(condition, request, identity, workload)
        if matched is None:
            log.warning("AuthorizationPolicy condition key %r is not supported by the stand-in", condition.get("key"))
            return action == "DENY"
        if not matched:
            return False
    return True


def _matching(
    policies: list[JSON], action: str, request: Request, identity: Identity, workload: Workload
) -> str | None:
    for policy in policies:
        spec = policy.get("spec") or {}
        if spec.get("action", "ALLOW") != action:
            continue
        for i, rule in enumerate(spec.get("rules") or []):
            if rule_matches(rule, request, identity, workload, action=action):
                return (
                    f"AuthorizationPolicy {policy['metadata'].get('namespace')}/{policy['metadata']['name']} rules[{i}]"
                )
    return None


def custom_provider(policies: list[JSON], request: Request, workload: Workload) -> tuple[str, str] | None:
    """(provider name, the policy rule that asks it) for a request a CUSTOM policy sends to its provider."""
    for policy in policies:
        spec = policy.get("spec") or {}
        if spec.get("action") != "CUSTOM":
            continue
        what = _matching([policy], "CUSTOM", request, Identity(), workload)
        if what is not None:
            return str((spec.get("provider") or {}).get("name", "")), what
    return None


def deny_reason(policies: list[JSON], request: Request, identity: Identity, workload: Workload) -> str | None:
    """The DENY rule that matches, if one does."""
    return _matching(policies, "DENY", request, identity, workload)


def allow_reason(policies: list[JSON], request: Request, identity: Identity, workload: Workload) -> str | None:
    """None when the request is allowed; else why not (ALLOW policies apply and none of their rules matches)."""
    allows = [p for p in policies if (p.get("spec") or {}).get("action", "ALLOW") == "ALLOW"]
    if not allows or _matching(allows, "ALLOW", request, identity, workload) is not None:
        return None
    names = ", ".join(f"{p['metadata'].get('namespace')}/{p['metadata']['name']}" for p in allows)
    return f"no rule of the ALLOW policies ({names}) matches"


# --- RequestAuthentication --------------------------------------------------------------------------------


def _token_locations(rule: JSON) -> tuple[list[tuple[str, str]], list[str]]:
    headers = [(str(h["name"]).lower(), str(h.get("prefix", ""))) for h in rule.get("fromHeaders") or []]
    params = [str(p) for p in rule.get("fromParams") or []]
    if not headers and not params:
        return [("authorization", "Bearer ")], ["access_token"]
    return headers, params


def _find_token(rule: JSON, request: Request) -> tuple[str, str | None] | None:
    """(token, the header it came from, or None for a query parameter)."""
    headers, params = _token_locations(rule)
    for name, prefix in headers:
        value = request.headers.get(name)
        if value is not None and value.startswith(prefix):
            return value[len(prefix) :].strip(), name
    query = parse_qs(request.query)
    for param in params:
        if param in query:
            return query[param][0], None
    return None


def authenticate(
    request_authentications: list[JSON], request: Request, jwks_for: Callable[[JSON], JSON]
) -> Identity | Refused:
    """jwt_authn over the applicable RequestAuthentications; `jwks_for(rule)` gives the JWKS of a jwtRules entry."""
    rules = [r for ra in request_authentications for r in (ra.get("spec") or {}).get("jwtRules") or []]
    identity = Identity()
    for rule in rules:
        found = _find_token(rule, request)
        if found is None:
            continue
        token, header = found
        try:
            issuer = unverified_claims(token).get("iss")
        except JwtError as e:
            return Refused(401, str(e))
        matching = [r for r in rules if r.get("issuer") == issuer]
        if not matching:
            return Refused(401, "Jwt issuer is not configured")
        chosen = matching[0]
        try:
            claims = verify(token, jwks_for(chosen), issuer=str(issuer), audiences=list(chosen.get("audiences") or []))
        except JwtError as e:
            return Refused(401, str(e))
        identity.principal = f"{issuer}/{claims.get('sub', '')}"
        identity.claims = claims
        for output in chosen.get("outputClaimToHeaders") or []:
            values = _claim(claims, str(output["claim"]))
            if values:
                identity.set_headers[str(output["header"]).lower()] = ",".join(values)
        if header is not None and not chosen.get("forwardOriginalToken"):
            identity.remove_headers.append(header)
        return identity
    return identity
