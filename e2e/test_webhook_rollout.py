"""A webhook server's rollout as the real controllers record it, and what kfctl's backend wait reads of it.

Issue 51 row 20: upgrading KServe v0.15.0 → v0.16.0, the old server, still behind its Service, judged (denied) the
new release's ClusterServingRuntime. kfctl now holds what a webhook admits until the backend's Deployment has
rolled out and the Service's EndpointSlices list no pod of an older ReplicaSet of it
(kfctl.health.webhook.previous_rollout_pods). That function reads what three controllers write: the Deployment
controller's revision annotation on the Deployment and its ReplicaSets, the ReplicaSets' ownerReferences and the
names they give their pods, and the EndpointSlice controller's targetRefs. Its hermetic tests assume their shape;
here the real kube-controller-manager writes them, during a rollout held open by minReadySeconds (the new pod is
Ready at once, Available 10 s later, and the old one stays until then). The test bed cannot show the old server
answering: kwok deletes a pod before the runtime stops its process (e2e/README.md, kwok's pod stages).
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import poll
from kfctl_testbed import kube_rest

from kfctl.health.deployment import deployment as deployment_health
from kfctl.health.webhook import previous_rollout_pods

pytestmark = pytest.mark.e2e

WINDOW_SECONDS = 10  # minReadySeconds of the rollout: how long the old pod stays listed beside the new one


def web(image: str) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "server", "image": image, "ports": [{"containerPort": 8443}]}]},
            },
        },
    }


class Backend:
    """The Deployment `web` and Service `web` of a namespace, read as kfctl's backend wait reads them."""

    def __init__(self, api: kube_rest.Client, namespace: str) -> None:
        self.api, self.ns = api, namespace

    def read(self) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        dep = self.api.get(f"/apis/apps/v1/namespaces/{self.ns}/deployments/web")
        assert dep is not None
        rs = self.api.list(f"/apis/apps/v1/namespaces/{self.ns}/replicasets", query={"labelSelector": "app=web"})
        slices = self.api.list(
            f"/apis/discovery.k8s.io/v1/namespaces/{self.ns}/endpointslices",
            query={"labelSelector": "kubernetes.io/service-name=web"},
        )
        return dep, rs, slices

    def listed(self) -> list[str]:
        _, _, slices = self.read()
        return sorted(ep["targetRef"]["name"] for s in slices for ep in s.get("endpoints") or [])

    def old_pods(self) -> tuple[str, ...]:
        return previous_rollout_pods(*self.read())

    def rolled_out(self) -> bool:
        dep, _, _ = self.read()
        return deployment_health(dep).ready


def test_the_old_replica_sets_pod_is_named_while_listed_and_none_once_the_rollout_is_over(
    api: kube_rest.Client, namespace: str
) -> None:
    api.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", web("example.invalid/webhook:1"))
    service = {"selector": {"app": "web"}, "ports": [{"port": 443, "targetPort": 8443}]}
    api.create(
        f"/api/v1/namespaces/{namespace}/services",
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": service},
    )
    backend = Backend(api, namespace)
    (old,) = poll(lambda: backend.rolled_out() and backend.listed(), timeout=60, what="release 1 rolled out, listed")
    assert backend.old_pods() == ()

    # Release 2: a new image, and a rollout that keeps the old pod for WINDOW_SECONDS after the new one is Ready.
    patch = web("example.invalid/webhook:2")["spec"] | {"minReadySeconds": WINDOW_SECONDS}
    api.merge_patch(f"/apis/apps/v1/namespaces/{namespace}/deployments/web", {"spec": patch})
    both = poll(lambda: len(backend.listed()) == 2 and backend.listed(), timeout=30, what="both pods listed")
    assert old in both
    assert backend.old_pods() == (old,)  # by name, while the new ReplicaSet's pod is listed beside it
    assert not backend.rolled_out()

    poll(lambda: backend.rolled_out() and backend.listed() != both, timeout=60, what="release 2 rolled out")
    new = backend.listed()
    assert old not in new and len(new) == 1
    assert backend.old_pods() == ()
