"""Webhook backend: the server an admission webhook calls can answer, with a CA the API server trusts.

Not a rule about one object: the engine gathers the facts (the Service's EndpointSlices, the caBundle on
the live webhook configuration, the health of the backing Deployment and of the Certificate named in
``cert-manager.io/inject-ca-from``) into :class:`BackendFacts` and this function judges them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kfctl.health.model import Health, failed, progressing, ready


@dataclass(frozen=True)
class BackendFacts:
    service: str  # "ns/name", or the URL for URL webhooks
    is_url: bool = False
    service_exists: bool = True
    ready_endpoints: int = 0
    ca_bundle_set: bool = False
    ca_required: bool = True  # URL webhooks with publicly trusted certs need no caBundle
    deployment: Health | None = None  # of the Deployment whose pods back the Service, when known
    deployment_name: str = ""
    certificate: Health | None = None  # of the inject-ca-from Certificate, when any
    certificate_name: str = ""


def webhook_backend(f: BackendFacts) -> Health:
    if f.deployment is not None and f.deployment.failed:
        return failed(f"Deployment {f.deployment_name}: {f.deployment.message}")
    if f.certificate is not None and f.certificate.failed:
        return failed(f"Certificate {f.certificate_name}: {f.certificate.message}")
    if not f.is_url:
        if not f.service_exists:
            return progressing(f"Service {f.service} does not exist")
        if f.ready_endpoints == 0:
            if f.deployment is not None and not f.deployment.ready:
                return progressing(f"no ready endpoint; Deployment {f.deployment_name} {f.deployment.message}")
            return progressing(f"Service {f.service} has no ready endpoint")
    if f.certificate is not None and not f.certificate.ready:
        return progressing(f"Certificate {f.certificate_name} {f.certificate.message}")
    if f.ca_required and not f.ca_bundle_set:
        return progressing("caBundle not injected yet")
    where = f.service if f.is_url else f"{f.service} ({f.ready_endpoints} ready endpoint(s))"
    return ready(f"backend {where} ready")
