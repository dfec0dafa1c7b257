"""A kfctl v1.2 KfDef against a current API server: the official kfctl_k8s_istio.v1.2.0.yaml, unnamed as
upstream ships it, its repo pointed at the kubeflow/manifests v1.2.0 release (../shared/fixtures; skipped,
naming the path, without it). kfctl renders it, then `apply` and `diff` stop before writing anything, naming
every apiVersion/kind the real API server (v1.33) does not serve — the server's discovery is the oracle —
with the version that replaced it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml
from apply_support import REPO, kfctl, kubectl

pytestmark = pytest.mark.e2e

FIXTURES = REPO.parent / "shared" / "fixtures"
KFDEF = FIXTURES / "kfctl_k8s_istio.v1.2.0.yaml"
TARBALL = FIXTURES / "kubeflow-manifests-v1.2.0.tar.gz"
UNSERVED = [
    ("admissionregistration.k8s.io/v1beta1 MutatingWebhookConfiguration", 7, "admissionregistration.k8s.io/v1"),
    ("admissionregistration.k8s.io/v1beta1 ValidatingWebhookConfiguration", 6, "admissionregistration.k8s.io/v1"),
    ("apiextensions.k8s.io/v1beta1 CustomResourceDefinition", 65, "apiextensions.k8s.io/v1"),
    ("apiregistration.k8s.io/v1beta1 APIService", 1, "apiregistration.k8s.io/v1"),
    ("autoscaling/v2beta1 HorizontalPodAutoscaler", 6, "autoscaling/v2"),
    ("policy/v1beta1 PodDisruptionBudget", 7, "policy/v1"),
    ("rbac.authorization.k8s.io/v1beta1 ClusterRole", 16, "rbac.authorization.k8s.io/v1"),
    ("rbac.authorization.k8s.io/v1beta1 ClusterRoleBinding", 17, "rbac.authorization.k8s.io/v1"),
    ("rbac.authorization.k8s.io/v1beta1 Role", 3, "rbac.authorization.k8s.io/v1"),
    ("rbac.authorization.k8s.io/v1beta1 RoleBinding", 4, "rbac.authorization.k8s.io/v1"),
]


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (KFDEF.is_file() and TARBALL.is_file()):
        pytest.skip(f"{KFDEF} or {TARBALL} is not there (see ../shared/fixtures/README.md)")
    doc = yaml.safe_load(KFDEF.read_text())
    digest = hashlib.sha256(TARBALL.read_bytes()).hexdigest()
    doc["spec"]["repos"] = [{"name": "manifests", "uri": f"file://{TARBALL}", "sha256": digest}]
    app = tmp_path_factory.mktemp("legacy") / "kf-v1-2"
    app.mkdir()
    (app / "kfdef.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return app


@pytest.mark.parametrize("command", ["apply", "diff"])
def test_removed_apis_are_named_at_once_and_nothing_is_written(app_dir: Path, kubeconfig: str, command: str) -> None:
    run = kfctl(command, str(app_dir), kubeconfig=kubeconfig)
    assert run.code == 7, run.explain()
    assert run.error is not None
    assert run.error["message"] == (
        "132 object(s) of the bundle are of 10 apiVersion/kind(s) the cluster does not serve; nothing was written"
    )
    kinds = [d.split(": ", 1)[0] for d in run.error["details"]]
    assert kinds == [kind for kind, _, _ in UNSERVED]
    for detail, (_, count, use) in zip(run.error["details"], UNSERVED, strict=True):
        assert f": {count} object(s) in " in detail and detail.endswith(f"; use {use}"), detail
    assert "kfctl migrate" in run.error["hint"]
    assert "metadata.name is not set; the install is named 'kf-v1-2' after its directory" in run.stderr
    inventory = kubectl(
        kubeconfig, "get", "configmaps", "-A", "--field-selector", "metadata.name=kfctl-inventory-kf-v1-2"
    )
    assert inventory == "", "nothing was written, not even the inventory"


def test_the_migrated_kfdef_applies_healthy_and_deletes_clean(app_dir: Path, kubeconfig: str) -> None:
    """`kfctl migrate` of the same KfDef moves it onto the catalog; that installs healthy and leaves nothing."""
    migrated = app_dir.parent / "kf-v1-2-migrated"
    migrated.mkdir()
    run = kfctl("migrate", str(app_dir / "kfdef.yaml"), "--to", str(migrated / "kfdef.yaml"), kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    run = kfctl("apply", str(migrated), "--wait-timeout", "5m", kubeconfig=kubeconfig)
    try:
        assert run.code == 0, run.explain()
        states = {a["name"]: a["state"] for a in run.summary["applications"]}
        assert states == dict.fromkeys(
            ["cert-manager", "common", "training-operator", "katib", "kserve", "notebook-controller", "pipelines"],
            "ready",
        )
    finally:
        gone = kfctl("delete", str(migrated), "--delete-storage", "--wait-timeout", "3m", kubeconfig=kubeconfig)
        assert gone.code == 0, gone.explain()
