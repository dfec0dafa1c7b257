"""Where the platform's front door is, and who may log in through it: for `kfctl dashboard` and for the login and
dashboard checks (kfctl.check.login), which forward to the same pod.

The front door is the installed Istio ``Gateway`` (the one the most VirtualServices route through: upstream's
``kubeflow/kubeflow-gateway``, which the central dashboard's, Dex's and oauth2-proxy's routes name), the Service
whose selector picks the pods that Gateway selects (upstream's ``istio-system/istio-ingressgateway``), the port
of that Service the Gateway's HTTP server listens on, and a running pod behind it with the container port the
Service targets: what `kubectl port-forward svc/istio-ingressgateway 8080:80` resolves before it forwards. All of
it is read from the installed objects, none of it assumed. The login is the user of the Secret kfctl generated
for Dex (kfctl.secrets.upstream); its password leaves this module only when the caller asks for it.

Reads only. The forwarding itself is kfctl.k8s.portforward's; printing is the CLI's.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kfctl.errors import HealthError, PlanError
from kfctl.k8s.api import ApiError, Cluster, NoKindMatch
from kfctl.objects import Obj, meta_of
from kfctl.secrets.upstream import LOGIN_SECRET, LOGIN_SECRET_NAMESPACE

ISTIO = "networking.istio.io"
# The versions Istio serves its networking kinds at, newest first (v1 since Istio 1.22; v1alpha3 in every one).
ISTIO_VERSIONS = ("v1", "v1beta1", "v1alpha3")
HTTP_PROTOCOLS = ("HTTP", "HTTP2")
HINT_NO_GATEWAY = (
    "install the platform's ingress: upstream's full platform has it (kfctl init --upstream v1.11.0 writes a KfDef "
    "with istio-install and kubeflow-istio-resources), then kfctl apply APPDIR"
)


@dataclass(frozen=True)
class Ingress:
    """The platform's front door, resolved to the pod port a port-forward reaches."""

    gateway: str  # namespace/name of the Gateway
    selector: Mapping[str, str]  # the Gateway's spec.selector
    service: str  # namespace/name of the Service whose selector picks the Gateway's pods
    service_port: int
    namespace: str  # the pod's
    pod: str
    pod_port: int

    def describe(self) -> str:
        return (
            f"Gateway {self.gateway} → Service {self.service}:{self.service_port} → "
            f"pod {self.namespace}/{self.pod}:{self.pod_port}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "gateway": self.gateway,
            "service": self.service,
            "servicePort": self.service_port,
            "pod": f"{self.namespace}/{self.pod}",
            "podPort": self.pod_port,
        }


@dataclass(frozen=True)
class Login:
    """Who logs in: the user kfctl generated for Dex and where its password is kept (never the value here)."""

    username: str
    secret: str  # namespace/name of the Secret that holds it ("" when kfctl generated none)
    password_key: str = "password"  # noqa: S105 (a key's name)

    @property
    def where(self) -> str:
        ns, name = self.secret.split("/", 1)
        return f"kubectl -n {ns} get secret {name} -o jsonpath='{{.data.{self.password_key}}}' | base64 -d"

    def as_dict(self) -> dict[str, Any]:
        return {"username": self.username, "passwordSecret": self.secret, "passwordKey": self.password_key}


def find_ingress(cluster: Cluster) -> Ingress:
    """The Gateway, Service, port and pod to forward to. PlanError (exit 5) naming what was looked for when the
    platform has no gateway; HealthError (exit 8) when it has one but no pod of it runs."""
    version = _served_version(cluster, "Gateway")
    if version is None:
        raise PlanError(
            f"no Istio Gateway: the cluster does not serve Gateway ({ISTIO}, versions {', '.join(ISTIO_VERSIONS)}), "
            "so there is no ingress to forward to",
            hint=HINT_NO_GATEWAY,
        )
    gateways = cluster.list(f"{ISTIO}/{version}", "Gateway")
    if not gateways:
        raise PlanError(
            f"no Istio Gateway: the cluster serves Gateway ({ISTIO}/{version}) but none exists in any namespace",
            hint=HINT_NO_GATEWAY,
        )
    gateway = _front_door(cluster, gateways)
    gw_name = _name(gateway)
    spec = gateway.get("spec") or {}
    selector = {str(k): str(v) for k, v in (spec.get("selector") or {}).items()}
    if not selector:
        raise PlanError(f"Gateway {gw_name} has no spec.selector: it names no ingress pods to forward to")
    numbers = [
        int((s.get("port") or {}).get("number") or 0)
        for s in spec.get("servers") or []
        if str((s.get("port") or {}).get("protocol") or "").upper() in HTTP_PROTOCOLS
    ]
    services = [
        s
        for s in cluster.list("v1", "Service")
        if (sel := (s.get("spec") or {}).get("selector") or {}) and _within(selector, sel)
    ]
    if not services:
        raise PlanError(
            f"Gateway {gw_name} selects pods {_labels(selector)}, but no Service in any namespace selects them "
            "(looked for a Service whose spec.selector includes those labels)",
            hint="the ingress gateway's Service is missing: kfctl status APPDIR names what is not applied",
        )
    services.sort(key=lambda s: (not _port_of(s, numbers), _name(s)))
    service = services[0]
    port = _port_of(service, numbers) or _first_port(service)
    if port is None:
        raise PlanError(f"Service {_name(service)} (selected by Gateway {gw_name}) has no port")
    namespace = str(service["metadata"].get("namespace") or "")
    pods = cluster.list("v1", "Pod", namespace=namespace, label_selector=_labels(service["spec"]["selector"]))
    running = sorted((p for p in pods if _phase(p) == "Running"), key=lambda p: (not _ready(p), _name(p)))
    if not running:
        states = ", ".join(f"{p['metadata']['name']} {_phase(p)}" for p in pods) or "none exists"
        raise HealthError(
            f"no running pod behind Service {_name(service)} (the ingress of Gateway {gw_name}): {states}",
            hint="kfctl status APPDIR says why its Deployment is not available (kubectl get pods -n "
            f"{namespace} -l {_labels(service['spec']['selector'])})",
        )
    pod = running[0]
    return Ingress(
        gateway=gw_name,
        selector=selector,
        service=_name(service),
        service_port=int(port["port"]),
        namespace=namespace,
        pod=str(pod["metadata"]["name"]),
        pod_port=_target_port(port, pod),
    )


def login_of(cluster: Cluster) -> Login | None:
    """The user kfctl generated for Dex (None when this platform has no such Secret: not installed by kfctl, or
    by a kfctl before it generated them)."""
    live = cluster.get("v1", "Secret", namespace=LOGIN_SECRET_NAMESPACE, name=LOGIN_SECRET)
    if live is None:
        return None
    user = _decoded((live.get("data") or {}).get("username"))
    return Login(user, f"{LOGIN_SECRET_NAMESPACE}/{LOGIN_SECRET}")


def password_of(cluster: Cluster, login: Login) -> str:
    """The password itself: only for `--show-password` and for the login check, which never shows it."""
    ns, name = login.secret.split("/", 1)
    live = cluster.get("v1", "Secret", namespace=ns, name=name) or {}
    return _decoded((live.get("data") or {}).get(login.password_key))


def _decoded(value: object) -> str:
    try:
        return base64.b64decode(str(value or "")).decode()
    except ValueError:
        return ""


def _served_version(cluster: Cluster, kind: str) -> str | None:
    for version in ISTIO_VERSIONS:
        try:
            cluster.resource(f"{ISTIO}/{version}", kind)
        except (NoKindMatch, ApiError):
            continue
        return version
    return None


def _front_door(cluster: Cluster, gateways: list[Obj]) -> Obj:
    """The Gateway the most VirtualServices route through (ties: by namespace/name); the only one if one."""
    counts: dict[str, int] = {}
    version = _served_version(cluster, "VirtualService")
    if len(gateways) > 1 and version is not None:
        for vs in cluster.list(f"{ISTIO}/{version}", "VirtualService"):
            ns = str(vs["metadata"].get("namespace") or "")
            for ref in (vs.get("spec") or {}).get("gateways") or []:
                ref = str(ref)
                if ref != "mesh":
                    full = ref if "/" in ref else f"{ns}/{ref}"
                    counts[full] = counts.get(full, 0) + 1
    return sorted(gateways, key=lambda g: (-counts.get(_name(g), 0), _name(g)))[0]


def _within(gateway_selector: Mapping[str, str], service_selector: Mapping[str, Any]) -> bool:
    """A Service picks only pods the Gateway selects: its selector holds every label of the Gateway's."""
    return all(str(service_selector.get(k)) == v for k, v in gateway_selector.items())


def _port_of(service: Obj, numbers: list[int]) -> dict[str, Any] | None:
    for p in (service.get("spec") or {}).get("ports") or []:
        if int(p.get("port") or 0) in numbers:
            return dict(p)
    return None


def _first_port(service: Obj) -> dict[str, Any] | None:
    ports = (service.get("spec") or {}).get("ports") or []
    return dict(ports[0]) if ports else None


def _target_port(port: Mapping[str, Any], pod: Obj) -> int:
    """The Service port's targetPort in ``pod``: a number, or a name its containers give a port (as kubectl)."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int) or str(target).isdigit():
        return int(target)
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == target:
                return int(p["containerPort"])
    raise PlanError(
        f"pod {pod['metadata'].get('namespace')}/{pod['metadata']['name']} has no container port named {target!r} "
        "(the targetPort of its Service)"
    )


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _name(o: Obj) -> str:
    meta = meta_of(o)
    return f"{meta.get('namespace') or ''}/{meta.get('name')}"


def _labels(selector: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
