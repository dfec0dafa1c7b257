"""Webhook backend health: a ready endpoint, a CA in place, a healthy Deployment and Certificate, and — when a run
changes that Deployment — its rollout over: no pod of an older ReplicaSet left behind the Service (issue 51 row 20:
KServe v0.15.0's webhook, still answering, denied v0.16.0's ClusterServingRuntime)."""

from __future__ import annotations

from typing import Any

import pytest

from kfctl.health.model import Health
from kfctl.health.webhook import BackendFacts, previous_rollout_pods, webhook_backend

SVC = "kubeflow/kserve-webhook-server-service"
DEP = "kubeflow/kserve-controller-manager"
CASES = [
    pytest.param(
        BackendFacts(SVC, service_exists=False),
        Health("progressing", f"Service {SVC} does not exist"),
        id="no-service",
    ),
    pytest.param(
        BackendFacts(SVC, deployment=Health("progressing", "0/1 available"), deployment_name=DEP),
        Health("progressing", f"no ready endpoint; Deployment {DEP} 0/1 available"),
        id="deployment-not-available",
    ),
    pytest.param(
        BackendFacts(SVC, deployment=Health("failed", "rollout stuck"), deployment_name=DEP),
        Health("failed", f"Deployment {DEP}: rollout stuck"),
        id="deployment-failed",
    ),
    # The old release's pods still serve while the new ones start: endpoints, but not the new server's.
    pytest.param(
        BackendFacts(
            SVC,
            ready_endpoints=1,
            ca_bundle_set=True,
            deployment=Health("progressing", "0/1 replicas updated, 1/1 available"),
            deployment_name=DEP,
        ),
        Health(
            "progressing",
            f"Deployment {DEP} 0/1 replicas updated, 1/1 available: its rollout is not over, and the pods still "
            "serving may run the release before it",
        ),
        id="rollout-not-over",
    ),
    pytest.param(
        BackendFacts(
            SVC,
            ready_endpoints=2,
            ca_bundle_set=True,
            deployment=Health("ready", "1/1 available"),
            deployment_name=DEP,
            old_pods=("kserve-controller-manager-7d4b9c6f5-x2x7q",),
        ),
        Health(
            "progressing",
            f"Service {SVC} still lists pod kserve-controller-manager-7d4b9c6f5-x2x7q of an older ReplicaSet of "
            f"Deployment {DEP}: the webhook server of the release before may still answer",
        ),
        id="old-pod-still-listed",
    ),
    pytest.param(
        BackendFacts(
            SVC,
            ready_endpoints=3,
            ca_bundle_set=True,
            deployment=Health("ready", "2/2 available"),
            deployment_name=DEP,
            old_pods=("web-1-a", "web-1-b", "web-1-c", "web-1-d"),
        ),
        Health(
            "progressing",
            f"Service {SVC} still lists 4 pods (web-1-a, web-1-b, web-1-c and 1 more) of an older ReplicaSet of "
            f"Deployment {DEP}: the webhook server of the release before may still answer",
        ),
        id="old-pods-still-listed",
    ),
    pytest.param(
        BackendFacts(
            SVC, ready_endpoints=1, ca_bundle_set=True, deployment=Health("ready", "1/1 available"), deployment_name=DEP
        ),
        Health("ready", f"backend {SVC} (1 ready endpoint(s)) ready"),
        id="rolled-out",
    ),
    pytest.param(
        BackendFacts(
            SVC,
            ready_endpoints=1,
            certificate=Health("progressing", "not ready"),
            certificate_name="kubeflow/serving-cert",
        ),
        Health("progressing", "Certificate kubeflow/serving-cert not ready"),
        id="certificate-not-ready",
    ),
    pytest.param(
        BackendFacts(SVC, ready_endpoints=1),
        Health("progressing", "caBundle not injected yet"),
        id="no-ca-bundle",
    ),
    pytest.param(
        BackendFacts(SVC, ready_endpoints=2, ca_bundle_set=True),
        Health("ready", f"backend {SVC} (2 ready endpoint(s)) ready"),
        id="ready",
    ),
    pytest.param(
        BackendFacts("https://127.0.0.1:9443/validate", is_url=True, ca_required=False),
        Health("ready", "backend https://127.0.0.1:9443/validate ready"),
        id="url-webhook",
    ),
]


@pytest.mark.parametrize(("facts", "expected"), CASES)
def test_webhook_backend(facts: BackendFacts, expected: Health) -> None:
    assert webhook_backend(facts) == expected


# previous_rollout_pods: the Deployment at revision 2 (uid d-1); ReplicaSets and EndpointSlices as the controllers
# write them mid-rollout. Pods are named <ReplicaSet>-<suffix>.
DEPLOYMENT = {
    "metadata": {
        "name": "kserve-controller-manager",
        "uid": "d-1",
        "annotations": {"deployment.kubernetes.io/revision": "2"},
    }
}
NEW_RS = "kserve-controller-manager-5f8d9b7c4"
OLD_RS = "kserve-controller-manager-7d4b9c6f5"


def replica_set(name: str, revision: str, owner: str = "d-1") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "annotations": {"deployment.kubernetes.io/revision": revision},
            "ownerReferences": [{"kind": "Deployment", "name": "kserve-controller-manager", "uid": owner}],
        }
    }


def endpoint(pod: str, ready: bool = True, terminating: bool = False) -> dict[str, Any]:
    return {
        "targetRef": {"kind": "Pod", "name": pod, "namespace": "kubeflow"},
        "conditions": {"ready": ready, "serving": ready or terminating, "terminating": terminating},
    }


BOTH_SETS = [replica_set(NEW_RS, "2"), replica_set(OLD_RS, "1")]
ROLLOUT_CASES = [
    pytest.param(
        DEPLOYMENT,
        BOTH_SETS,
        [endpoint(f"{NEW_RS}-abcde"), endpoint(f"{OLD_RS}-x2x7q")],
        (f"{OLD_RS}-x2x7q",),
        id="old-pod-ready",
    ),
    # Terminating, it still runs the old server until its process ends: listed until the pod is gone.
    pytest.param(
        DEPLOYMENT,
        BOTH_SETS,
        [endpoint(f"{NEW_RS}-abcde"), endpoint(f"{OLD_RS}-x2x7q", ready=False, terminating=True)],
        (f"{OLD_RS}-x2x7q",),
        id="old-pod-terminating",
    ),
    pytest.param(DEPLOYMENT, BOTH_SETS, [endpoint(f"{NEW_RS}-abcde")], (), id="only-new-pods"),
    # A pod of a ReplicaSet another Deployment owns (same labels, another uid) is not this rollout's to wait for.
    pytest.param(
        DEPLOYMENT,
        [replica_set(NEW_RS, "2"), replica_set("kserve-controller-manager-old-9c8b7", "1", owner="d-other")],
        [endpoint(f"{NEW_RS}-abcde"), endpoint("kserve-controller-manager-old-9c8b7-qwert")],
        (),
        id="another-deployments-pod",
    ),
    # The controller has not given the Deployment a revision yet: nothing is known (its own health waits).
    pytest.param(
        {"metadata": {"name": "kserve-controller-manager", "uid": "d-1"}},
        BOTH_SETS,
        [endpoint(f"{OLD_RS}-x2x7q")],
        (),
        id="no-revision-yet",
    ),
    # An endpoint without a pod behind it (a Service without selector, an IP) names no ReplicaSet.
    pytest.param(
        DEPLOYMENT,
        BOTH_SETS,
        [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}],
        (),
        id="endpoint-without-pod",
    ),
]


@pytest.mark.parametrize(("deployment", "replica_sets", "endpoints", "expected"), ROLLOUT_CASES)
def test_previous_rollout_pods(
    deployment: dict[str, Any],
    replica_sets: list[dict[str, Any]],
    endpoints: list[dict[str, Any]],
    expected: tuple[str, ...],
) -> None:
    slices = [{"endpoints": endpoints[:1]}, {"endpoints": endpoints[1:]}]  # the controller splits them as it likes
    assert previous_rollout_pods(deployment, replica_sets, slices) == expected
