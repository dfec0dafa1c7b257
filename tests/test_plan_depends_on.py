"""What ``dependsOn`` waits for: the API the dependency serves, or, when it serves none, all of it.

An operator's dependents need its CRDs served (their controllers watch its kinds) — not its Deployment
running: what needs a running part of it is an edge of its own (a webhook that admits an object waits for its
backend). Waiting for every workload chained the operators' start-up times one after another.
"""

from __future__ import annotations

from typing import Any

import pytest

from kfctl.plan.graph import ExternalCheck, build_plan
from kfctl.plan.text import application_gate

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "jobs.example.com"},
    "spec": {"group": "example.com", "names": {"kind": "Job", "plural": "jobs"}},
}
APISERVICE = {
    "apiVersion": "apiregistration.k8s.io/v1",
    "kind": "APIService",
    "metadata": {"name": "v1beta1.metrics.example.com"},
    "spec": {"group": "metrics.example.com", "version": "v1beta1", "service": {"namespace": "ml", "name": "m"}},
}
DEPLOY = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "op", "namespace": "ml"},
    "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
}
CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "ml"}}
USER = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "user", "namespace": "ml"},
    "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
}

# (id, the dependency's objects, what `application base` waits for, the rule, how `kfctl plan` says it)
CASES: list[tuple[str, list[dict[str, Any]], set[str], str, str]] = [
    (
        "an operator: its CRD, not its Deployment",
        [CRD, DEPLOY, CONFIG],
        {"CustomResourceDefinition.apiextensions.k8s.io jobs.example.com"},
        "api",
        "ready when the API it serves is: 1 CRD(s) Established",
    ),
    (
        "an aggregated API server: its APIService",
        [APISERVICE, DEPLOY],
        {"APIService.apiregistration.k8s.io v1beta1.metrics.example.com"},
        "api",
        "ready when the API it serves is: 1 APIService(s) Available",
    ),
    (
        "both",
        [CRD, APISERVICE, DEPLOY],
        {
            "CustomResourceDefinition.apiextensions.k8s.io jobs.example.com",
            "APIService.apiregistration.k8s.io v1beta1.metrics.example.com",
        },
        "api",
        "ready when the API it serves is: 1 CRD(s) Established, 1 APIService(s) Available",
    ),
    (
        "no API (a database): all of it",
        [DEPLOY, CONFIG],
        {"Deployment.apps ml/op", "ConfigMap ml/settings"},
        "member",
        "ready when all its objects are",
    ),
]


@pytest.mark.parametrize(("case", "base", "waits_for", "rule", "said"), CASES, ids=[c[0] for c in CASES])
def test_what_depends_on_waits_for(
    case: str, base: list[dict[str, Any]], waits_for: set[str], rule: str, said: str
) -> None:
    plan = build_plan([("base", base), ("user", [USER])], depends_on={"user": ["base"]})
    edges = plan.deps["application base"]
    assert {e.dependency for e in edges} == waits_for
    assert {e.rule.name for e in edges} == {rule}
    assert application_gate(plan, "application base") == said
    # The dependent still waits for the application step, whatever that step waits for.
    assert "application base" in {e.dependency for e in plan.deps["Deployment.apps ml/user"]}


def test_an_external_dependency_is_its_check() -> None:
    plan = build_plan(
        [("user", [USER])],
        depends_on={"user": ["cm"]},
        externals=[ExternalCheck("cm", ("certificates.cert-manager.io",))],
    )
    assert [e.dependency for e in plan.deps["application cm"]] == ["external application cm"]
    assert "application cm" in {e.dependency for e in plan.deps["Deployment.apps ml/user"]}
