"""An upgrade that changes a webhook's server: what the webhook admits waits for the rollout, not for any endpoint.

Issue 51 row 20: upgrading KServe v0.15.0 → v0.16.0, the API server sent v0.16.0's ClusterServingRuntime
``kserve-huggingfaceserver-multinode`` to the v0.15.0 server, still behind the Service, which denied it
("PipelineParallelSize cannot be less than 2"); a fresh install of the same tree passes. Here the fake cluster
plays the Deployment controller at its quickest: the Deployment reports its rollout complete at once, while the
old ReplicaSet's pod stays in the Service's EndpointSlice, terminating, for a few more reads — and the old
release's webhook denies the new Widget, as v0.15.0's did. Each row: the upgrade's changes → what the run does.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakecluster import FakeCluster, obj
from test_engine_apply import run, served_webhook

from kfctl.engine.result import ApplyOptions
from kfctl.k8s.api import ApiError
from kfctl.objects import Obj, ObjectKey

DENIAL = (
    'admission webhook "w.example.com" denied the request: the WorkerSpec.PipelineParallelSize cannot be less than 2'
)
REVISION = "deployment.kubernetes.io/revision"


class RollingCluster(FakeCluster):
    """A fake cluster whose Deployment ``demo/web`` rolls out as the controllers do, in the order least kind to a
    caller: a changed template gets a new ReplicaSet ``web-<revision>`` whose pod is ready at once, the Deployment
    reports itself complete, and the previous ReplicaSet's pod stays listed (terminating) behind Service ``web`` while
    ``lingering`` more looks at the ReplicaSets pass (one per check of the backend). Server ``web-<n>`` admits
    Widgets as release n would: release 1 denies a Widget of ``needsServer: 2``."""

    def __init__(self, lingering: int) -> None:
        super().__init__()
        self.lingering = lingering
        self.left = 0  # ReplicaSet lists before the old pod leaves
        self.revision = 0
        self.template: Any = None
        self.judged_by: list[list[str]] = []  # per Widget apply: the pods its webhook's Service listed
        self.on_apply("Deployment", self._roll)
        self.on_apply("ValidatingWebhookConfiguration", _inject_ca)
        self.on_apply("Widget", self._admit)

    def _roll(self, dep: Obj) -> None:
        template = dep["spec"]["template"]
        if template != self.template:
            self.template, self.revision = template, self.revision + 1
            rs = obj(
                "apps/v1",
                "ReplicaSet",
                f"web-{self.revision}",
                "demo",
                labels={"app": "web"},
                annotations={REVISION: str(self.revision)},
            )
            rs["metadata"]["ownerReferences"] = [{"kind": "Deployment", "name": "web", "uid": dep["metadata"]["uid"]}]
            self.put(rs)
            old = (
                [_endpoint(f"web-{self.revision - 1}-aaaaa", ready=False)]
                if self.revision > 1 and self.lingering
                else []
            )
            self._slice([_endpoint(f"web-{self.revision}-aaaaa"), *old])
            self.left = self.lingering if old else 0
        dep["metadata"].setdefault("annotations", {})[REVISION] = str(self.revision)
        dep["status"] = {
            "observedGeneration": dep["metadata"]["generation"],
            **dict.fromkeys(("replicas", "updatedReplicas", "availableReplicas", "readyReplicas"), 1),
        }

    def _slice(self, endpoints: list[Obj]) -> None:
        self.put(
            obj(
                "discovery.k8s.io/v1",
                "EndpointSlice",
                "web-1",
                "demo",
                labels={"kubernetes.io/service-name": "web"},
                endpoints=endpoints,
            )
        )

    def listed(self) -> list[str]:
        s = self.objects[ObjectKey("discovery.k8s.io", "EndpointSlice", "demo", "web-1")]
        return [ep["targetRef"]["name"] for ep in s["endpoints"]]

    def list(
        self, api_version: str, kind: str, *, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Obj]:
        if kind == "ReplicaSet" and self.left:
            self.left -= 1
            if not self.left:  # its process has ended and the pod is gone: so is its endpoint
                self._slice([_endpoint(f"web-{self.revision}-aaaaa")])
        return super().list(api_version, kind, namespace=namespace, label_selector=label_selector)

    def _admit(self, widget: Obj) -> None:
        servers = self.listed()
        self.judged_by.append(servers)
        wants = int(widget["spec"]["needsServer"])
        if any(int(pod.split("-")[1]) < wants for pod in servers):  # the old server may get the call
            raise ApiError(400, DENIAL, reason="BadRequest")
        widget["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}


def _endpoint(pod: str, ready: bool = True) -> Obj:
    conditions = {"ready": ready, "serving": True, "terminating": not ready}
    return {"targetRef": {"kind": "Pod", "name": pod, "namespace": "demo"}, "conditions": conditions}


def _inject_ca(config: Obj) -> None:
    for h in config["webhooks"]:
        h["clientConfig"]["caBundle"] = "Q0E="


def release(n: int, *, server_changes: bool = True) -> list[Obj]:
    """Release ``n`` of an application: its webhook server (Deployment web, image web:v<n>), Service, webhook
    configuration (CREATE and UPDATE of Widgets), and a Widget of release ``n`` that needs server ``n``; with
    ``server_changes=False`` the release keeps server 1 and its Widget needs no more."""
    ns, crd, web, svc, hook, widget = served_webhook(FakeCluster())  # the objects; that cluster's hooks unused
    web["spec"]["template"]["spec"]["containers"] = [{"name": "s", "image": f"web:v{n if server_changes else 1}"}]
    hook["webhooks"][0]["rules"][0]["operations"] = ["CREATE", "UPDATE"]
    widget = {**widget, "spec": {"release": n, "needsServer": n if server_changes else 1}}
    return [ns, crd, web, svc, hook, widget]


@pytest.mark.parametrize(
    ("lingering", "server_changes", "judged_by"),
    [
        # The old pod leaves after a few reads: the Widget waits for that, and only the new server judges it.
        pytest.param(3, True, ["web-2-aaaaa"], id="old-pod-lingers"),
        # It is gone by the first look (the Deployment reported complete once its pod was gone).
        pytest.param(0, True, ["web-2-aaaaa"], id="old-pod-gone-at-once"),
        # The upgrade leaves the server as it was: nothing rolls, nothing to wait for.
        pytest.param(3, False, ["web-1-aaaaa"], id="server-unchanged"),
    ],
)
def test_what_a_changed_webhook_admits_waits_until_no_old_server_is_listed(
    lingering: int, server_changes: bool, judged_by: list[str]
) -> None:
    cluster = RollingCluster(lingering)
    first, _ = run(cluster, release(1))
    assert first.ok, first
    result, log = run(cluster, release(2, server_changes=server_changes))
    assert result.ok, result
    assert cluster.judged_by[-1] == judged_by
    if lingering and server_changes:
        waited = [e.message for e in log.of("Waiting") if e.subject == "webhook backend demo/web"]
        assert (
            "Service demo/web still lists pod web-1-aaaaa of an older ReplicaSet of Deployment demo/web: the webhook "
            "server of the release before may still answer"
        ) in waited


def test_when_the_old_pod_never_leaves_the_widget_is_blocked_naming_it_not_denied() -> None:
    cluster = RollingCluster(lingering=10**6)
    run(cluster, release(1))
    options = ApplyOptions(concurrency=4, wait_timeout=0.5, timeout=10.0, poll_interval=0.01)
    result, _ = run(cluster, release(2), options=options)
    assert [(f.subject, f.denied) for f in result.failed] == [("webhook backend demo/web", False)]
    blocked = {b.subject: b.chain for b in result.blocked}
    assert blocked["Widget.example.com demo/w"] == (
        "Widget.example.com demo/w",
        "webhook backend demo/web not healthy after --wait-timeout 0.5s: Service demo/web still lists pod "
        "web-1-aaaaa of an older ReplicaSet of Deployment demo/web: the webhook server of the release before may "
        "still answer",
    )
    assert len(cluster.judged_by) == 1  # release 1's Widget only: release 2's was never sent


class NoReplicaSetsCluster(RollingCluster):
    """kfctl's user may not list ReplicaSets (RBAC)."""

    def list(
        self, api_version: str, kind: str, *, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Obj]:
        if kind == "ReplicaSet":
            raise ApiError(403, 'replicasets.apps is forbidden: User "dev" cannot list resource', reason="Forbidden")
        return super().list(api_version, kind, namespace=namespace, label_selector=label_selector)


def test_a_user_who_may_not_list_replica_sets_gets_the_deployments_health_alone() -> None:
    cluster = NoReplicaSetsCluster(lingering=0)
    run(cluster, release(1))
    result, log = run(cluster, release(2))
    assert result.ok, result
    backend = next(e for e in log.of("Healthy") if e.subject == "webhook backend demo/web")
    assert backend.message == "backend demo/web (1 ready endpoint(s)) ready"
