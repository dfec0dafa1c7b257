"""Drift: which fields of what kfctl would send the live object no longer holds, and how they are named."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kfctl.engine.drift import comparable, corrected_fields, differences

DEPLOY: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "op", "namespace": "kubeflow", "labels": {"app": "op"}},
    "spec": {
        "replicas": 1,
        "template": {
            "metadata": {"labels": {"app": "op"}, "creationTimestamp": None},
            "spec": {
                "containers": [
                    {
                        "name": "op",
                        "image": "ghcr.io/kubeflow/op:v1",
                        "args": ["--a"],
                        "resources": {"requests": {"cpu": "0.5", "memory": "1024Mi"}},
                        "ports": [{"containerPort": 8080}],
                    }
                ]
            },
        },
    },
}


def live_with(**changes: Any) -> dict[str, Any]:
    """The Deployment as the server returns it (defaults filled in, quantities canonical), then ``changes``."""
    import copy

    live = copy.deepcopy(DEPLOY)
    live["metadata"].update(uid="u1", resourceVersion="7", generation=3, managedFields=[{"manager": "kfctl"}])
    c = live["spec"]["template"]["spec"]["containers"][0]
    c.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log")
    c["resources"]["requests"] = {"cpu": "500m", "memory": "1Gi"}
    c["ports"][0]["protocol"] = "TCP"
    del live["spec"]["template"]["metadata"]["creationTimestamp"]
    live["spec"]["strategy"] = {"type": "RollingUpdate"}
    live["status"] = {"replicas": 1}
    for path, value in changes.items():
        node = live
        parts = path.split("__")
        for p in parts[:-1]:
            node = node[int(p)] if p.isdigit() else node[p]
        node[parts[-1]] = value
    return live


CONTAINERS = "spec__template__spec__containers__0"


@pytest.mark.parametrize(
    ("live", "expected"),
    [
        pytest.param(live_with(), [], id="defaults-status-and-canonical-quantities-are-not-drift"),
        pytest.param(live_with(spec__replicas=3), ["spec.replicas"], id="scaled"),
        pytest.param(
            live_with(**{f"{CONTAINERS}__image": "evil/image:latest"}),
            ["spec.template.spec.containers[op].image"],
            id="set-image",
        ),
        pytest.param(
            live_with(**{f"{CONTAINERS}__args": ["--a", "--b"]}),
            ["spec.template.spec.containers[op].args"],
            id="an-argument-added-to-a-list-kfctl-renders",
        ),
        pytest.param(
            live_with(**{f"{CONTAINERS}__env": [{"name": "X", "value": "1"}]}),
            [],
            id="a-field-kfctl-does-not-render-is-left-alone",
        ),
        pytest.param(
            live_with(metadata__labels={"app": "other"}), ["metadata.labels.app"], id="a-label-kfctl-sets-changed"
        ),
        pytest.param(
            live_with(**{"spec__template__spec__containers": [{"name": "sidecar"}, {"name": "x"}]}),
            ["spec.template.spec.containers[op]"],
            id="the-container-kfctl-renders-is-gone",
        ),
    ],
)
def test_differences_name_only_the_fields_kfctl_renders_that_changed(live: dict[str, Any], expected: list[str]) -> None:
    assert differences(DEPLOY, live) == expected


def deployment_requesting(cpu: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "op"},
        "spec": {"template": {"spec": {"containers": [{"name": "op", "resources": {"requests": {"cpu": cpu}}}]}}},
    }


def deployment_with_env(value: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "op"},
        "spec": {"template": {"spec": {"containers": [{"name": "op", "env": [{"name": "HEAP", "value": value}]}]}}},
    }


def config_map(value: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": value}}


def claim(storage: Any) -> dict[str, Any]:
    spec = {"resources": {"requests": {"storage": storage}}}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p"}, "spec": spec}


def limit_range(field: str, value: Any) -> dict[str, Any]:
    spec = {"limits": [{"type": "Container", field: {"cpu": value}}]}
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l"}, "spec": spec}


def crd_with_requests(description: str) -> dict[str, Any]:
    """A CRD whose schema has a property named `requests` (katib's Suggestion): text, not quantities."""
    requests = {"description": description, "type": "integer", "format": "int32"}
    schema = {"openAPIV3Schema": {"properties": {"spec": {"properties": {"requests": requests}}}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "suggestions.kubeflow.org"},
        "spec": {"versions": [{"name": "v1beta1", "schema": schema}]},
    }


SCHEMA_REQUESTS = "spec.versions[v1beta1].schema.openAPIV3Schema.properties.spec.properties.requests"


def pod_with_scratch(size: Any) -> dict[str, Any]:
    volume = {"name": "tmp", "emptyDir": {"sizeLimit": size}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"volumes": [volume]}}


REQUESTS_CPU = "spec.template.spec.containers[op].resources.requests.cpu"
ENV_VALUE = "spec.template.spec.containers[op].env[HEAP].value"


@pytest.mark.parametrize(
    ("desired", "live", "expected"),
    [
        pytest.param(
            deployment_requesting("0.5"), deployment_requesting("500m"), [], id="container-request-decimal-cpu"
        ),
        pytest.param(deployment_requesting(1), deployment_requesting("1"), [], id="container-request-written-as-int"),
        pytest.param(deployment_requesting("1e3"), deployment_requesting("1k"), [], id="container-request-exponent"),
        pytest.param(
            deployment_requesting("1"), deployment_requesting("2"), [REQUESTS_CPU], id="container-request-other-value"
        ),
        pytest.param(claim("1Gi"), claim("1024Mi"), [], id="pvc-storage-binary-suffixes"),
        pytest.param(claim("2Gi"), claim("1Gi"), ["spec.resources.requests.storage"], id="pvc-storage-other-size"),
        pytest.param(limit_range("max", "0.5"), limit_range("max", "500m"), [], id="limit-range-max"),
        pytest.param(pod_with_scratch("1Gi"), pod_with_scratch("1024Mi"), [], id="empty-dir-size-limit"),
        pytest.param(config_map("1.10"), config_map("1.1"), ["data.k"], id="config-map-version-is-text"),
        pytest.param(config_map("080"), config_map("80"), ["data.k"], id="config-map-leading-zero-is-text"),
        pytest.param(config_map("0.5"), config_map("500m"), ["data.k"], id="config-map-quantity-look-alike-is-text"),
        pytest.param(deployment_with_env("1G"), deployment_with_env("1000M"), [ENV_VALUE], id="env-value-is-text"),
        pytest.param(crd_with_requests("How many."), crd_with_requests("How many."), [], id="crd-schema-requests-same"),
        pytest.param(
            crd_with_requests("How many."),
            crd_with_requests("How many?"),
            [f"{SCHEMA_REQUESTS}.description"],
            id="crd-schema-requests-is-text",
        ),
        pytest.param(config_map("v1"), config_map("v1.0"), ["data.k"], id="text-is-compared-as-text"),
        pytest.param(config_map(True), config_map("true"), ["data.k"], id="boolean-is-not-text"),
        pytest.param(config_map(1), config_map(1.0), [], id="numbers-compare-by-value"),
        pytest.param(config_map(1), config_map(True), ["data.k"], id="a-boolean-is-not-a-number"),
        pytest.param(config_map(1), config_map("1"), ["data.k"], id="a-number-is-not-text-outside-quantities"),
    ],
)
def test_quantities_compare_by_value_only_where_the_server_rewrites_them(
    desired: dict[str, Any], live: dict[str, Any], expected: list[str]
) -> None:
    assert differences(desired, live) == expected


def deployment(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "op"}, "spec": spec}


def priority_class(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "pc"}, **fields}


@pytest.mark.parametrize(
    ("desired", "live", "expected"),
    [
        pytest.param(deployment(replicas=1), deployment(), ["spec.replicas"], id="replicas-one-vs-missing"),
        pytest.param(
            priority_class(value=1, globalDefault=True),
            priority_class(value=1),
            ["globalDefault"],
            id="true-vs-missing",
        ),
        pytest.param(
            priority_class(value=1, globalDefault=False),
            priority_class(value=1, globalDefault=True),
            ["globalDefault"],
            id="false-vs-true",
        ),
        # A zero the server may have dropped (omitempty) or someone may have deleted: the objects cannot tell,
        # so it is a difference and the engine's dry run settles it.
        pytest.param(
            priority_class(value=10, globalDefault=False),
            priority_class(value=10),
            ["globalDefault"],
            id="false-vs-missing-is-left-to-the-dry-run",
        ),
        pytest.param(
            deployment(replicas=0), deployment(), ["spec.replicas"], id="zero-vs-missing-is-left-to-the-dry-run"
        ),
        pytest.param(
            priority_class(value=1, description=""),
            priority_class(value=1),
            ["description"],
            id="empty-text-vs-missing-is-left-to-the-dry-run",
        ),
        pytest.param(priority_class(value=1, preemption={}), priority_class(value=1), [], id="empty-map-vs-missing"),
    ],
)
def test_a_missing_field_holds_only_an_empty_or_null_value(
    desired: dict[str, Any], live: dict[str, Any], expected: list[str]
) -> None:
    assert differences(desired, live) == expected


def test_a_secrets_string_data_is_compared_as_the_server_stores_it() -> None:
    desired = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"password": "pw"}}
    stored = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "cHc="}}
    changed = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "eHg="}}
    assert differences(desired, stored) == []
    assert differences(desired, changed) == ["data.password"]


@pytest.mark.parametrize(
    ("live", "dry_run", "expected"),
    [
        pytest.param(
            live_with(**{f"{CONTAINERS}__image": "evil/image:latest"}, spec__replicas=3),
            live_with(),
            ["spec.replicas", "spec.template.spec.containers[op].image"],
            id="set-image-and-scale-are-put-back",
        ),
        pytest.param(
            live_with(metadata__annotations={"example.com/x": "1"}),
            live_with(metadata__annotations={"example.com/x": "1"}),
            [],
            id="a-field-kfctl-does-not-render-is-not-named",
        ),
        pytest.param(
            live_with(**{f"{CONTAINERS}__args": ["--a", "-b"]}),
            live_with(**{f"{CONTAINERS}__args": ["--a", "-b"]}),
            [],
            id="a-value-the-server-keeps-rewriting-is-not-a-correction",
        ),
    ],
)
def test_corrected_fields_are_kfctls_fields_that_differ_now_and_hold_after_the_apply(
    live: dict[str, Any], dry_run: dict[str, Any], expected: list[str]
) -> None:
    assert corrected_fields(DEPLOY, live, dry_run) == expected


def test_comparable_masks_secret_values_and_drops_what_the_server_owns() -> None:
    live = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "s",
            "uid": "u",
            "resourceVersion": "1",
            "annotations": {"kfctl.kubeflow.org/applied-hash": "h"},
        },
        "data": {"password": "cHc="},
    }
    out = comparable(live)
    assert out == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"password": "<masked sha256:30c952fa>"},
    }


def test_comparable_leaves_the_object_it_is_given_as_it_was() -> None:
    """It shares nested values with its input instead of copying them: it must change none of them."""
    live = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "uid": "u", "annotations": {"kfctl.kubeflow.org/applied-hash": "h", "a": "b"}},
        "data": {"password": "cHc="},
        "stringData": {"user": "me"},
        "status": {"x": 1},
    }
    before = copy.deepcopy(live)
    assert comparable(live) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "annotations": {"a": "b"}},
        "data": {"password": "<masked sha256:30c952fa>"},
        "stringData": {"user": "<masked sha256:2744ccd1>"},
    }
    assert live == before


GATEWAY: dict[str, Any] = {
    "apiVersion": "networking.istio.io/v1beta1",
    "kind": "Gateway",
    "metadata": {"name": "knative-local-gateway", "namespace": "knative-serving"},
    "spec": {"selector": {"istio": "local-gateway"}, "servers": [{"hosts": ["*"], "port": {"number": 8081}}]},
}


@pytest.mark.parametrize(
    ("read_at", "change", "expected"),
    [
        # An Istio-like CRD serving v1alpha3, v1beta1 and v1: the object rendered at v1beta1 is the same at each.
        pytest.param("networking.istio.io/v1alpha3", {}, [], id="read-at-v1alpha3"),
        pytest.param("networking.istio.io/v1beta1", {}, [], id="read-at-the-rendered-version"),
        pytest.param("networking.istio.io/v1", {}, [], id="read-at-v1"),
        pytest.param("networking.istio.io/v1", {"port": 9999}, ["spec.servers[0].port.number"], id="real-drift-at-v1"),
    ],
)
def test_the_version_an_object_is_read_at_is_no_drift(
    read_at: str, change: dict[str, int], expected: list[str]
) -> None:
    live = copy.deepcopy(GATEWAY)
    live["apiVersion"] = read_at
    if "port" in change:
        live["spec"]["servers"][0]["port"]["number"] = change["port"]
    assert differences(GATEWAY, live) == expected


WEBHOOK: dict[str, Any] = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "MutatingWebhookConfiguration",
    "metadata": {"name": "webhook.serving.knative.dev"},
    "webhooks": [
        {
            "name": "webhook.serving.knative.dev",
            "clientConfig": {"service": {"name": "webhook", "namespace": "knative-serving"}},
            "failurePolicy": "Fail",
            "rules": [{"apiGroups": ["serving.knative.dev"], "apiVersions": ["*"], "resources": ["services"]}],
        }
    ],
}
SERVED_RULES = [{"apiGroups": ["serving.knative.dev"], "apiVersions": ["v1"], "resources": ["services"]}]
RULES_DRIFT = ["webhooks[webhook.serving.knative.dev].rules[0].apiVersions[0]"]


def managed(manager: str, operation: str, *fields: str) -> dict[str, Any]:
    """A managedFields entry in which ``manager`` holds ``fields`` of the webhook above."""
    hook = {'k:{"name":"webhook.serving.knative.dev"}': {f"f:{f}": {} for f in fields}}
    return {"manager": manager, "operation": operation, "fieldsV1": {"f:webhooks": hook}}


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        # Knative's webhook replaced the release's broad rules with what it serves, at start: the server's now.
        pytest.param(managed("webhook", "Update", "rules", "clientConfig"), [], id="taken-over-by-its-server"),
        # A person's edit with kubectl is drift, put back.
        pytest.param(
            managed("kubectl-edit", "Update", "rules"),
            RULES_DRIFT,
            id="edited-by-a-person",
        ),
        # Another applier's claim is not a takeover by an update.
        pytest.param(managed("helm", "Apply", "rules"), RULES_DRIFT, id="applied-by-another"),
        # kfctl's own entry never counts.
        pytest.param(managed("kfctl", "Update", "rules"), RULES_DRIFT, id="kfctl-itself"),
        # The server took over the rules only: a failurePolicy changed by hand is still drift.
        pytest.param(
            managed("webhook", "Update", "rules"),
            ["webhooks[webhook.serving.knative.dev].failurePolicy"],
            id="other-field-still-drift",
        ),
    ],
)
def test_a_webhook_configurations_fields_its_server_took_over_are_not_drift(
    who: dict[str, Any], expected: list[str]
) -> None:
    live = copy.deepcopy(WEBHOOK)
    live["webhooks"][0]["rules"] = SERVED_RULES
    if expected and "failurePolicy" in expected[0]:  # and a person set failurePolicy by hand
        live["webhooks"][0]["failurePolicy"] = "Ignore"
    live["metadata"]["managedFields"] = [managed("kfctl", "Apply", "rules", "failurePolicy"), who]
    before = copy.deepcopy(WEBHOOK)
    assert differences(WEBHOOK, live) == expected
    assert before == WEBHOOK  # the desired object is left as it was
