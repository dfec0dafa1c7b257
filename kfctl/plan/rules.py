"""Why X waits for Y: the ordering rules of kfctl as data.

Every edge the planner draws names one of these rules; ``kfctl plan`` prints the rule's phrase next to
the edge. Edges mean "apply after, and wait until the dependency is healthy" unless ``order_only``, which
means "apply after the dependency was accepted by the server" (no health wait). A ``shared`` rule's
dependency is a prerequisite the dependent cannot exist without (its Namespace, CRD, ServiceAccount …):
application ``dependsOn`` never holds such an object back when another application needs it (it is
*hoisted*, see :mod:`kfctl.plan.hoist`), because upstream trees put shared namespaces wherever they like.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EdgeRule:
    name: str
    phrase: str  # how `kfctl plan` explains the edge
    order_only: bool
    shared: bool = False  # the dependency is a structural prerequisite: hoisted past application order


CRD = EdgeRule("crd", "its CRD is Established (then the REST mapping is refreshed)", order_only=False, shared=True)
NAMESPACE = EdgeRule("namespace", "its Namespace is Active", order_only=False, shared=True)
ROLE_REF = EdgeRule("role-ref", "the role it binds exists", order_only=True, shared=True)
POD_REF = EdgeRule("pod-ref", "its pods reference it (ConfigMap/Secret/ServiceAccount)", order_only=True, shared=True)
# The Priority admission plugin rejects a pod whose priorityClassName does not exist yet.
PRIORITY_CLASS = EdgeRule("priority-class", "its pods' PriorityClass exists", order_only=True, shared=True)
STORAGE_CLASS = EdgeRule("storage-class", "its StorageClass exists", order_only=True, shared=True)
WEBHOOK = EdgeRule("webhook", "a failurePolicy=Fail webhook that admits it has a ready backend", order_only=False)
POD_WEBHOOK = EdgeRule(
    "pod-webhook", "a failurePolicy=Fail webhook admits its pods: they are created once its backend answers", False
)
ADMITS_ITS_NEEDS = EdgeRule(
    "admits-its-needs",
    "it would admit the pods of a workload its own backend needs: registered once that workload is Available",
    order_only=False,
)
CONVERSION = EdgeRule("conversion-webhook", "its CRD's conversion webhook backend is ready", order_only=False)
APISERVICE = EdgeRule("apiservice", "the APIService serving its group is Available", order_only=False)
DEPENDS_ON = EdgeRule("depends-on", "its application depends on that one (catalog/KfDef dependsOn)", order_only=False)
HINT = EdgeRule("hint", "annotation kfctl.kubeflow.org/depends-on", order_only=False)
DEPENDS_ON_STANDARD = EdgeRule("hint", "annotation config.kubernetes.io/depends-on", order_only=False)
BACKEND_SERVICE = EdgeRule("backend", "the webhook's Service", order_only=False)
# Rolled out, not only Available: when a run changes the Deployment, the old release's pods serve until they are
# gone, and its webhook may judge (deny) the new release's objects (kfctl.health.webhook).
BACKEND_WORKLOAD = EdgeRule(
    "backend",
    "the Deployment serving the webhook has rolled out, its old pods gone from the Service",
    order_only=False,
)
BACKEND_CERT = EdgeRule(
    "backend", "the Certificate whose CA is injected (cert-manager.io/inject-ca-from) is Ready", False
)
ISSUER = EdgeRule("issuer", "the issuer it names (issuerRef) is Ready", order_only=False)
MOUNTS_CERTIFICATE = EdgeRule(
    "mounts-certificate", "its pods mount the Secret this Certificate makes (they start once it is issued)", True
)
# A workload started before the bindings that grant its ServiceAccount its rights exits on its first "forbidden"
# (KServe's controller: "cannot get resource configmaps"), and the kubelet restarts it after a back-off.
ACCOUNT_BINDING = EdgeRule("account-binding", "it binds a role to the workload's ServiceAccount", order_only=True)
# KServe's controller reads its inferenceservice-config ConfigMap through the API at start, and exits while it is
# missing: no pod spec says so. Helm applies every ConfigMap and Secret before any workload; so does kfctl within
# an application and a namespace.
APP_CONFIG = EdgeRule(
    "app-config", "a ConfigMap or Secret of its application and namespace (a controller may read it)", True
)
OPERAND_CRD = EdgeRule(
    "operand-crd", "its ServiceAccount watches that kind: an operator exits until its CRDs are served", False
)
BACKEND_CONFIG = EdgeRule("backend", "the webhook configuration is registered", order_only=True)
APP_MEMBER = EdgeRule(
    "member", "part of the application (it serves no API, so its dependents wait for all of it)", order_only=False
)
APP_API = EdgeRule("api", "the API the application serves (CRD Established, APIService Available)", order_only=False)
# The kinds that make up an application's API: what its dependents' controllers watch and create.
API_KINDS = frozenset({("apiextensions.k8s.io", "CustomResourceDefinition"), ("apiregistration.k8s.io", "APIService")})
EXTERNAL_CRD = EdgeRule(
    "external", "the cluster serves its kind (an external application's CRDs, checked)", order_only=False
)

HINT_ANNOTATION = "kfctl.kubeflow.org/depends-on"  # kfctl's own: Kind[.group]/namespace/name, comma-separated
# The standard one (cli-utils, kpt, Config Sync), same meaning: <group>/namespaces/<namespace>/<kind>/<name> or, for a
# cluster-scoped object, <group>/<kind>/<name> (the core group empty), comma-separated.
STANDARD_DEPENDS_ON_ANNOTATION = "config.kubernetes.io/depends-on"
INJECT_CA_ANNOTATION = "cert-manager.io/inject-ca-from"

# Where the pod spec sits in each pod-template owner.
POD_SPEC_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): ("spec", "template", "spec"),
    ("apps", "StatefulSet"): ("spec", "template", "spec"),
    ("apps", "DaemonSet"): ("spec", "template", "spec"),
    ("apps", "ReplicaSet"): ("spec", "template", "spec"),
    ("batch", "Job"): ("spec", "template", "spec"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template", "spec"),
    ("", "Pod"): ("spec",),
}

# Resource names of built-in kinds, for matching webhook rules offline (CRDs in the bundle give theirs).
BUILTIN_PLURALS: dict[tuple[str, str], str] = {
    ("", "ConfigMap"): "configmaps",
    ("", "Secret"): "secrets",
    ("", "Service"): "services",
    ("", "ServiceAccount"): "serviceaccounts",
    ("", "Namespace"): "namespaces",
    ("", "Pod"): "pods",
    ("", "PersistentVolumeClaim"): "persistentvolumeclaims",
    ("", "PersistentVolume"): "persistentvolumes",
    ("", "Endpoints"): "endpoints",
    ("", "LimitRange"): "limitranges",
    ("", "ResourceQuota"): "resourcequotas",
    ("apps", "Deployment"): "deployments",
    ("apps", "StatefulSet"): "statefulsets",
    ("apps", "DaemonSet"): "daemonsets",
    ("apps", "ReplicaSet"): "replicasets",
    ("batch", "Job"): "jobs",
    ("batch", "CronJob"): "cronjobs",
    ("rbac.authorization.k8s.io", "Role"): "roles",
    ("rbac.authorization.k8s.io", "RoleBinding"): "rolebindings",
    ("rbac.authorization.k8s.io", "ClusterRole"): "clusterroles",
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): "clusterrolebindings",
    ("networking.k8s.io", "NetworkPolicy"): "networkpolicies",
    ("networking.k8s.io", "Ingress"): "ingresses",
    ("policy", "PodDisruptionBudget"): "poddisruptionbudgets",
    ("storage.k8s.io", "StorageClass"): "storageclasses",
    ("scheduling.k8s.io", "PriorityClass"): "priorityclasses",
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "customresourcedefinitions",
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): "mutatingwebhookconfigurations",
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): "validatingwebhookconfigurations",
    ("apiregistration.k8s.io", "APIService"): "apiservices",
    ("autoscaling", "HorizontalPodAutoscaler"): "horizontalpodautoscalers",
}

WEBHOOK_CONFIG_KINDS = frozenset(
    {
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    }
)


def guess_plural(kind: str) -> str:
    """English plural of a kind as Kubernetes forms it, for kinds neither built in nor in the bundle."""
    low = kind.lower()
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return low + "es"
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return low[:-1] + "ies"
    return low + "s"


# Delete order (kfctl delete, and prune): webhooks first so nothing calls a backend being removed; custom
# resources while their controllers still run (finalizers); then their CRDs; workloads; the rest; RBAC;
# storage; namespaces last (deleting one deletes everything left in it).
DELETE_PHASES: tuple[str, ...] = (
    "webhook configurations and API services",
    "custom resources",
    "custom resource definitions",
    "workloads",
    "services and configuration",
    "RBAC",
    "storage",
    "namespaces",
)
_WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod"})
STORAGE_KINDS = frozenset({("", "PersistentVolumeClaim"), ("", "PersistentVolume")})


def never_recreated(group: str, kind: str) -> str:
    """Why ``--recreate-immutable`` must not delete an object of this kind ("" when it may): deleting it
    deletes data with it, which no changed field is worth."""
    if (group, kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        return "deleting a CRD deletes every object of its kind"
    if (group, kind) == ("", "Namespace"):
        return "deleting a Namespace deletes everything in it"
    if (group, kind) in STORAGE_KINDS:
        return "deleting it can delete the data it holds"
    return ""


def delete_phase(group: str, kind: str, *, builtin_groups: frozenset[str]) -> int:
    if (group, kind) in WEBHOOK_CONFIG_KINDS or (group, kind) == ("apiregistration.k8s.io", "APIService"):
        return 0
    if group not in builtin_groups:
        return 1
    if kind == "CustomResourceDefinition":
        return 2
    if kind in _WORKLOAD_KINDS and group in ("apps", "batch", ""):
        return 3
    if group == "rbac.authorization.k8s.io":
        return 5
    if (group, kind) in STORAGE_KINDS:
        return 6
    if (group, kind) == ("", "Namespace"):
        return 7
    return 4
