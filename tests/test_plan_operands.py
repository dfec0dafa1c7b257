"""Three edges that keep a first install off the slow path the server's own timing would send it down:

- an operator's workload waits for the CRDs of its application that its ServiceAccount may list or watch (else
  it exits until they are served, and the kubelet's back-off doubles each time);
- a Certificate waits for the issuer it names (else the Issuer, which nothing waited for, was applied last);
- a workload waits for the Certificate whose Secret its pods mount (its pods cannot start before; the edge gives
  the Certificate's chain the workload's priority).

Each row: a small bundle, and the exact edges (rule name) of the step in question.
"""

from __future__ import annotations

from typing import Any

import pytest

from kfctl.plan.graph import build_plan

RBAC = "rbac.authorization.k8s.io/v1"
CRD_ID = "CustomResourceDefinition.apiextensions.k8s.io widgets.example.com"
OPERATOR_ID = "Deployment.apps ops/operator"


def crd(plural: str = "widgets", group: str = "example.com") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": plural.title().rstrip("s"), "plural": plural},
            "scope": "Namespaced",
        },
    }


def deployment(account: str | None = "operator") -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "manager", "image": "example.com/operator:v1"}]}
    if account:
        pod["serviceAccountName"] = account
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "operator", "namespace": "ops"},
        "spec": {
            "selector": {"matchLabels": {"app": "op"}},
            "template": {"metadata": {"labels": {"app": "op"}}, "spec": pod},
        },
    }


def cluster_role(
    verbs: list[str], groups: list[str] | None = None, resources: list[str] | None = None
) -> dict[str, Any]:
    rule = {"apiGroups": groups or ["example.com"], "resources": resources or ["widgets"], "verbs": verbs}
    return {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "operator"}, "rules": [rule]}


def cluster_binding(account: str = "operator", namespace: str = "ops") -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "operator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "operator"},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


def namespaced(obj: dict[str, Any], namespace: str = "kubeflow") -> dict[str, Any]:
    """The object with a ``metadata.namespace``: what Helm charts put on ClusterRoles, and the API server ignores."""
    return {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}


def role_binding_without_subject_namespace() -> dict[str, Any]:
    """A RoleBinding whose subject names no namespace: the binding's own namespace is meant."""
    return {
        "apiVersion": RBAC,
        "kind": "RoleBinding",
        "metadata": {"name": "operator", "namespace": "ops"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "operator"},
        "subjects": [{"kind": "ServiceAccount", "name": "operator"}],
    }


def role(verbs: list[str]) -> dict[str, Any]:
    rule = {"apiGroups": ["example.com"], "resources": ["widgets", "widgets/status"], "verbs": verbs}
    return {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "operator", "namespace": "ops"}, "rules": [rule]}


def edges(apps: list[tuple[str, list[dict[str, Any]]]], step: str) -> list[tuple[str, str]]:
    plan = build_plan(apps, depends_on={})
    return sorted((e.dependency, e.rule.name) for e in plan.deps[step])


WATCHES = ("operand-crd",)
NOTHING = ()


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [crd(), deployment(), cluster_role(["get", "list", "watch"]), cluster_binding()],
            WATCHES,
            id="watches its kind",
        ),
        pytest.param([crd(), deployment(), cluster_role(["*"]), cluster_binding()], WATCHES, id="verbs *"),
        pytest.param(
            [crd(), deployment(), cluster_role(["list"], ["*"], ["*"]), cluster_binding()],
            WATCHES,
            id="any group, any resource",
        ),
        pytest.param(
            [crd(), deployment(), role(["watch"]), role_binding_without_subject_namespace()],
            WATCHES,
            id="Role, subject in the binding's namespace",
        ),
        pytest.param(
            [crd(), deployment(), cluster_role(["get", "create", "update"]), cluster_binding()],
            NOTHING,
            id="may not list or watch",
        ),
        pytest.param(
            [crd(), deployment(), cluster_role(["list"], resources=["gadgets"]), cluster_binding()],
            NOTHING,
            id="another kind",
        ),
        pytest.param(
            [crd(), deployment(), cluster_role(["list"]), cluster_binding(account="other")],
            NOTHING,
            id="another ServiceAccount",
        ),
        pytest.param(
            [crd(), deployment(account=None), cluster_role(["list"]), cluster_binding(account="default")],
            WATCHES,
            id="the default ServiceAccount",
        ),
        pytest.param(
            [crd(), deployment(), namespaced(cluster_role(["list"])), cluster_binding()],
            WATCHES,
            id="a ClusterRole rendered with a namespace (upstream's Spark operator chart): bound all the same",
        ),
        pytest.param([crd(), deployment(), cluster_role(["list"])], NOTHING, id="role never bound"),
        pytest.param([crd(), deployment()], NOTHING, id="no RBAC: a database, say"),
    ],
)
def test_an_operator_waits_for_the_crds_of_its_application_it_may_watch(
    objects: list[dict[str, Any]], expected: tuple[str, ...]
) -> None:
    got = [rule for dep, rule in edges([("app", objects)], OPERATOR_ID) if dep == CRD_ID]
    assert tuple(got) == expected


def test_a_crd_of_another_application_is_left_to_depends_on() -> None:
    apps = [("api", [crd()]), ("app", [deployment(), cluster_role(["list"]), cluster_binding()])]
    assert CRD_ID not in [dep for dep, _ in edges(apps, OPERATOR_ID)]


def test_no_edge_that_would_close_a_cycle() -> None:
    """The CRD itself waits for the operator (a kfctl.kubeflow.org/depends-on hint): the operator does not wait for
    it in turn, and the plan is still acyclic."""
    waits = crd()
    waits["metadata"]["annotations"] = {"kfctl.kubeflow.org/depends-on": "Deployment.apps/ops/operator"}
    objects = [waits, deployment(), cluster_role(["list"]), cluster_binding()]
    assert edges([("app", objects)], CRD_ID) == [(OPERATOR_ID, "hint")]
    assert CRD_ID not in [dep for dep, _ in edges([("app", objects)], OPERATOR_ID)]


def certificate(issuer_ref: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "serving-cert", "namespace": "ops"},
        "spec": {"secretName": "serving-cert", "dnsNames": ["x.ops.svc"], "issuerRef": issuer_ref},
    }


def issuer(kind: str, namespace: str = "") -> dict[str, Any]:
    meta = {"name": "selfsigned", **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "cert-manager.io/v1", "kind": kind, "metadata": meta, "spec": {"selfSigned": {}}}


@pytest.mark.parametrize(
    ("issuer_ref", "issuers", "expected"),
    [
        pytest.param(
            {"name": "selfsigned"},
            [issuer("Issuer", "ops")],
            [("Issuer.cert-manager.io ops/selfsigned", "issuer")],
            id="Issuer by default",
        ),
        pytest.param(
            {"kind": "ClusterIssuer", "name": "selfsigned"},
            [issuer("ClusterIssuer")],
            [("ClusterIssuer.cert-manager.io selfsigned", "issuer")],
            id="ClusterIssuer",
        ),
        pytest.param(
            {"kind": "Issuer", "name": "selfsigned"},
            [issuer("Issuer", "other")],
            [],
            id="an Issuer of another namespace",
        ),
        pytest.param(
            {"group": "awspca.cert-manager.io", "kind": "AWSPCAIssuer", "name": "selfsigned"},
            [issuer("Issuer", "ops")],
            [],
            id="an external issuer's kind",
        ),
        pytest.param({"name": "selfsigned"}, [], [], id="the issuer is not in the bundle"),
    ],
)
def test_a_certificate_waits_for_the_issuer_it_names(
    issuer_ref: dict[str, str], issuers: list[dict[str, Any]], expected: list[tuple[str, str]]
) -> None:
    got = edges([("app", [certificate(issuer_ref), *issuers])], "Certificate.cert-manager.io ops/serving-cert")
    assert [e for e in got if e[1] == "issuer"] == expected


def mounting(secret: str) -> dict[str, Any]:
    d = deployment()
    d["spec"]["template"]["spec"]["volumes"] = [{"name": "cert", "secret": {"secretName": secret}}]
    return d


SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "serving-cert", "namespace": "ops"}}
CERT_ID = "Certificate.cert-manager.io ops/serving-cert"


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [mounting("serving-cert"), certificate({"name": "selfsigned"})],
            [(CERT_ID, "mounts-certificate")],
            id="mounts the Secret the Certificate makes",
        ),
        pytest.param([mounting("other"), certificate({"name": "selfsigned"})], [], id="another Secret"),
        pytest.param(
            [mounting("serving-cert"), certificate({"name": "selfsigned"}), SECRET],
            [],
            id="the Secret is in the bundle: a pod-ref to it, not to the Certificate",
        ),
    ],
)
def test_a_workload_waits_for_the_certificate_whose_secret_its_pods_mount(
    objects: list[dict[str, Any]], expected: list[tuple[str, str]]
) -> None:
    got = edges([("app", objects)], OPERATOR_ID)
    assert [e for e in got if e[0] == CERT_ID] == expected


def test_a_certificate_that_waits_for_the_workload_gets_no_edge_back() -> None:
    cert = certificate({"name": "selfsigned"})
    cert["metadata"]["annotations"] = {"kfctl.kubeflow.org/depends-on": "Deployment.apps/ops/operator"}
    objects = [mounting("serving-cert"), cert]
    assert edges([("app", objects)], CERT_ID) == [(OPERATOR_ID, "hint")]
    assert CERT_ID not in [dep for dep, _ in edges([("app", objects)], OPERATOR_ID)]


BINDING_ID = "ClusterRoleBinding.rbac.authorization.k8s.io operator"
ROLE_BINDING_ID = "RoleBinding.rbac.authorization.k8s.io ops/operator"


@pytest.mark.parametrize(
    ("apps", "expected"),
    [
        pytest.param(
            [("app", [deployment(), cluster_role(["get"]), cluster_binding()])],
            [(BINDING_ID, "account-binding")],
            id="a ClusterRoleBinding to its ServiceAccount",
        ),
        pytest.param(
            [("app", [deployment(), role(["get"]), role_binding_without_subject_namespace()])],
            [(ROLE_BINDING_ID, "account-binding")],
            id="a RoleBinding whose subject is in the binding's namespace",
        ),
        pytest.param(
            [("app", [deployment(account=None), cluster_role(["get"]), cluster_binding(account="default")])],
            [(BINDING_ID, "account-binding")],
            id="the default ServiceAccount",
        ),
        pytest.param(
            [("app", [deployment(), cluster_role(["get"]), cluster_binding(account="other")])],
            [],
            id="another ServiceAccount",
        ),
        pytest.param(
            [("app", [deployment(), cluster_role(["get"]), cluster_binding(namespace="elsewhere")])],
            [],
            id="a ServiceAccount of the same name in another namespace",
        ),
        pytest.param(
            [("rbac", [cluster_role(["get"]), cluster_binding()]), ("app", [deployment()])],
            [],
            id="another application's binding: dependsOn orders applications",
        ),
    ],
)
def test_a_workload_is_applied_after_the_bindings_of_its_service_account(
    apps: list[tuple[str, list[dict[str, Any]]]], expected: list[tuple[str, str]]
) -> None:
    """KServe's controller, started before its bindings, exited on `configmaps ... is forbidden` and was
    restarted after a back-off: the bindings come first (order only, as Helm orders RBAC before workloads)."""
    got = [(dep, rule) for dep, rule in edges(apps, OPERATOR_ID) if "Binding" in dep]
    assert got == expected
    rule = build_plan(apps, depends_on={}).deps[OPERATOR_ID]
    assert all(e.rule.order_only for e in rule if e.rule.name == "account-binding"), "order only: bindings do not wait"


def test_a_binding_refers_to_a_cluster_role_rendered_with_a_namespace() -> None:
    objects = [deployment(), namespaced(cluster_role(["get"])), cluster_binding()]
    assert edges([("app", objects)], BINDING_ID) == [
        ("ClusterRole.rbac.authorization.k8s.io kubeflow/operator", "role-ref")
    ]


def config_map(name: str = "operator-config", namespace: str = "ops") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


reads_config_maps = [cluster_role(["get"], [""], ["configmaps"]), cluster_binding()]


def mounting(name: str) -> dict[str, Any]:
    d = deployment()
    d["spec"]["template"]["spec"]["volumes"] = [{"name": "c", "configMap": {"name": name}}]
    return d


@pytest.mark.parametrize(
    ("apps", "expected"),
    [
        pytest.param(
            [("app", [deployment(), config_map(), *reads_config_maps])],
            [("ConfigMap ops/operator-config", "app-config")],
            id="its ServiceAccount may get ConfigMaps (KServe's reads inferenceservice-config): applied first",
        ),
        pytest.param(
            [("app", [deployment(), config_map()])],
            [],
            id="no right to read ConfigMaps: no edge (a namespace of many ConfigMaps stays a small plan)",
        ),
        pytest.param(
            [("app", [mounting("operator-config"), config_map()])],
            [("ConfigMap ops/operator-config", "pod-ref")],
            id="referenced by the pod spec: the pod-ref edge it always had",
        ),
        pytest.param(
            [("app", [deployment(), config_map(namespace="other"), *reads_config_maps])], [], id="another namespace"
        ),
        pytest.param(
            [("config", [config_map()]), ("app", [deployment(), *reads_config_maps])],
            [],
            id="another application's: left to dependsOn",
        ),
    ],
)
def test_a_workload_is_applied_after_its_applications_config_in_its_namespace(
    apps: list[tuple[str, list[dict[str, Any]]]], expected: list[tuple[str, str]]
) -> None:
    assert [(dep, rule) for dep, rule in edges(apps, OPERATOR_ID) if dep.startswith("ConfigMap")] == expected
