"""`kfctl check --pre` against a real API server: it passes where an install would work, and names the check
and the fix where it would not (a missing default StorageClass, a user who may not create ClusterRoles, nodes
too small for the bundle). Its verdicts come from the cluster's own answers: SelfSubjectAccessReviews, the
Nodes' allocatable, the StorageClasses."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from apply_support import kfctl, kubectl, write_local_kfdef
from reliability_support import kubectl_apply, token_kubeconfig

pytestmark = pytest.mark.e2e

DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def check(app: Path, kubeconfig: str) -> tuple[int, dict[str, dict[str, str]]]:
    run = kfctl("check", "--pre", str(app), kubeconfig=kubeconfig)
    assert run.code in (0, 13, 14), run.explain()
    report = json.loads(run.stdout)
    return run.code, {c["name"]: c for c in report["checks"]}


def deployment(name: str, namespace: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]},
            },
        },
    }


def test_the_catalog_passes_on_the_local_cluster(tmp_path: Path, kubeconfig: str) -> None:
    app = tmp_path / "platform"
    run = kfctl(
        "init", str(app), "--platform", "kind", "--components", "training-operator,katib", kubeconfig=kubeconfig
    )
    assert run.code == 0, run.explain()
    code, checks = check(app, kubeconfig)
    assert code == 0, checks
    assert {name: c["verdict"] for name, c in checks.items()} == {
        "cluster-reachable": "pass",
        "kubernetes-version": "pass",  # v1.33: training-operator >= 1.28, katib >= 1.27, cert-manager 1.31 to 1.35
        "can-create": "pass",
        "default-storage-class": "pass",  # katib's MySQL PVC binds through the cluster's default class
        "node-capacity": "pass",
        "gpu-nodes": "skip",
        "api-versions": "pass",
        "foreign-owners": "pass",
        "brought-secrets": "skip",  # katib's MySQL Secret is generated at the first apply
        "kustomize": "pass",
    }


def test_without_a_default_storage_class_a_pvc_would_stay_pending(tmp_path: Path, kubeconfig: str) -> None:
    ns = f"pre-{uuid.uuid4().hex[:6]}"
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": ns},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    app = tmp_path / "app"
    write_local_kfdef(app, name=ns, namespace="default", apps={"db": [namespace, pvc]})
    classes = json.loads(kubectl(kubeconfig, "get", "storageclass", "-o", "json"))["items"]
    defaults = [
        f"storageclass/{sc['metadata']['name']}"
        for sc in classes
        if (sc["metadata"].get("annotations") or {}).get(DEFAULT_CLASS) == "true"
    ]
    assert defaults, "the local cluster has a default StorageClass"
    try:
        for sc in defaults:
            kubectl(kubeconfig, "annotate", sc, f"{DEFAULT_CLASS}=false", "--overwrite")
        code, checks = check(app, kubeconfig)
        assert code == 14
        verdict = checks["default-storage-class"]
        assert verdict["verdict"] == "fail", verdict
        assert f"{ns}/data" in verdict["message"], verdict
        assert "default" in verdict["hint"], verdict
    finally:
        for sc in defaults:
            kubectl(kubeconfig, "annotate", sc, f"{DEFAULT_CLASS}=true", "--overwrite")


def test_a_user_who_may_not_create_cluster_roles_is_told_before_the_install(tmp_path: Path, kubeconfig: str) -> None:
    token = uuid.uuid4().hex[:6]
    ns = f"pre-{token}"
    sa = {"kind": "ServiceAccount", "name": "narrow", "namespace": ns}
    kubectl_apply(
        kubeconfig,
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "narrow", "namespace": ns}},
            {  # may read namespaces (kfctl identifies the cluster by kube-system's UID) and own its namespace
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": f"read-namespaces-{token}"},
                "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list"]}],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"read-namespaces-{token}"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": f"read-namespaces-{token}",
                },
                "subjects": [sa],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "admin", "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                "subjects": [sa],
            },
        ],
    )
    narrow = token_kubeconfig(kubeconfig, namespace=ns, service_account="narrow", path=tmp_path / "narrow")
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"reader-{token}"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": ns}}
    app = tmp_path / "app"
    write_local_kfdef(app, name=ns, namespace=ns, apps={"web": [config, role]})
    try:
        code, checks = check(app, narrow)
        assert code == 14
        assert checks["cluster-reachable"]["verdict"] == "pass", checks["cluster-reachable"]
        verdict = checks["can-create"]
        assert verdict["verdict"] == "fail", verdict
        assert "clusterroles" in verdict["message"] and "ConfigMap" not in verdict["message"], verdict
        assert verdict["hint"], verdict
    finally:
        for kind, name in (
            ("clusterrolebinding", f"read-namespaces-{token}"),
            ("clusterrole", f"read-namespaces-{token}"),
        ):
            kubectl(kubeconfig, "delete", kind, name, "--ignore-not-found", check=False)
        kubectl(kubeconfig, "delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)


def test_nodes_too_small_for_the_bundle_fail_with_each_applications_share(tmp_path: Path, kubeconfig: str) -> None:
    ns = f"pre-{uuid.uuid4().hex[:6]}"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    app = tmp_path / "app"
    write_local_kfdef(
        app,
        name=ns,
        namespace="default",
        apps={"small": [namespace, deployment("small", ns, "100m")], "huge": [deployment("huge", ns, "5000")]},
    )
    code, checks = check(app, kubeconfig)
    assert code == 14
    verdict = checks["node-capacity"]
    assert verdict["verdict"] == "fail", verdict
    assert "huge" in verdict["message"] and "cpu" in verdict["message"], verdict
    assert verdict["hint"], verdict
