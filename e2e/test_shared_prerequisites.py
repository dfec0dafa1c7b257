"""A Namespace and a PriorityClass that sit in a later application install first, on a real API server.

The shape of upstream kubeflow/manifests v1.11.0 (katib's tree carries the `kubeflow` Namespace that the
training operator, which katib depends on, runs in), in miniature: `operator` runs in namespace ml-<token>
with PriorityClass ml-<token>, both of which only `tuner` renders, and `tuner` dependsOn `operator`. A third
application renders an identical copy of the Namespace. `kfctl apply` must hoist the shared prerequisites
(no cycle), still install tuner's workload after operator's is healthy, and apply the copy once.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from apply_support import kfctl, kubectl, write_local_kfdef

pytestmark = pytest.mark.e2e

APPLIED = ("Created", "Configured", "Unchanged")


def deployment(name: str, namespace: str, **pod: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}], **pod},
            },
        },
    }


def test_shared_prerequisites_of_a_later_application_are_hoisted(tmp_path: Path, kubeconfig: str) -> None:
    token = uuid.uuid4().hex[:8]
    ns = f"ml-{token}"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": "ml"}}}
    priority = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": ns}, "value": 1000}
    app = tmp_path / "platform"
    path = write_local_kfdef(
        app,
        name=f"shared-{token}",
        namespace="default",  # the inventory's: not ml-<token>, which kfctl would otherwise create before planning
        apps={
            "operator": [deployment("operator", ns, priorityClassName=ns)],
            "tuner": [namespace, priority, deployment("tuner", ns)],
            "copy": [namespace],
        },
    )
    kfdef = yaml.safe_load(path.read_text())
    kfdef["spec"]["applications"][1]["dependsOn"] = ["operator"]
    path.write_text(yaml.safe_dump(kfdef, sort_keys=False))
    try:
        plan = kfctl("plan", str(app), kubeconfig=kubeconfig)
        assert plan.code == 0, plan.explain()

        run = kfctl("apply", str(app), "--no-prune", "--wait-timeout", "3m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        ns_applied = min(run.first(e, f"Namespace {ns}") for e in APPLIED if _has(run.events, e, f"Namespace {ns}"))
        operator_applied = run.first("Created", f"Deployment.apps {ns}/operator")
        assert ns_applied < operator_applied
        assert run.first("Healthy", f"Deployment.apps {ns}/operator") < run.first(
            "Created", f"Deployment.apps {ns}/tuner"
        )
        assert [e["subject"] for e in run.events if e["event"] == "Created"].count(f"Namespace {ns}") == 1
        live = yaml.safe_load(kubectl(kubeconfig, "get", "namespace", ns, "-o", "yaml"))
        assert live["metadata"]["labels"]["kfctl.kubeflow.org/application"] == "tuner"
    finally:
        kfctl("delete", str(app), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        kubectl(kubeconfig, "delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        kubectl(kubeconfig, "delete", "priorityclass", ns, "--ignore-not-found", check=False)


def _has(events: list[dict[str, Any]], event: str, subject: str) -> bool:
    return any(e["event"] == event and e["subject"] == subject for e in events)
