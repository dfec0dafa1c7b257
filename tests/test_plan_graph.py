"""The planner: which object waits for which, and why. The printed plan is the snapshot.

Set KFCTL_UPDATE_SNAPSHOTS=1 to rewrite tests/snapshots/*.txt after an intended change, and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from plan_bundles import CERT_MANAGER_BUNDLE, SERVING_BUNDLE

from kfctl.errors import PlanError
from kfctl.plan.graph import build_plan
from kfctl.plan.text import format_plan

SNAPSHOTS = Path(__file__).parent / "snapshots"


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("KFCTL_UPDATE_SNAPSHOTS"):
        path.write_text(text + "\n", encoding="utf-8")
    assert path.exists(), f"no snapshot {path}: run with KFCTL_UPDATE_SNAPSHOTS=1 and review it"
    assert text + "\n" == path.read_text(encoding="utf-8")


def block(text: str, step: str) -> str:
    """The lines of one step in the printed plan: its header and its indented edges."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {step}  ["))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("      ")), len(lines))
    return "\n".join(lines[start:end])


def serving_plan() -> str:
    plan = build_plan(
        [("cert-manager", yaml.safe_load(CERT_MANAGER_BUNDLE)), ("serving", yaml.safe_load(SERVING_BUNDLE))],
        depends_on={"serving": ["cert-manager"]},
    )
    return format_plan(plan)


def test_serving_bundle_plan_snapshot() -> None:
    check_snapshot("plan_serving", serving_plan())


def test_runtime_waits_for_its_crd_and_for_the_webhook_backend_not_for_an_ignore_webhook() -> None:
    text = serving_plan()
    runtime = block(text, "ClusterServingRuntime.serving.kserve.io sklearn")
    assert "waits for CustomResourceDefinition.apiextensions.k8s.io clusterservingruntimes.serving.kserve.io" in runtime
    assert "waits for webhook backend serving/webhook" in runtime
    assert "webhook backend" not in block(text, "ConfigMap serving/config")  # failurePolicy Ignore adds no edge


def test_webhook_backend_waits_for_service_deployment_and_injected_certificate() -> None:
    backend = block(serving_plan(), "webhook backend serving/webhook")
    assert "waits for Deployment.apps serving/controller" in backend
    assert "waits for Certificate.cert-manager.io serving/serving-cert" in backend
    assert "after ValidatingWebhookConfiguration.admissionregistration.k8s.io serving-validator" in backend


def test_a_cycle_is_a_plan_error_that_prints_it() -> None:
    bundle = yaml.safe_load(
        """
        - apiVersion: v1
          kind: ConfigMap
          metadata:
            name: a
            namespace: default
            annotations: {kfctl.kubeflow.org/depends-on: ConfigMap/default/b}
        - apiVersion: v1
          kind: ConfigMap
          metadata:
            name: b
            namespace: default
            annotations: {kfctl.kubeflow.org/depends-on: ConfigMap/default/a}
        """
    )
    with pytest.raises(PlanError) as err:
        build_plan([("app", bundle)], depends_on={})
    assert err.value.message == "dependency cycle: ConfigMap default/a → ConfigMap default/b → ConfigMap default/a"
    assert err.value.details == [
        "ConfigMap default/a waits for ConfigMap default/b: annotation kfctl.kubeflow.org/depends-on",
        "ConfigMap default/b waits for ConfigMap default/a: annotation kfctl.kubeflow.org/depends-on",
    ]


DEPENDS_ON_BUNDLE = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "default"}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "reader"}},
]
KFCTL_HINT, STANDARD = "kfctl.kubeflow.org/depends-on", "config.kubernetes.io/depends-on"


@pytest.mark.parametrize(
    ("annotation", "value", "expected"),
    [
        (KFCTL_HINT, "ConfigMap/default/b", [("ConfigMap default/b", f"annotation {KFCTL_HINT}")]),
        (
            KFCTL_HINT,
            "ClusterRole.rbac.authorization.k8s.io//reader",
            [("ClusterRole.rbac.authorization.k8s.io reader", f"annotation {KFCTL_HINT}")],
        ),
        (STANDARD, "/namespaces/default/ConfigMap/b", [("ConfigMap default/b", f"annotation {STANDARD}")]),
        (
            STANDARD,
            "apps/namespaces/default/Deployment/web",
            [("Deployment.apps default/web", f"annotation {STANDARD}")],
        ),
        (
            STANDARD,
            "rbac.authorization.k8s.io/ClusterRole/reader",
            [("ClusterRole.rbac.authorization.k8s.io reader", f"annotation {STANDARD}")],
        ),
        (
            STANDARD,
            "/namespaces/default/ConfigMap/b, rbac.authorization.k8s.io/ClusterRole/reader",
            [
                ("ClusterRole.rbac.authorization.k8s.io reader", f"annotation {STANDARD}"),
                ("ConfigMap default/b", f"annotation {STANDARD}"),
            ],
        ),
        (
            STANDARD,
            "ConfigMap/default/b",
            f"ConfigMap default/a: annotation {STANDARD}: ConfigMap/default/b is not in the bundle",
        ),
        (
            STANDARD,
            "apps/default/Deployment/web",
            f"ConfigMap default/a: annotation {STANDARD}: 'apps/default/Deployment/web' is not "
            "<group>/namespaces/<namespace>/<kind>/<name> or <group>/<kind>/<name> (the core group empty: "
            "/namespaces/default/ConfigMap/settings)",
        ),
        (
            STANDARD,
            "apps/namespace/default/Deployment/web",
            f"ConfigMap default/a: annotation {STANDARD}: 'apps/namespace/default/Deployment/web' is not "
            "<group>/namespaces/<namespace>/<kind>/<name> or <group>/<kind>/<name> (the core group empty: "
            "/namespaces/default/ConfigMap/settings)",
        ),
        (
            STANDARD,
            "/namespaces/default//b",
            f"ConfigMap default/a: annotation {STANDARD}: '/namespaces/default//b' names no kind or no name",
        ),
        (
            STANDARD,
            "/namespaces/default/ConfigMap/nope",
            f"ConfigMap default/a: annotation {STANDARD}: /namespaces/default/ConfigMap/nope is not in the bundle",
        ),
    ],
    ids=[
        "kfctl-namespaced",
        "kfctl-cluster-scoped",
        "standard-core-group",
        "standard-named-group",
        "standard-cluster-scoped",
        "standard-two",
        "standard-given-kfctl-format",
        "standard-four-fields",
        "standard-without-namespaces",
        "standard-no-kind",
        "standard-missing",
    ],
)
def test_both_depends_on_annotations_order_an_object_after_the_ones_they_name(
    annotation: str, value: str, expected: list[tuple[str, str]] | str
) -> None:
    """kfctl's own annotation (Kind[.group]/namespace/name) and the standard one cli-utils, kpt and Config Sync read
    (<group>/namespaces/<namespace>/<kind>/<name>, or <group>/<kind>/<name> when cluster-scoped) mean the same."""
    dependent = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "default", "annotations": {annotation: value}},
    }
    if isinstance(expected, str):
        with pytest.raises(PlanError) as err:
            build_plan([("app", [dependent, *DEPENDS_ON_BUNDLE])], depends_on={})
        assert err.value.message == expected
        return
    plan = build_plan([("app", [dependent, *DEPENDS_ON_BUNDLE])], depends_on={})
    assert sorted((e.dependency, e.rule.phrase) for e in plan.deps["ConfigMap default/a"]) == expected


def test_namespace_selector_limits_a_webhook_to_labelled_namespaces() -> None:
    bundle = yaml.safe_load(
        """
        - apiVersion: v1
          kind: Namespace
          metadata: {name: plain}
        - apiVersion: v1
          kind: Namespace
          metadata: {name: injected, labels: {inject: enabled}}
        - apiVersion: admissionregistration.k8s.io/v1
          kind: MutatingWebhookConfiguration
          metadata: {name: m}
          webhooks:
          - name: m.example.com
            clientConfig: {url: "https://127.0.0.1:9443/mutate"}
            namespaceSelector: {matchLabels: {inject: enabled}}
            rules: [{apiGroups: [""], apiVersions: [v1], operations: ["*"], resources: [configmaps]}]
        - apiVersion: v1
          kind: ConfigMap
          metadata: {name: c, namespace: plain}
        - apiVersion: v1
          kind: ConfigMap
          metadata: {name: c, namespace: injected}
        """
    )
    plan = build_plan([("app", bundle)], depends_on={})
    deps = {sid: [e.dependency for e in edges] for sid, edges in plan.deps.items()}
    assert "webhook backend https://127.0.0.1:9443/mutate" in deps["ConfigMap injected/c"]
    assert "webhook backend https://127.0.0.1:9443/mutate" not in deps["ConfigMap plain/c"]


def test_application_dependencies_gate_every_object_of_the_dependent() -> None:
    a = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}]
    b = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "default"}}]
    plan = build_plan([("first", a), ("second", b)], depends_on={"second": ["first"]})
    assert plan.waves() == [["ConfigMap default/a"], ["application first"], ["ConfigMap default/b"]]


INJECT_CA_CASES = [
    ("a-certificate", "serving/serving-cert", ("serving", "serving-cert")),
    # Upstream JobSet's CRD, as its release ships it: the kustomize variables were never resolved.
    ("unresolved-kustomize-vars", "$(CERTIFICATE_NAMESPACE)/$(CERTIFICATE_NAME)", None),
    ("no-namespace", "serving-cert", None),
    ("too-many-slashes", "a/b/c", None),
    ("not-a-string", 3, None),
]


@pytest.mark.parametrize(("inject", "expected"), [c[1:] for c in INJECT_CA_CASES], ids=[c[0] for c in INJECT_CA_CASES])
def test_inject_ca_from_names_a_certificate_only_when_it_can_exist(inject: object, expected: object) -> None:
    from kfctl.plan.graph import certificate_ref

    ref = certificate_ref(inject)
    assert (None if ref is None else (ref.namespace, ref.name)) == expected


def _conversion_bundle(versions: list[str]) -> list[dict[str, object]]:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "jobsets.jobset.x-k8s.io"},
        "spec": {
            "group": "jobset.x-k8s.io",
            "names": {"kind": "JobSet", "plural": "jobsets"},
            "scope": "Namespaced",
            "versions": [{"name": v, "served": True, "storage": i == 0} for i, v in enumerate(versions)],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {"service": {"name": "jobset-webhook-service", "namespace": "jobset"}},
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "jobset-webhook-service", "namespace": "jobset"},
        "spec": {"selector": {"app": "jobset"}, "ports": [{"port": 443}]},
    }
    jobset = {
        "apiVersion": f"jobset.x-k8s.io/{versions[0]}",
        "kind": "JobSet",
        "metadata": {"name": "sample", "namespace": "jobset"},
        "spec": {},
    }
    return [crd, service, jobset]


@pytest.mark.parametrize(
    ("versions", "waits"),
    [
        pytest.param(["v1alpha2"], False, id="one-version-never-converts"),
        pytest.param(["v1", "v1alpha2"], True, id="two-versions-convert-through-the-webhook"),
    ],
)
def test_custom_resources_wait_for_a_conversion_webhook_only_when_there_is_something_to_convert(
    versions: list[str], waits: bool
) -> None:
    plan = build_plan([("jobset", _conversion_bundle(versions))], depends_on={})
    text = block(format_plan(plan), "JobSet.jobset.x-k8s.io jobset/sample")
    assert ("webhook backend jobset/jobset-webhook-service" in text) is waits
