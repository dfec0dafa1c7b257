"""`kfctl check --pre`: one row per cluster situation, the exact verdict and message of the check it concerns.

The base situation passes every check: a reachable cluster at v1.33 that serves every kind, one schedulable
node with room, a default StorageClass, every access review allowed, nothing of the bundle there yet.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakecluster import FakeCluster, obj

from kfctl.catalog.model import Component, GeneratedSecret, KubernetesRange, SecretKey
from kfctl.check.model import CheckReport, PreContext
from kfctl.check.runner import PRE_CHECKS, run_checks, select
from kfctl.errors import RenderError, UsageError
from kfctl.k8s.api import Unreachable
from kfctl.render.kustomize import Kustomize
from kfctl.secrets.declared import Declared

APPLYSET = "applyset-test"


TESTED = KubernetesRange("1.27", "1.33")


def component(name: str, kubernetes: KubernetesRange | None = TESTED) -> Component:
    return Component(name, "", "kubeflow", (), (), {}, "", Path("."), (), kubernetes=kubernetes)


def deployment(name: str, *, replicas: int, cpu: str, memory: str) -> dict[str, Any]:
    container = {"name": "c", "image": "x.invalid/c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    return obj(
        "apps/v1",
        "Deployment",
        name,
        "kubeflow",
        spec={"replicas": replicas, "template": {"spec": {"containers": [container]}}},
    )


def bundle() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("op", obj("v1", "Namespace", "kubeflow")),
        ("op", obj("rbac.authorization.k8s.io/v1", "ClusterRole", "op")),
        ("op", deployment("op", replicas=2, cpu="500m", memory="1Gi")),
        ("op", obj("v1", "PersistentVolumeClaim", "data", "kubeflow", spec={"resources": {}})),
    ]


def node(name: str, *, cpu: str = "4", memory: str = "8Gi", **fields: Any) -> dict[str, Any]:
    return obj("v1", "Node", name, status={"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}, **fields)


def default_class() -> dict[str, Any]:
    notes = {"storageclass.kubernetes.io/is-default-class": "true"}
    return obj("storage.k8s.io/v1", "StorageClass", "standard", annotations=notes, provisioner="x")


def cluster() -> FakeCluster:
    c = FakeCluster()
    c.put(node("n1"))
    c.put(default_class())
    return c


def kustomize(version: str) -> Callable[[], Kustomize]:
    return lambda: Kustomize(("kustomize", "build"), version)


def run(
    c: FakeCluster,
    objects: list[tuple[str, dict[str, Any]]],
    *,
    components: dict[str, Component] | None = None,
    non_catalog: tuple[str, ...] = (),
    find: Callable[[], Kustomize] | None = None,
    brought: tuple[Declared, ...] = (),
) -> CheckReport:
    ctx = PreContext(
        cluster=c,
        objects=tuple(objects),
        components={"op": component("training-operator")} if components is None else components,
        non_catalog=non_catalog,
        adoptable=frozenset(),
        applyset_id=APPLYSET,
        inventory_name="kfctl-test",
        namespace="kubeflow",
        find_kustomize=find or kustomize("v5.5.0"),
        brought=brought,
    )
    return run_checks(PRE_CHECKS, ctx)


def verdict(report: CheckReport, name: str) -> tuple[str, str, str]:
    r = next(r for r in report.results if r.name == name)
    return r.verdict, r.message, r.hint


def test_the_base_situation_passes_every_check() -> None:
    report = run(cluster(), bundle())
    assert {r.name: r.verdict for r in report.results} == {
        "cluster-reachable": "pass",
        "kubernetes-version": "pass",
        "can-create": "pass",
        "default-storage-class": "pass",
        "node-capacity": "pass",
        "gpu-nodes": "skip",
        "api-versions": "pass",
        "foreign-owners": "pass",
        "brought-secrets": "skip",
        "kustomize": "pass",
    }
    assert report.verdict == "pass"
    assert verdict(report, "node-capacity")[1] == (
        "the bundle requests cpu 1 of 4, memory 2Gi of 8Gi allocatable on 1 schedulable node(s)"
    )


def no_default_class(c: FakeCluster, objects: list[Any]) -> None:
    del c.objects[next(k for k in c.objects if k.kind == "StorageClass")]


def denied_cluster_roles(c: FakeCluster, objects: list[Any]) -> None:
    c.denied.add(("create", "rbac.authorization.k8s.io", "clusterroles", ""))


def small_node(c: FakeCluster, objects: list[Any]) -> None:
    c.put(node("n1", cpu="900m", memory="1Gi"))


def cordoned_node(c: FakeCluster, objects: list[Any]) -> None:
    c.put(node("n1", spec={"unschedulable": True}))


def v1beta1_crd(c: FakeCluster, objects: list[Any]) -> None:
    c.unserved.add("apiextensions.k8s.io/v1beta1")
    objects.append(("old", obj("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", "olds.example.com")))


def foreign_owner(c: FakeCluster, objects: list[Any]) -> None:
    notes = {"meta.helm.sh/release-name": "op", "meta.helm.sh/release-namespace": "infra"}
    c.put(obj("rbac.authorization.k8s.io/v1", "ClusterRole", "op", annotations=notes))


def old_server(c: FakeCluster, objects: list[Any]) -> None:
    c.version = "v1.25.3"


def new_server(c: FakeCluster, objects: list[Any]) -> None:
    c.version = "v1.35.0"


CASES: list[tuple[str, Callable[[FakeCluster, list[Any]], None], str, tuple[str, str]]] = [
    (
        "no-default-storage-class",
        no_default_class,
        "default-storage-class",
        (
            "fail",
            "1 PersistentVolumeClaim(s) name no storageClassName and the cluster has no default StorageClass: "
            "kubeflow/data — they would stay Pending and apply would wait on them",
        ),
    ),
    (
        "denied-cluster-roles",
        denied_cluster_roles,
        "can-create",
        ("fail", "the user of context 'fake' may not: create clusterroles.rbac.authorization.k8s.io (cluster-wide)"),
    ),
    (
        "nodes-too-small",
        small_node,
        "node-capacity",
        (
            "fail",
            "not enough cpu and memory: the bundle requests cpu 1 of 900m, memory 2Gi of 1Gi allocatable on 1 "
            "schedulable node(s) (per application: op cpu 1 memory 2Gi)",
        ),
    ),
    (
        "only-node-cordoned",
        cordoned_node,
        "node-capacity",
        (
            "fail",
            "not enough cpu and memory: the bundle requests cpu 1 of 0m, memory 2Gi of 0 allocatable on 0 "
            "schedulable node(s) (per application: op cpu 1 memory 2Gi)",
        ),
    ),
    (
        "unserved-api-version",
        v1beta1_crd,
        "api-versions",
        (
            "fail",
            "the cluster does not serve 1 apiVersion/kind(s) of the bundle: "
            "apiextensions.k8s.io/v1beta1 CustomResourceDefinition: 1 object(s) in old; removed in Kubernetes 1.22; "
            "use apiextensions.k8s.io/v1",
        ),
    ),
    (
        "foreign-owner",
        foreign_owner,
        "foreign-owners",
        (
            "fail",
            "1 object(s) exist already under another owner: "
            "ClusterRole.rbac.authorization.k8s.io op (op): Helm release infra/op",
        ),
    ),
    (
        "server-too-old",
        old_server,
        "kubernetes-version",
        ("fail", "Kubernetes 1.25 is too old: op needs ≥ 1.27"),
    ),
    (
        "server-newer-than-tested",
        new_server,
        "kubernetes-version",
        ("warn", "Kubernetes 1.35 is newer than tested: op is supported up to 1.33"),
    ),
]


@pytest.mark.parametrize(("situation", "check", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_cluster_situation_gets_its_verdict(
    situation: Callable[[FakeCluster, list[Any]], None], check: str, expected: tuple[str, str]
) -> None:
    c, objects = cluster(), bundle()
    situation(c, objects)
    report = run(c, objects)
    got = verdict(report, check)
    assert got[:2] == expected
    assert got[2] if expected[0] != "pass" else True, "a failure or warning carries a hint"
    assert report.verdict == expected[0]


MYSQL = Declared(
    application="katib",
    component="katib",
    namespace="kubeflow",
    spec=GeneratedSecret(
        "katib-mysql-secrets",
        "",
        (SecretKey("MYSQL_ROOT_PASSWORD", 16), SecretKey("MYSQL_USER", value="root")),
        parameter="mysqlSecretRef",
    ),
    brought="db-credentials",
)
CREATE = (
    "create each with the keys named (kubectl -n kubeflow create secret generic db-credentials "
    "--from-literal=MYSQL_ROOT_PASSWORD=… --from-literal=MYSQL_USER=…), or drop the parameter from the KfDef and "
    "kfctl generates the Secret at the first apply"
)
BROUGHT: list[tuple[str, dict[str, Any] | None, tuple[str, str, str]]] = [
    # situation, the Secret in the cluster, the verdict of brought-secrets
    (
        "missing",
        None,
        (
            "fail",
            "1 of 1 Secret(s) the KfDef brings are not ready: Secret kubeflow/db-credentials (katib parameter "
            "mysqlSecretRef) does not exist; it needs key(s) MYSQL_ROOT_PASSWORD, MYSQL_USER",
            CREATE,
        ),
    ),
    (
        "a-key-missing",
        obj("v1", "Secret", "db-credentials", "kubeflow", data={"MYSQL_ROOT_PASSWORD": "eA=="}),
        (
            "fail",
            "1 of 1 Secret(s) the KfDef brings are not ready: Secret kubeflow/db-credentials (katib parameter "
            "mysqlSecretRef) lacks key(s) MYSQL_USER (it has MYSQL_ROOT_PASSWORD)",
            CREATE,
        ),
    ),
    (
        "ready",
        obj("v1", "Secret", "db-credentials", "kubeflow", data={"MYSQL_ROOT_PASSWORD": "eA==", "MYSQL_USER": "eA=="}),
        ("pass", "the 1 Secret(s) the KfDef brings have every key needed: kubeflow/db-credentials", ""),
    ),
]


@pytest.mark.parametrize(("secret", "expected"), [b[1:] for b in BROUGHT], ids=[b[0] for b in BROUGHT])
def test_a_secret_the_kfdef_brings_must_exist_with_its_keys(
    secret: dict[str, Any] | None, expected: tuple[str, str, str]
) -> None:
    c = cluster()
    if secret is not None:
        c.put(secret)
    report = run(c, bundle(), brought=(MYSQL,))
    assert verdict(report, "brought-secrets") == expected
    assert report.verdict == expected[0]


KUSTOMIZE: list[tuple[str, Callable[[], Kustomize], tuple[str, str]]] = [
    ("tested", kustomize("v5.5.0"), ("pass", "kustomize v5.5.0")),
    (
        "older-v5",
        kustomize("v5.1.1"),
        ("warn", "kustomize v5.1.1 works, but is older than v5.5, the version kfctl is tested with"),
    ),
]


def missing() -> Kustomize:
    raise RenderError("no kustomize v5+ found (neither kustomize nor kubectl is on PATH)", hint="install it")


KUSTOMIZE.append(("missing", missing, ("fail", "no kustomize v5+ found (neither kustomize nor kubectl is on PATH)")))


@pytest.mark.parametrize(("find", "expected"), [k[1:] for k in KUSTOMIZE], ids=[k[0] for k in KUSTOMIZE])
def test_kustomize_found_or_not(find: Callable[[], Kustomize], expected: tuple[str, str]) -> None:
    assert verdict(run(cluster(), bundle(), find=find), "kustomize")[:2] == expected


def test_a_kind_whose_crd_is_in_the_bundle_is_served_and_checked_through_the_crd() -> None:
    crd = obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "widgets.example.com",
        spec={
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": True}],
        },
    )
    c = cluster()
    c.denied.add(("create", "example.com", "widgets", "kubeflow"))
    report = run(c, [*bundle(), ("op", crd), ("op", obj("example.com/v1", "Widget", "w", "kubeflow"))])
    assert verdict(report, "api-versions")[0] == "pass"
    assert verdict(report, "can-create")[:2] == (
        "fail",
        "the user of context 'fake' may not: create widgets.example.com in kubeflow",
    )


def test_gpu_nodes_warn_only_when_the_device_plugin_is_chosen() -> None:
    components = {"op": component("training-operator"), "gpu": component("nvidia-device-plugin")}
    assert verdict(run(cluster(), bundle(), components=components), "gpu-nodes")[:2] == (
        "warn",
        "no node offers allocatable nvidia.com/gpu: the nvidia-device-plugin has nothing to advertise and GPU jobs "
        "stay Pending",
    )
    c = cluster()
    gpu = node("g1")
    gpu["status"]["allocatable"]["nvidia.com/gpu"] = "2"
    c.put(gpu)
    assert verdict(run(c, bundle(), components=components), "gpu-nodes")[:2] == (
        "pass",
        "1 node(s) offer 2 nvidia.com/gpu",
    )


# Ranges as the catalog declares them: both bounds (cert-manager's supported-releases table), a minimum only
# (an operator's "Kubernetes >= N" prerequisite), one minor (cluster-autoscaler follows the cluster's), none.
RANGED = {
    "cert-manager": component("cert-manager", KubernetesRange("1.31", "1.35")),
    "kserve": component("kserve", KubernetesRange("1.32")),
    "pipelines": component("pipelines", None),
}
AUTOSCALER = {"cluster-autoscaler": component("cluster-autoscaler", KubernetesRange("1.32", "1.32"))}
NOT_CHECKED = " (pipelines: no supported range declared, not checked)"

KUBERNETES_VERSION_CASES: list[tuple[str, str, dict[str, Component], tuple[str, str]]] = [
    (
        "below-every-minimum",
        "v1.30.2",
        RANGED,
        ("fail", f"Kubernetes 1.30 is too old: cert-manager needs ≥ 1.31; kserve needs ≥ 1.32{NOT_CHECKED}"),
    ),
    (
        "below-one-minimum",
        "v1.31.0",
        RANGED,
        ("fail", f"Kubernetes 1.31 is too old: kserve needs ≥ 1.32{NOT_CHECKED}"),
    ),
    (
        "at-the-minimum",
        "v1.32.3",
        RANGED,
        (
            "pass",
            f"Kubernetes 1.32 is within the supported range of cert-manager 1.31–1.35, kserve ≥ 1.32{NOT_CHECKED}",
        ),
    ),
    (
        "at-the-maximum",
        "v1.35.1",
        RANGED,
        (
            "pass",
            f"Kubernetes 1.35 is within the supported range of cert-manager 1.31–1.35, kserve ≥ 1.32{NOT_CHECKED}",
        ),
    ),
    (
        "above-a-maximum-a-minimum-only-range-has-no-ceiling",
        "v1.36.0",
        RANGED,
        ("warn", f"Kubernetes 1.36 is newer than tested: cert-manager is supported up to 1.35{NOT_CHECKED}"),
    ),
    (
        "provider-suffix-in-the-server-version",
        "v1.33.5-eks-1234567",
        RANGED,
        (
            "pass",
            f"Kubernetes 1.33 is within the supported range of cert-manager 1.31–1.35, kserve ≥ 1.32{NOT_CHECKED}",
        ),
    ),
    (
        "one-minor-only-matches",
        "v1.32.0",
        AUTOSCALER,
        ("pass", "Kubernetes 1.32 is within the supported range of cluster-autoscaler 1.32 only"),
    ),
    (
        "one-minor-only-below",
        "v1.31.9",
        AUTOSCALER,
        ("fail", "Kubernetes 1.31 is too old: cluster-autoscaler needs ≥ 1.32"),
    ),
    (
        "one-minor-only-above",
        "v1.33.0",
        AUTOSCALER,
        ("warn", "Kubernetes 1.33 is newer than tested: cluster-autoscaler is supported up to 1.32"),
    ),
    (
        "too-old-for-one-and-too-new-for-another",
        "v1.31.0",
        {**AUTOSCALER, "training-operator": component("training-operator", KubernetesRange("1.28", "1.30"))},
        (
            "fail",
            "Kubernetes 1.31 is too old: cluster-autoscaler needs ≥ 1.32; "
            "newer than tested: training-operator is supported up to 1.30",
        ),
    ),
    (
        "no-range-anywhere",
        "v1.32.0",
        {"pipelines": component("pipelines", None)},
        (
            "skip",
            f"no application declares a supported Kubernetes range{NOT_CHECKED}",
        ),
    ),
    (
        "unreadable-server-version",
        "devel",
        RANGED,
        ("warn", f"cannot read a version from the server's 'devel'{NOT_CHECKED}"),
    ),
]


@pytest.mark.parametrize(
    ("server", "components", "expected"),
    [c[1:] for c in KUBERNETES_VERSION_CASES],
    ids=[c[0] for c in KUBERNETES_VERSION_CASES],
)
def test_each_declared_range_is_held_against_the_servers_minor(
    server: str, components: dict[str, Component], expected: tuple[str, str]
) -> None:
    c = cluster()
    c.version = server
    got = verdict(run(c, bundle(), components=components), "kubernetes-version")
    assert got[:2] == expected
    assert bool(got[2]) == (expected[0] in ("warn", "fail")), "a failure or warning, and only those, says what to do"


def test_non_catalog_applications_are_named_as_not_checked() -> None:
    report = run(cluster(), bundle(), components={}, non_catalog=("upstream",))
    assert verdict(report, "kubernetes-version")[:2] == (
        "skip",
        "no application declares a supported Kubernetes range (upstream: no supported range declared, not checked)",
    )


def test_an_unreachable_cluster_fails_once_and_skips_the_checks_that_need_it() -> None:
    c = cluster()

    def down() -> str:
        raise Unreachable("GET https://fake.invalid: connection refused")

    c.server_version = down  # type: ignore[method-assign]
    report = run(c, bundle())
    assert verdict(report, "cluster-reachable")[:2] == (
        "fail",
        "cannot reach server https://fake.invalid (context fake, kubeconfig -): GET https://fake.invalid: "
        "connection refused",
    )
    assert {r.name for r in report.results if r.verdict == "skip"} == {
        c.name for c in PRE_CHECKS if c.needs_cluster and c.name != "cluster-reachable"
    }
    assert verdict(report, "kustomize")[0] == "pass"


@pytest.mark.parametrize(
    ("only", "skip", "expected"),
    [
        (("kustomize",), (), ["kustomize"]),
        (
            (),
            ("node-capacity", "gpu-nodes"),
            [c.name for c in PRE_CHECKS if c.name not in ("node-capacity", "gpu-nodes")],
        ),
    ],
    ids=["only", "skip"],
)
def test_only_and_skip_select_by_name(only: tuple[str, ...], skip: tuple[str, ...], expected: list[str]) -> None:
    assert [c.name for c in select(PRE_CHECKS, only=only, skip=skip)] == expected


def test_an_unknown_check_name_is_a_usage_error_listing_the_known() -> None:
    with pytest.raises(UsageError, match="unknown check\\(s\\): node-size") as e:
        select(PRE_CHECKS, only=("node-size",))
    assert e.value.hint is not None and "node-capacity" in e.value.hint
