"""Webhook backend: the server an admission webhook calls can answer, with a CA the API server trusts.

Not a rule about one object: the engine gathers the facts (the Service's EndpointSlices, the caBundle on
the live webhook configuration, the health of the backing Deployment and of the Certificate named in
``cert-manager.io/inject-ca-from``) into :class:`BackendFacts` and this function judges them.

A backend whose Deployment a run changes serves the old release until the rollout is over: the objects the
webhook admits must be judged by the new server, whose rules may differ (KServe v0.15.0's webhook denies
v0.16.0's ClusterServingRuntime ``kserve-huggingfaceserver-multinode``, "PipelineParallelSize cannot be less
than 2", which v0.16.0 allows). So the backend is ready only when its Deployment has rolled out and the
Service's EndpointSlices list no pod of an older ReplicaSet of it (:func:`previous_rollout_pods`), not even a
terminating one: an endpoint leaves the slice once its pod is gone, so no old server is left to answer, and a
proxy that has not caught up yet fails the call (retried) rather than route it to the old release.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kfctl.health.model import Health, failed, progressing, ready
from kfctl.objects import meta_of

# The Deployment controller writes its current revision on the Deployment and on each ReplicaSet it owns.
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


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
    # Pods of an older ReplicaSet of that Deployment the Service's EndpointSlices still list (previous_rollout_pods).
    old_pods: tuple[str, ...] = ()


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
        if f.deployment is not None and not f.deployment.ready:
            return progressing(
                f"Deployment {f.deployment_name} {f.deployment.message}: its rollout is not over, and the pods "
                "still serving may run the release before it"
            )
        if f.old_pods:
            return progressing(
                f"Service {f.service} still lists {_pods(f.old_pods)} of an older ReplicaSet of Deployment "
                f"{f.deployment_name}: the webhook server of the release before may still answer"
            )
    if f.certificate is not None and not f.certificate.ready:
        return progressing(f"Certificate {f.certificate_name} {f.certificate.message}")
    if f.ca_required and not f.ca_bundle_set:
        return progressing("caBundle not injected yet")
    where = f.service if f.is_url else f"{f.service} ({f.ready_endpoints} ready endpoint(s))"
    return ready(f"backend {where} ready")


def _pods(names: tuple[str, ...]) -> str:
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"pod {shown}" if len(names) == 1 else f"{len(names)} pods ({shown})"


def previous_rollout_pods(
    deployment: Mapping[str, Any], replica_sets: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]]
) -> tuple[str, ...]:
    """The pods of ``deployment``'s older ReplicaSets that ``slices`` (the Service's EndpointSlices) list, in any
    condition (ready, serving or terminating), sorted.

    The current ReplicaSet is the one the Deployment controller gave the Deployment's revision; the others it owns
    (by uid) are older. A ReplicaSet names its pods ``<its name>-<suffix>`` and its name has no dash after the
    Deployment's, so an endpoint's ``targetRef`` names its ReplicaSet. Without a revision (the controller has not
    looked at the Deployment yet) nothing is known: () — the Deployment's own health says it is not rolled out."""
    meta = meta_of(deployment)
    revision = (meta.get("annotations") or {}).get(REVISION_ANNOTATION)
    uid = meta.get("uid")
    if not revision or not uid:
        return ()
    older = []
    for rs in replica_sets:
        rs_meta = meta_of(rs)
        owned = any(ref.get("uid") == uid for ref in rs_meta.get("ownerReferences") or [])
        if owned and (rs_meta.get("annotations") or {}).get(REVISION_ANNOTATION) != revision:
            older.append(f"{rs_meta.get('name')}-")
    if not older:
        return ()
    listed = {
        str(ref.get("name"))
        for s in slices
        for ep in s.get("endpoints") or []
        for ref in [ep.get("targetRef") or {}]
        if ref.get("kind") == "Pod"
    }
    return tuple(sorted(name for name in listed if name.startswith(tuple(older))))
