"""R5: a user with narrow RBAC gets a clear Forbidden (exit 7) naming verb, resource and namespace; the inventory
stays intact; a later apply with full rights converges.

The narrow user is a ServiceAccount (bound token from the TokenRequest API) with a Role in the app's namespace
that allows ConfigMaps (so the inventory can be written) and nothing else there, plus read access to
namespaces (kfctl identifies the cluster by kube-system's UID and checks target namespaces).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from apply_support import kfctl, kubectl, write_local_kfdef
from reliability_support import inventory, kubectl_apply, token_kubeconfig

pytestmark = pytest.mark.e2e

RUN = uuid.uuid4().hex[:6]  # a re-run never meets the previous run's namespaces still terminating
NS = f"e2e-narrow-{RUN}"
NAME = "e2e-narrow"
ADMIN_NS = f"e2e-narrow-admin-{RUN}"  # where the ServiceAccount lives, so that our app's delete cannot take it


def bundle(extra: bool = False) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": NS},
            "data": {"a": "b"},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NS},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "x.invalid/w"}]},
                },
            },
        },
    ]
    if extra:
        objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "more", "namespace": NS}})
    return objs


def rbac() -> list[dict[str, Any]]:
    sa = {"kind": "ServiceAccount", "name": "narrow", "namespace": ADMIN_NS}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ADMIN_NS}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "narrow", "namespace": ADMIN_NS}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "e2e-narrow-read-namespaces"},
            "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "e2e-narrow-read-namespaces"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "e2e-narrow-read-namespaces",
            },
            "subjects": [sa],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "configmaps-only", "namespace": NS},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create", "patch"]},
                # kfctl's run lock (README: a Lease in the inventory's namespace).
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "configmaps-only", "namespace": NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmaps-only"},
            "subjects": [sa],
        },
    ]


def test_a_narrow_user_gets_a_clear_forbidden_and_the_inventory_stays_intact(tmp_path: Path, kubeconfig: str) -> None:
    kubectl_apply(kubeconfig, rbac())
    narrow = token_kubeconfig(kubeconfig, namespace=ADMIN_NS, service_account="narrow", path=tmp_path / "narrow")
    app = tmp_path / "app"
    write_local_kfdef(app, name=NAME, namespace=NS, apps={"web": bundle()})
    try:
        # 1. Allowed to write the inventory and ConfigMaps, not Deployments: exit 7 naming verb, resource, ns.
        run = kfctl("apply", str(app), "--wait-timeout", "1m", kubeconfig=narrow)
        assert run.code == 7, run.explain()
        text = " ".join([run.error["message"], *run.error["details"]])
        for words in (
            f"system:serviceaccount:{ADMIN_NS}:narrow",
            "deployments",
            'API group "apps"',
            f'namespace "{NS}"',
            "forbidden",
        ):
            assert words in text, text
        assert any(verb in text for verb in ("cannot get resource", "cannot patch resource")), text
        assert "Error (internal)" not in run.stderr and "Traceback" not in run.stderr
        inv = inventory(kubeconfig, namespace=NS, name=f"kfctl-inventory-{NAME}")
        assert inv is not None
        assert set(inv[1]) == {("", "ConfigMap", NS, "settings"), ("apps", "Deployment", NS, "web")}, inv

        # 2. Status as the narrow user: the Deployment cannot be read; a clear answer, not a crash.
        status = kfctl("status", str(app), kubeconfig=narrow)
        assert status.code in (7, 8), status.explain()
        assert "Error (internal)" not in status.stderr

        # 3. A prune the user may not do: exit 7, and what could not be pruned stays in the inventory.
        full = kfctl("apply", str(app), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert full.code == 0, full.explain()
        write_local_kfdef(app, name=NAME, namespace=NS, apps={"web": [bundle()[0]]})
        run = kfctl("apply", str(app), "--wait-timeout", "1m", kubeconfig=narrow)
        assert run.code == 7, run.explain()
        text = " ".join([run.error["message"], *run.error["details"]])
        assert "deployments" in text and f'namespace "{NS}"' in text and "forbidden" in text, text
        inv = inventory(kubeconfig, namespace=NS, name=f"kfctl-inventory-{NAME}")
        assert inv is not None and ("apps", "Deployment", NS, "web") in inv[1], inv
        assert kubectl(kubeconfig, "-n", NS, "get", "deployment", "web", "-o", "name").strip()

        # 4. A user who cannot even read kube-system: exit 7 saying what was refused.
        kubectl(kubeconfig, "delete", "clusterrolebinding", "e2e-narrow-read-namespaces")
        run = kfctl("apply", str(app), kubeconfig=narrow)
        assert run.code == 7, run.explain()
        assert "forbidden" in run.error["message"] and "namespaces" in run.error["message"], run.error

        # 5. With full rights it converges: the prune goes through and the inventory is exact.
        write_local_kfdef(app, name=NAME, namespace=NS, apps={"web": bundle(extra=True)[:1] + bundle(extra=True)[2:]})
        run = kfctl("apply", str(app), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        inv = inventory(kubeconfig, namespace=NS, name=f"kfctl-inventory-{NAME}")
        assert inv is not None
        assert set(inv[1]) == {("", "ConfigMap", NS, "settings"), ("", "ConfigMap", NS, "more")}, inv
        assert kfctl("status", str(app), kubeconfig=kubeconfig).code == 0
    finally:
        kfctl("delete", str(app), "--wait-timeout", "1m", kubeconfig=kubeconfig)
        for kind, name in (
            ("clusterrolebinding", "e2e-narrow-read-namespaces"),
            ("clusterrole", "e2e-narrow-read-namespaces"),
        ):
            kubectl(kubeconfig, "delete", kind, name, "--ignore-not-found", check=False)
        for ns in (NS, ADMIN_NS):
            kubectl(kubeconfig, "delete", "namespace", ns, "--ignore-not-found", "--wait=false", check=False)
