"""R7: the API server refuses some of delete's look inside a namespace for a moment (429 from its own flow
control), and `kfctl delete` still removes the namespace (issue 29, item 2).

Before it deletes a namespace it created, delete lists every namespaced kind in it, eight at a time, to find what
kfctl did not apply. A kind that could not be listed keeps the namespace ("cannot check what it holds"), with exit 0:
the namespace stays Active after delete, as it did twice in cold CI runs under load. d71ca33 made those lists retry
a transient refusal until the phase's deadline, as every other call of delete does; this shows it on the real API
server, which refuses the lists itself.

How the refusal is made: API Priority and Fairness (on by default). A FlowSchema sends the `list` requests of one
ServiceAccount in the test's namespace to a PriorityLevelConfiguration with no seats of its own, none to borrow,
and `Reject` for what does not fit. The API server then runs one such request at a time (a request is let through
when nothing else of its level runs) and answers the others `429 Too Many Requests` at once, so delete's eight
concurrent lists meet 429s. kfctl runs delete as that ServiceAccount (bound to cluster-admin); the API server's
own counter (`apiserver_flowcontrol_rejected_requests_total` of that FlowSchema) shows the refusals happened.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from apply_support import kfctl, kubectl, wait_gone, write_local_kfdef
from reliability_support import kubectl_apply, token_kubeconfig

pytestmark = pytest.mark.e2e

RUN = uuid.uuid4().hex[:6]  # a re-run never meets the previous run's namespace still terminating
NS = f"e2e-throttled-{RUN}"
ADMIN_NS = f"e2e-throttled-admin-{RUN}"  # the ServiceAccount's, so that the app's delete cannot take it
NAME = "e2e-throttled"
SA = "deleter"
FLOW = f"e2e-throttled-{RUN}"  # FlowSchema and PriorityLevelConfiguration, named per run: the counter is ours


def bundle() -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]
    objs += [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": NS}} for i in range(3)
    ]
    return objs


def deleter() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ADMIN_NS}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA, "namespace": ADMIN_NS}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": FLOW},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": ADMIN_NS}],
        },
    ]


def no_seats() -> list[dict[str, Any]]:
    """A priority level without seats that rejects what does not fit, and the deleter's lists in NS sent to it."""
    return [
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration",
            "metadata": {"name": FLOW},
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 0,
                    "lendablePercent": 0,
                    "borrowingLimitPercent": 0,
                    "limitResponse": {"type": "Reject"},
                },
            },
        },
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": FLOW},
            "spec": {
                "priorityLevelConfiguration": {"name": FLOW},
                "matchingPrecedence": 500,  # before the built-in service-accounts (9000) and global-default (9900)
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [
                    {
                        "subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": SA, "namespace": ADMIN_NS}}],
                        "resourceRules": [
                            {"verbs": ["list"], "apiGroups": ["*"], "resources": ["*"], "namespaces": [NS]}
                        ],
                    }
                ],
            },
        },
    ]


def rejected(kubeconfig: str) -> int:
    """How many requests the API server's flow control refused under our FlowSchema (its own counter)."""
    total = 0
    for line in kubectl(kubeconfig, "get", "--raw", "/metrics").splitlines():
        if line.startswith("apiserver_flowcontrol_rejected_requests_total{") and f'flow_schema="{FLOW}"' in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def test_delete_removes_a_namespace_although_flow_control_refuses_some_of_its_lists(
    tmp_path: Path, kubeconfig: str
) -> None:
    kubectl_apply(kubeconfig, deleter())
    app = tmp_path / "app"
    write_local_kfdef(app, name=NAME, namespace=NS, apps={"settings": bundle()})
    try:
        run = kfctl("apply", str(app), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        as_sa = token_kubeconfig(kubeconfig, namespace=ADMIN_NS, service_account=SA, path=tmp_path / "deleter")
        kubectl_apply(kubeconfig, no_seats())
        assert rejected(kubeconfig) == 0

        deleted = kfctl("delete", str(app), "--wait-timeout", "2m", kubeconfig=as_sa)

        refused = rejected(kubeconfig)
        said = [(e["event"], e.get("message", "")) for e in deleted.events if e["subject"] == f"Namespace {NS}"]
        print(f"\nflow control refused {refused} of delete's lists in {NS}; delete said of the namespace: {said}")
        assert deleted.code == 0, deleted.explain()
        assert said == [("Deleting", ""), ("Deleted", "")], deleted.explain()
        wait_gone(kubeconfig, "namespace", NS, timeout=120, deleted=deleted)
        # The API server did refuse lists of the namespace's look-inside: without that the test proves nothing.
        assert refused > 0, "the API server refused none of delete's lists; the FlowSchema did not take effect"
    finally:
        for kind, name in (("flowschema", FLOW), ("prioritylevelconfiguration", FLOW), ("clusterrolebinding", FLOW)):
            kubectl(kubeconfig, "delete", kind, name, "--ignore-not-found", check=False)
        kfctl("delete", str(app), "--wait-timeout", "1m", kubeconfig=kubeconfig)
        for ns in (NS, ADMIN_NS):
            kubectl(kubeconfig, "delete", "namespace", ns, "--ignore-not-found", "--wait=false", check=False)
