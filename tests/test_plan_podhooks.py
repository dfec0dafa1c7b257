"""Workloads whose pods a failurePolicy=Fail webhook admits (kfctl.plan.podhooks).

The shape of upstream katib (kubeflow/manifests v1.11.0) in miniature: the `tuner` application registers a pod
mutator for every namespace labelled `inject: enabled`, and its own controller, the `operator` it dependsOn
and an unrelated `serving` application all run in such a namespace. Registered before they run, the mutator
would refuse the pods that serve it; the planner must register it after those, and make the others wait
for its backend.
"""

from __future__ import annotations

from typing import Any

import pytest

from kfctl.plan import rules
from kfctl.plan.graph import Plan, backend_id, build_plan
from kfctl.plan.text import format_plan

CONFIG = "MutatingWebhookConfiguration.admissionregistration.k8s.io tuner"
BACKEND = backend_id("ml/tuner-webhook")


def deployment(name: str, namespace: str = "ml", **labels: str) -> dict[str, Any]:
    labels = {"app": name, **labels}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }


def mutator(failure_policy: str = "Fail", object_selector: dict[str, Any] | None = None) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "name": "pods.tuner.example.org",
        "clientConfig": {"service": {"name": "tuner-webhook", "namespace": "ml", "path": "/mutate-pod"}},
        "namespaceSelector": {"matchLabels": {"inject": "enabled"}},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
        "failurePolicy": failure_policy,
        "sideEffects": "None",
    }
    if object_selector is not None:
        hook["objectSelector"] = object_selector
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "tuner"},
        "webhooks": [hook],
    }


def plan_of(hook: dict[str, Any]) -> Plan:
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {"inject": "enabled"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}},
    ]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "tuner-webhook", "namespace": "ml"},
        "spec": {"selector": {"app": "tuner"}, "ports": [{"port": 443}]},
    }
    return build_plan(
        [
            ("operator", [deployment("operator")]),
            ("tuner", [*namespaces, hook, service, deployment("tuner"), deployment("tuner-ui")]),
            ("serving", [deployment("serving"), deployment("elsewhere", "plain")]),
        ],
        depends_on={"tuner": ["operator"]},
    )


def pod_edges(plan: Plan) -> set[tuple[str, str, str]]:
    wanted = (rules.POD_WEBHOOK.name, rules.ADMITS_ITS_NEEDS.name)
    return {
        (sid, e.dependency, e.rule.name) for sid, edges in plan.deps.items() for e in edges if e.rule.name in wanted
    }


FAIL_EDGES = {
    # The backend needs these: its own Deployment, and the operator its application dependsOn.
    (CONFIG, "Deployment.apps ml/tuner", "admits-its-needs"),
    (CONFIG, "Deployment.apps ml/operator", "admits-its-needs"),
    # The backend does not need these: their pods wait for it (and are mutated).
    ("Deployment.apps ml/tuner-ui", BACKEND, "pod-webhook"),
    ("Deployment.apps ml/serving", BACKEND, "pod-webhook"),
    # Deployment plain/elsewhere: its namespace is not selected, so nothing.
}


@pytest.mark.parametrize(
    ("hook", "expected"),
    [
        (mutator(), FAIL_EDGES),
        (mutator(failure_policy="Ignore"), set()),  # the API server admits the pods when the backend is down
        (mutator(object_selector={"matchLabels": {"inject-me": "yes"}}), set()),  # no template carries it
        (
            mutator(object_selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["serving"]}]}),
            {("Deployment.apps ml/serving", BACKEND, "pod-webhook")},
        ),
    ],
    ids=["fail", "ignore", "object-selector-matches-none", "object-selector-matches-serving"],
)
def test_pod_webhook_edges(hook: dict[str, Any], expected: set[tuple[str, str, str]]) -> None:
    assert pod_edges(plan_of(hook)) == expected


def test_the_mutator_is_registered_after_the_pods_that_serve_it_run() -> None:
    plan = plan_of(mutator())
    wave = {sid: n for n, w in enumerate(plan.waves()) for sid in w}
    assert wave[CONFIG] > wave["Deployment.apps ml/tuner"]
    assert wave[CONFIG] > wave["Deployment.apps ml/operator"]
    assert wave[BACKEND] > wave[CONFIG]
    assert wave["Deployment.apps ml/tuner-ui"] > wave[BACKEND]
    text = format_plan(plan)
    assert (
        "      waits for Deployment.apps ml/tuner: it would admit the pods of a workload its own backend needs:"
        " registered once that workload is Available"
    ) in text
    assert (
        "      waits for webhook backend ml/tuner-webhook: a failurePolicy=Fail webhook admits its pods:"
        " they are created once its backend answers"
    ) in text
