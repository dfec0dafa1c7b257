"""Which ready step starts first when the apply slots are taken: the one with the longest chain of waits.

On a first install a slow operator's ServiceAccount queued behind a couple of hundred objects nothing waits
for, and that queueing was added to the run (B2): the Deployment that needs it, the webhook it serves and what
that webhook admits all came after.
"""

from __future__ import annotations

import pytest
import yaml
from plan_bundles import CERT_MANAGER_BUNDLE, SERVING_BUNDLE

from kfctl.plan.graph import build_plan, topological_order
from kfctl.plan.priority import heights

EXPECTED = [
    # step, its height (waits on the longest chain from it through its dependents, itself included), why
    ("Role.rbac.authorization.k8s.io serving/leader", 0, "nothing waits for it and it waits for nothing"),
    ("RoleBinding.rbac.authorization.k8s.io serving/leader", 0, "nothing waits for it and it waits for nothing"),
    ("ClusterServingRuntime.serving.kserve.io sklearn", 1, "the end of the chain: its own wait"),
    ("webhook backend serving/webhook", 2, "its wait for an endpoint, then the runtime's"),
    ("Deployment.apps serving/controller", 3, "its wait for Available, then the backend's and the runtime's"),
    ("ServiceAccount serving/controller", 3, "waits for nothing itself, but the Deployment's chain follows it"),
    ("ConfigMap serving/config", 3, "the Deployment reads it: the same chain follows it"),
    ("Namespace serving", 4, "its own wait, then the longest chain in it"),
    (
        "CustomResourceDefinition.apiextensions.k8s.io certificates.cert-manager.io",
        5,
        "serving depends on cert-manager, whose API this CRD is: all of serving's chain follows it",
    ),
]


@pytest.mark.parametrize(("step", "height", "why"), EXPECTED, ids=[e[0] for e in EXPECTED])
def test_a_step_is_as_high_as_the_waits_on_its_longest_chain(step: str, height: int, why: str) -> None:
    plan = build_plan(
        [("cert-manager", yaml.safe_load(CERT_MANAGER_BUNDLE)), ("serving", yaml.safe_load(SERVING_BUNDLE))],
        depends_on={"serving": ["cert-manager"]},
    )
    order = topological_order(plan)
    assert heights(plan, order, plan.dependents())[step] == height, why


def workload(name: str, delay: object) -> dict[str, object]:
    probe = {"readinessProbe": {"httpGet": {"path": "/readyz", "port": 8081}, "initialDelaySeconds": delay}}
    container = {"name": "manager", "image": "example.com/x:v1", **(probe if delay is not None else {})}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ops"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


@pytest.mark.parametrize(
    ("delay", "height", "why"),
    [
        (None, 1, "no probe: one wait"),
        (0, 1, "a probe with no delay: one wait"),
        (30, 31, "its pods cannot be Ready for 30 s: one wait plus 30"),
        ("30s", 1, "malformed: no weight here (the API server's validation names it at apply), no crash"),
    ],
)
def test_a_workloads_readiness_delay_weighs_its_wait(delay: object, height: int, why: str) -> None:
    plan = build_plan([("app", [workload("slow", delay)])], depends_on={})
    assert heights(plan, topological_order(plan), plan.dependents())["Deployment.apps ops/slow"] == height, why


def test_a_chain_known_to_be_slow_outranks_a_longer_chain_of_quick_waits() -> None:
    """Upstream's KServe controller (initialDelaySeconds: 30) behind its ConfigMap ranks above a webhook chain of
    three quick waits: its ConfigMap is applied first when the slots are few."""
    slow = workload("slow", 30)
    slow["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "slow"}}]
    objects = [
        slow,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "slow", "namespace": "ops"}},
        *yaml.safe_load(SERVING_BUNDLE),
    ]
    plan = build_plan([("app", objects)], depends_on={})
    height = heights(plan, topological_order(plan), plan.dependents())
    assert height["ConfigMap ops/slow"] == 31
    assert height["ConfigMap serving/config"] == 3
