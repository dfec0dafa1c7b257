"""API versions Kubernetes no longer serves, and what replaced them — facts from the Kubernetes Deprecated API
Migration Guide (kubernetes.io/docs/reference/using-api/deprecation-guide/). A kfctl v1-era render holds
many (kubeflow/manifests v1.2: apiextensions.k8s.io/v1beta1 CRDs, rbac v1beta1 roles …); naming the
replacement turns "the server could not find the requested resource" into something a person can act on.
Data only."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Removed:
    removed_in: str  # the Kubernetes minor that stopped serving it
    use: str  # the apiVersion to use instead; "" when the kind went without a successor


# (apiVersion, kind) → Removed
REMOVED: dict[tuple[str, str], Removed] = {
    **{
        ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"): Removed("1.22", "apiextensions.k8s.io/v1"),
        ("apiregistration.k8s.io/v1beta1", "APIService"): Removed("1.22", "apiregistration.k8s.io/v1"),
        ("certificates.k8s.io/v1beta1", "CertificateSigningRequest"): Removed("1.22", "certificates.k8s.io/v1"),
        ("coordination.k8s.io/v1beta1", "Lease"): Removed("1.22", "coordination.k8s.io/v1"),
        ("extensions/v1beta1", "Ingress"): Removed("1.22", "networking.k8s.io/v1"),
        ("networking.k8s.io/v1beta1", "Ingress"): Removed("1.22", "networking.k8s.io/v1"),
        ("networking.k8s.io/v1beta1", "IngressClass"): Removed("1.22", "networking.k8s.io/v1"),
        ("scheduling.k8s.io/v1beta1", "PriorityClass"): Removed("1.22", "scheduling.k8s.io/v1"),
    },
    **{
        ("admissionregistration.k8s.io/v1beta1", kind): Removed("1.22", "admissionregistration.k8s.io/v1")
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    },
    **{
        ("rbac.authorization.k8s.io/v1beta1", kind): Removed("1.22", "rbac.authorization.k8s.io/v1")
        for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
    },
    **{
        ("storage.k8s.io/v1beta1", kind): Removed("1.22", "storage.k8s.io/v1")
        for kind in ("CSIDriver", "CSINode", "StorageClass", "VolumeAttachment")
    },
    **{
        (api_version, kind): Removed("1.16", "apps/v1")
        for api_version, kinds in (
            ("extensions/v1beta1", ("DaemonSet", "Deployment", "ReplicaSet")),
            ("apps/v1beta1", ("Deployment", "StatefulSet", "ReplicaSet")),
            ("apps/v1beta2", ("DaemonSet", "Deployment", "StatefulSet", "ReplicaSet")),
        )
        for kind in kinds
    },
    ("extensions/v1beta1", "NetworkPolicy"): Removed("1.16", "networking.k8s.io/v1"),
    ("batch/v1beta1", "CronJob"): Removed("1.25", "batch/v1"),
    ("discovery.k8s.io/v1beta1", "EndpointSlice"): Removed("1.25", "discovery.k8s.io/v1"),
    ("events.k8s.io/v1beta1", "Event"): Removed("1.25", "events.k8s.io/v1"),
    ("autoscaling/v2beta1", "HorizontalPodAutoscaler"): Removed("1.25", "autoscaling/v2"),
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"): Removed("1.26", "autoscaling/v2"),
    ("policy/v1beta1", "PodDisruptionBudget"): Removed("1.25", "policy/v1"),
    ("policy/v1beta1", "PodSecurityPolicy"): Removed("1.25", ""),
    ("node.k8s.io/v1beta1", "RuntimeClass"): Removed("1.25", "node.k8s.io/v1"),
    ("storage.k8s.io/v1beta1", "CSIStorageCapacity"): Removed("1.27", "storage.k8s.io/v1"),
}


def replacement(api_version: str, kind: str) -> str:
    """What to say of an apiVersion/kind the cluster does not serve: its removal and successor, if known."""
    r = REMOVED.get((api_version, kind))
    if r is None:
        return ""
    if not r.use:
        return f"removed in Kubernetes {r.removed_in}, without a successor"
    return f"removed in Kubernetes {r.removed_in}; use {r.use}"
