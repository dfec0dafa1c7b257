"""kfctl apply when something cannot become healthy: it says what, why, and what waits behind it."""

from __future__ import annotations

from pathlib import Path

import pytest
from apply_support import kfctl, write_local_kfdef

pytestmark = pytest.mark.e2e

NS = "e2e-unschedulable"


def bundle() -> list[dict[str, object]]:
    labels = {"app": "picky"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "picky-webhook", "namespace": NS},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "nodeSelector": {"e2e.kfctl.dev/no-such-node": "true"},
                        "containers": [{"name": "server", "image": "example.invalid/webhook:1"}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "picky-webhook", "namespace": NS},
            "spec": {"selector": labels, "ports": [{"port": 443, "targetPort": 9443}]},
        },
        {
            # kfctl gates the ConfigMap on this webhook's backend, so the API server never calls it (it would fail:
            # the backend's pod is never scheduled, and the egress proxy has nothing to route to).
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "e2e-picky"},
            "webhooks": [
                {
                    "name": "picky.e2e.kfctl.dev",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "objectSelector": {"matchLabels": {"e2e.kfctl.dev/picky": "true"}},
                    "clientConfig": {"service": {"name": "picky-webhook", "namespace": NS, "path": "/validate"}},
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["configmaps"],
                        }
                    ],
                }
            ],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "needs-the-webhook", "namespace": NS, "labels": {"e2e.kfctl.dev/picky": "true"}},
            "data": {"a": "b"},
        },
    ]


def test_an_unschedulable_deployment_fails_within_the_timeout_naming_the_cause_and_the_blocked(
    tmp_path: Path, kubeconfig: str
) -> None:
    write_local_kfdef(tmp_path, name="e2e-unschedulable", namespace=NS, apps={"picky": bundle()})
    run = kfctl("apply", str(tmp_path), "--wait-timeout", "20s", "--timeout", "2m", kubeconfig=kubeconfig, timeout=180)
    try:
        assert run.code == 8, run.explain()
        assert run.seconds < 60, run.explain()
        failed = [e for e in run.events if e["event"] == "Failed"]
        assert [e["subject"] for e in failed] == [f"Deployment.apps {NS}/picky-webhook"]
        assert "Unschedulable" in failed[0]["message"] and "0/1 available" in failed[0]["message"]
        blocked = {e["subject"]: e["chain"] for e in run.events if e["event"] == "Blocked"}
        assert blocked[f"ConfigMap {NS}/needs-the-webhook"][:2] == [
            f"ConfigMap {NS}/needs-the-webhook",
            f"webhook backend {NS}/picky-webhook",
        ]
        assert "Unschedulable" in blocked[f"ConfigMap {NS}/needs-the-webhook"][-1]
        details = "\n".join(run.error["details"])
        assert f"Deployment.apps {NS}/picky-webhook" in details and f"ConfigMap {NS}/needs-the-webhook" in details
        print(f"\nFIGURES unschedulable: exit {run.code} after {run.seconds:.1f}s; error: {run.error['message']}")
        print("\n".join(run.error["details"]))
    finally:
        kfctl("delete", str(tmp_path), "--wait-timeout", "1m", kubeconfig=kubeconfig)
