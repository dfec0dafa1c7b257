"""A workload that writes a custom resource's status heads that resource's chain when the apply slots are few.

Measured on upstream's full platform (B10): cert-manager's controller, which no edge ties to anything, was
created 11 s into the install, behind a hundred CRDs; the Certificate whose Secret KServe's controller mounts
was issued only then, and that controller's 30 s readiness delay started after it. The RBAC says who makes a
Certificate Ready (update on ``certificates/status``), so the planner ranks its writer — and the writer's
ServiceAccount and CRDs — with the Certificate's chain. It is a weight only: no edge, no wait.

Each row: the writer's RBAC rule, and the exact heights of the writer, its ServiceAccount and the Certificate.
"""

from __future__ import annotations

from typing import Any

import pytest

from kfctl.plan.graph import build_plan, topological_order
from kfctl.plan.priority import heights

RBAC = "rbac.authorization.k8s.io/v1"
WRITER = "Deployment.apps cert-manager/cert-manager"
ACCOUNT = "ServiceAccount cert-manager/cert-manager"
CERT = "Certificate.cert-manager.io ops/serving-cert"
CONSUMER = "Deployment.apps ops/controller"


def crd(plural: str, kind: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.cert-manager.io"},
        "spec": {"group": "cert-manager.io", "names": {"kind": kind, "plural": plural}, "scope": "Namespaced"},
    }


def deployment(namespace: str, name: str, *, account: str, delay: int = 0, secret: str = "") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "manager", "image": "example.com/x:v1"}
    if delay:
        container["readinessProbe"] = {"httpGet": {"path": "/readyz", "port": 8081}, "initialDelaySeconds": delay}
    pod: dict[str, Any] = {"serviceAccountName": account, "containers": [container]}
    if secret:
        pod["volumes"] = [{"name": "cert", "secret": {"secretName": secret}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod},
        },
    }


def role_for(account: str, rule: dict[str, Any]) -> list[dict[str, Any]]:
    name = f"{account}-role"
    return [
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name}, "rules": [rule]},
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "cert-manager"}],
        },
    ]


def bundle(rule: dict[str, Any] | None, *, writer_mounts_cert: bool = False) -> list[dict[str, Any]]:
    """cert-manager's controller (with ``rule`` granted), a Certificate, and a workload that mounts the
    Certificate's Secret and whose readiness probe waits 30 s (KServe's controller)."""
    objects: list[dict[str, Any]] = [
        crd("certificates", "Certificate"),
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "cert-manager", "namespace": "cert-manager"},
        },
        deployment(
            "cert-manager", "cert-manager", account="cert-manager", secret="serving-tls" if writer_mounts_cert else ""
        ),
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": "serving-cert", "namespace": "ops" if not writer_mounts_cert else "cert-manager"},
            "spec": {"secretName": "serving-tls", "issuerRef": {"name": "selfsigned", "kind": "Issuer"}},
        },
        deployment("ops", "controller", account="controller", delay=30, secret="serving-tls"),
    ]
    return objects + (role_for("cert-manager", rule) if rule else [])


WRITES = {"apiGroups": ["cert-manager.io"], "resources": ["certificates/status"], "verbs": ["update", "patch"]}
ROWS = [
    # (rule granted to cert-manager's ServiceAccount, writer's height, its ServiceAccount's, why)
    (WRITES, 33, 33, "writes certificates/status: 1 (its wait) + the Certificate's 1 + the consumer's 1 + 30"),
    ({**WRITES, "verbs": ["patch"]}, 33, 33, "patch alone writes status too"),
    ({**WRITES, "verbs": ["*"]}, 33, 33, "a verb wildcard includes update"),
    ({**WRITES, "verbs": ["get", "list", "watch"]}, 1, 1, "reads the status only: not its writer"),
    ({**WRITES, "resources": ["certificates"]}, 1, 1, "writes the resource, not its status: a client, not its writer"),
    ({**WRITES, "resources": ["*/status"]}, 1, 1, "a resource wildcard is an administrator's grant, not a writer's"),
    ({**WRITES, "apiGroups": ["*"]}, 1, 1, "a group wildcard likewise"),
    (None, 1, 1, "no RBAC in the bundle: nothing says who writes the status"),
]


@pytest.mark.parametrize(("rule", "writer", "account", "why"), ROWS, ids=[r[3] for r in ROWS])
def test_a_status_writer_is_as_high_as_the_resources_it_makes_ready(
    rule: dict[str, Any] | None, writer: int, account: int, why: str
) -> None:
    plan = build_plan([("cert-manager", bundle(rule))], depends_on={})
    height = heights(plan, topological_order(plan), plan.dependents())
    assert (height[WRITER], height[ACCOUNT]) == (writer, account), why
    assert height[CERT] == 32, "the Certificate's own chain: its wait, then the consumer's 31"
    assert not any(e.dependency == WRITER for edges in plan.deps.values() for e in edges), "a weight, never an edge"


def test_a_writer_does_not_drive_what_it_waits_for_itself() -> None:
    """cert-manager's webhook mounts a Certificate cert-manager issues: ranking the writer by a chain that
    starts after it would be a cycle. The writer keeps its own height; nothing crashes."""
    plan = build_plan([("cert-manager", bundle(WRITES, writer_mounts_cert=True))], depends_on={})
    assert WRITER not in plan.drives
    height = heights(plan, topological_order(plan), plan.dependents())
    assert height[WRITER] == 1


def test_drives_that_close_a_cycle_are_left_out_of_the_weights() -> None:
    """Two controllers, each writing the status of a resource the other mounts the Secret of: the drives
    would make a cycle, so they weigh nothing and the heights are the edges' alone."""
    objects: list[dict[str, Any]] = [
        crd("certificates", "Certificate"),
        *[
            {
                "apiVersion": "cert-manager.io/v1",
                "kind": "Certificate",
                "metadata": {"name": name, "namespace": "cert-manager"},
                "spec": {"secretName": f"{name}-tls", "issuerRef": {"name": "selfsigned", "kind": "Issuer"}},
            }
            for name in ("a", "b")
        ],
        deployment("cert-manager", "one", account="one", secret="b-tls"),
        deployment("cert-manager", "two", account="two", secret="a-tls"),
    ]
    for account, cert in (("one", "a"), ("two", "b")):
        objects += role_for(account, {**WRITES, "resourceNames": [cert]})
    plan = build_plan([("cert-manager", objects)], depends_on={})
    assert set(plan.drives) == {"Deployment.apps cert-manager/one", "Deployment.apps cert-manager/two"}
    height = heights(plan, topological_order(plan), plan.dependents())
    assert height["Deployment.apps cert-manager/one"] == 1
    assert height["Certificate.cert-manager.io cert-manager/a"] == 2, "its wait, then two's (which mounts a-tls)"
