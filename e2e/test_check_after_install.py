"""`kfctl check` after an install, on the session cluster with the real operators: the training operator's and
KServe's webhooks accept a TFJob, a PyTorchJob and an InferenceService (server-side dry runs, nothing stored);
once KServe's controller cannot be scheduled, its webhook Service has no endpoint and the serving probe fails
with "backend not ready", naming the Service."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from apply_support import install, kfctl, kubectl
from harness import poll
from runtime_support import uninstall

pytestmark = pytest.mark.e2e

CONTROLLER = "kserve-controller-manager"
WEBHOOK_SERVICE = "kserve-webhook-server-service"
# No node carries this label; Recreate, so the running pod goes instead of waiting for its successor.
UNSCHEDULABLE = {
    "spec": {
        "strategy": {"type": "Recreate", "rollingUpdate": None},
        "template": {"spec": {"nodeSelector": {"e2e.kfctl.dev/no-such-node": "true"}}},
    }
}
RESTORE = {
    "spec": {
        "strategy": {"type": "RollingUpdate"},
        "template": {"spec": {"nodeSelector": None}},
    }
}


def check(app: Path, kubeconfig: str) -> tuple[int, dict[str, dict[str, str]], dict[str, Any]]:
    run = kfctl("check", str(app), kubeconfig=kubeconfig)
    assert run.code in (0, 13, 14), run.explain()
    report = json.loads(run.stdout)
    return run.code, {c["name"]: c for c in report["checks"]}, report["summary"]


INFERENCESERVICE = {
    "apiVersion": "serving.kserve.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "e2e-check-probe", "namespace": "kubeflow"},
    "spec": {"predictor": {"model": {"modelFormat": {"name": "sklearn"}, "storageUri": "gs://b/model"}}},
}


def dry_run_error(kubeconfig: str, path: Path) -> str:
    """What `kubectl create --dry-run=server` says on stderr (empty when it is accepted)."""
    proc = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, "create", "--dry-run=server", "-f", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc.stderr


def ready_endpoints(kubeconfig: str) -> int:
    slices = json.loads(
        kubectl(
            kubeconfig,
            "get",
            "endpointslices",
            "-n",
            "kubeflow",
            "-l",
            f"kubernetes.io/service-name={WEBHOOK_SERVICE}",
            "-o",
            "json",
        )
    )["items"]
    return sum(
        1
        for s in slices
        for ep in s.get("endpoints") or []
        if (ep.get("conditions") or {}).get("ready", True) is not False
    )


def controller_gone(kubeconfig: str) -> bool:
    """Only the unschedulable successor is left: the old pod's process, which serves the webhook until its grace
    period ends, has stopped (a terminating pod is already out of the EndpointSlice, but still answers)."""
    pods = json.loads(
        kubectl(kubeconfig, "get", "pods", "-n", "kubeflow", "-l", f"control-plane={CONTROLLER}", "-o", "json")
    )["items"]
    return all(p["status"].get("phase") == "Pending" and not p["metadata"].get("deletionTimestamp") for p in pods)


def patch_controller(kubeconfig: str, patch: dict[str, Any], *, check: bool = True) -> None:
    """A merge patch of KServe's controller Deployment."""
    kubectl(
        kubeconfig,
        "patch",
        "deployment",
        CONTROLLER,
        "-n",
        "kubeflow",
        "--type",
        "merge",
        "-p",
        json.dumps(patch),
        check=check,
    )


def test_check_passes_on_the_installed_platform_and_names_a_webhook_without_backend(
    tmp_path: Path, kubeconfig: str, pod_runtime: Path
) -> None:
    app = tmp_path / "platform"
    install(app, "training-operator,kserve", kubeconfig=kubeconfig)
    try:
        start = time.monotonic()
        code, checks, summary = check(app, kubeconfig)
        seconds = time.monotonic() - start
        assert code == 0, checks
        assert {name: c["verdict"] for name, c in checks.items()} == {
            "cluster-reachable": "pass",
            "cert-manager": "pass",
            "common": "pass",
            "training-operator": "pass",
            "kserve": "pass",
            "certificate": "pass",
            "tfjob": "pass",
            "pytorchjob": "pass",
            "inferenceservice": "pass",
        }, checks
        assert checks["inferenceservice"]["message"] == (
            "the API server and its admission webhooks accept a new InferenceService in kubeflow "
            "(server-side dry run, nothing stored)"
        )
        assert checks["tfjob"]["category"] == "training" and checks["inferenceservice"]["category"] == "serving"
        print(f"\nkfctl check on training-operator,kserve: {summary['seconds']} s of checks, {seconds:.1f} s in all")
        none = kubectl(kubeconfig, "get", "inferenceservices,tfjobs,pytorchjobs", "-A", "-o", "name")
        assert "kfctl-check-" not in none, "a dry run stores nothing"

        patch_controller(kubeconfig, UNSCHEDULABLE)
        poll(lambda: ready_endpoints(kubeconfig) == 0, timeout=120, what=f"{WEBHOOK_SERVICE} to lose its endpoint")
        poll(lambda: controller_gone(kubeconfig), timeout=120, what=f"the pod of {CONTROLLER} to be gone")
        # The old process may answer a moment longer than its pod is listed; wait until the API server sees it.
        isvc = tmp_path / "isvc.yaml"
        isvc.write_text(json.dumps(INFERENCESERVICE))
        poll(
            lambda: "failed calling webhook" in dry_run_error(kubeconfig, isvc),
            timeout=60,
            what="the API server to fail calling KServe's webhook",
        )
        code, checks, _ = check(app, kubeconfig)
        assert code == 14, checks
        serving = checks["inferenceservice"]
        assert serving["verdict"] == "fail", serving
        assert serving["message"].startswith(
            'webhook "inferenceservice.kserve-webhook-server.defaulter" cannot be called: backend not ready — '
            f"Service kubeflow/{WEBHOOK_SERVICE} has no ready endpoint (API server: "
        ), serving
        assert "kfctl status" in serving["hint"], serving
        assert checks["kserve"]["verdict"] == "fail", checks["kserve"]
        assert checks["tfjob"]["verdict"] == "pass", checks["tfjob"]
    finally:
        patch_controller(kubeconfig, RESTORE, check=False)
        uninstall(app, kubeconfig=kubeconfig)
