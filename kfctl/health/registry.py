"""Which rule judges which kind: a table, so "how does kfctl decide X is healthy?" has one answer.

A kind is judged by its function here (``RULES``: what takes more than a condition), else by its wait rule
(kfctl.health.waitrules: kfctl's, or the KfDef's ``spec.waitRules``), else as a built-in kind (applied is
healthy) or a custom resource (kstatus' conditions, kfctl.health.custom)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kfctl.health.crd import crd
from kfctl.health.custom import custom_resource
from kfctl.health.daemonset import daemonset
from kfctl.health.deployment import deployment
from kfctl.health.job import job
from kfctl.health.model import Health, ready
from kfctl.health.namespace import namespace
from kfctl.health.pvc import pvc
from kfctl.health.service import service
from kfctl.health.statefulset import statefulset
from kfctl.health.waitrules import SHIPPED, WaitRules

Rule = Callable[[Mapping[str, Any]], Health]

RULES: dict[tuple[str, str], Rule] = {
    ("apiextensions.k8s.io", "CustomResourceDefinition"): crd,
    ("", "Namespace"): namespace,
    ("apps", "Deployment"): deployment,
    ("apps", "StatefulSet"): statefulset,
    ("apps", "DaemonSet"): daemonset,
    ("batch", "Job"): job,
    ("", "Service"): service,
}

# Groups served by Kubernetes itself: their kinds without a rule above are healthy once applied
# (ConfigMap, Secret, RBAC, ServiceAccount, NetworkPolicy …). Other groups are custom resources.
BUILTIN_GROUPS = frozenset(
    {
        "",
        "apps",
        "batch",
        "autoscaling",
        "policy",
        "rbac.authorization.k8s.io",
        "networking.k8s.io",
        "storage.k8s.io",
        "scheduling.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "node.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "certificates.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "events.k8s.io",
        "resource.k8s.io",
    }
)

# Kinds whose health is worth waiting for; everything else is done once the server accepted it.
WAITED_KINDS = frozenset(RULES) | {("", "PersistentVolumeClaim")}


def needs_wait(group: str, kind: str, wait_rules: WaitRules = SHIPPED) -> bool:
    return (group, kind) in WAITED_KINDS or (group, kind) in wait_rules.kinds() or group not in BUILTIN_GROUPS


def health_of(
    obj: Mapping[str, Any],
    *,
    age_seconds: float,
    wait_for_first_consumer: bool = False,
    wait_rules: WaitRules = SHIPPED,
) -> Health:
    """Judge a live object with the rule for its kind."""
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    kind = str(obj.get("kind", ""))
    rule = RULES.get((group, kind))
    if rule is not None:
        return rule(obj)
    data = wait_rules.get(group, kind)
    if data is not None:
        return data.judge(obj)
    if (group, kind) == ("", "PersistentVolumeClaim"):
        return pvc(obj, wait_for_first_consumer=wait_for_first_consumer)
    if group in BUILTIN_GROUPS:
        return ready("applied")
    return custom_resource(obj, age_seconds=age_seconds)
