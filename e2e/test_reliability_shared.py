"""R4: two kfctl apps and a user share one namespace; prune and delete of one never touch the others.

App A creates namespace e2e-shared and keeps its inventory there; app B puts objects (and its inventory) into
the same namespace without owning it; the user adds unlabelled objects of their own. Prune and delete of each
app remove exactly that app's objects. The namespace outlives A's delete while B's or the user's objects are
in it, and the kept message names them; only --force-namespaces deletes it (and them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apply_support import kfctl, kubectl, write_local_kfdef

pytestmark = pytest.mark.e2e

NS = "e2e-shared"


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": {"k": name}}


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "x.invalid/c"}]},
            },
        },
    }


def service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}]},
    }


NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}


def app_a(*, with_namespace: bool = True, extra: bool = True) -> list[dict[str, Any]]:
    objs = [cm("a-1"), deployment("a-web"), service("a-web")] + ([cm("a-2")] if extra else [])
    return ([NAMESPACE] if with_namespace else []) + objs


def app_b() -> list[dict[str, Any]]:
    return [cm("b-1"), deployment("b-web"), service("b-web")]


def names(kind: str) -> set[str]:
    return set(kubectl(KUBECONFIG[0], "-n", NS, "get", kind, "-o", "jsonpath={.items[*].metadata.name}").split())


KUBECONFIG: list[str] = []


def test_two_apps_and_a_user_share_a_namespace(tmp_path: Path, kubeconfig: str) -> None:
    KUBECONFIG[:] = [kubeconfig]
    a, b = tmp_path / "a", tmp_path / "b"
    write_local_kfdef(a, name="e2e-shared-a", namespace=NS, apps={"a": app_a()})
    write_local_kfdef(b, name="e2e-shared-b", namespace=NS, apps={"b": app_b()})
    try:
        for d in (a, b):
            run = kfctl("apply", str(d), "--wait-timeout", "2m", kubeconfig=kubeconfig)
            assert run.code == 0, run.explain()
        kubectl(kubeconfig, "-n", NS, "create", "configmap", "user-notes", "--from-literal=note=keep me")
        kubectl(kubeconfig, "-n", NS, "create", "secret", "generic", "user-secret", "--from-literal=pw=hunter2")
        user = {"user-notes", "user-secret"}

        # Prune in A removes exactly A's dropped object.
        write_local_kfdef(a, name="e2e-shared-a", namespace=NS, apps={"a": app_a(extra=False)})
        run = kfctl("apply", str(a), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        assert [e["subject"] for e in run.events if e["event"] == "Pruned"] == [f"ConfigMap {NS}/a-2"]
        assert {"a-1", "b-1", "user-notes"} <= names("configmaps") and "a-2" not in names("configmaps")

        # A stops declaring the namespace while its objects still live there: even --prune-namespaces keeps it.
        write_local_kfdef(a, name="e2e-shared-a", namespace=NS, apps={"a": app_a(with_namespace=False, extra=False)})
        run = kfctl(
            "apply", str(a), "--prune-namespaces", "--wait-timeout", "2m", "--detailed-exitcode", kubeconfig=kubeconfig
        )
        assert run.code == 0, run.explain()  # nothing changed: the namespace stays recorded, and there
        assert run.summary["pruned"] == 0 and any(k.startswith(f"Namespace {NS}:") for k in run.summary["kept"])
        write_local_kfdef(a, name="e2e-shared-a", namespace=NS, apps={"a": app_a(extra=False)})
        assert kfctl("apply", str(a), kubeconfig=kubeconfig).code == 0

        # Deleting B removes only B's objects.
        run = kfctl("delete", str(b), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        assert names("deployments") == {"a-web"}
        assert names("configmaps") >= {"a-1", "user-notes", "kfctl-inventory-e2e-shared-a"}
        assert not names("configmaps") & {"b-1", "kfctl-inventory-e2e-shared-b"}
        assert kfctl("status", str(a), kubeconfig=kubeconfig).code == 0

        # Deleting A while B is back: the namespace stays, naming B's objects and the user's.
        run = kfctl("apply", str(b), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        run = kfctl("delete", str(a), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        (kept,) = run.summary["kept"]
        assert kept.startswith(f"Namespace {NS}: holds ")
        for what in (
            f"ConfigMap {NS}/b-1 (kfctl app e2e-shared-b)",
            f"Deployment.apps {NS}/b-web (kfctl app e2e-shared-b)",
            f"ConfigMap {NS}/kfctl-inventory-e2e-shared-b (ApplySet parent)",
            f"ConfigMap {NS}/user-notes",
            f"Secret {NS}/user-secret",
        ):
            assert what in kept, kept
        assert "a-web" not in kept and "kube-root-ca.crt" not in kept and "ReplicaSet" not in kept, kept
        assert kept.endswith("kept without --force-namespaces")
        assert names("deployments") == {"b-web"} and user <= names("configmaps") | names("secrets")
        assert kfctl("status", str(b), kubeconfig=kubeconfig).code == 0

        # B goes; A's delete now names only the user's objects; then it is forced.
        assert kfctl("delete", str(b), "--wait-timeout", "2m", kubeconfig=kubeconfig).code == 0
        run = kfctl("delete", str(a), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        assert run.summary["kept"] == [
            f"Namespace {NS}: holds 2 object(s) kfctl did not apply: ConfigMap {NS}/user-notes, "
            f"Secret {NS}/user-secret; kept without --force-namespaces"
        ]
        assert user <= names("configmaps") | names("secrets")
        run = kfctl("delete", str(a), "--force-namespaces", "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        assert not kubectl(kubeconfig, "get", "namespace", NS, "-o", "name", check=False).strip()
    finally:
        for d in (b, a):
            kfctl("delete", str(d), "--force-namespaces", "--wait-timeout", "2m", kubeconfig=kubeconfig)
        kubectl(kubeconfig, "delete", "namespace", NS, "--ignore-not-found", "--wait=false", check=False)
