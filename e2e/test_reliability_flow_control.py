"""R7: delete's look inside a namespace meets refusals from the real API server (issue 29, item 2).

Before it deletes a namespace it created, delete lists every namespaced kind in it, eight at a time, to find what
kfctl did not apply. Before d71ca33, one list failing for a moment (a 429, a 5xx) kept the namespace ("cannot
check what it holds") with exit 0, released and Active: the symptom of two cold CI runs under load. Now

1. a list refused for a moment is retried until the phase's deadline, as every other call of delete is, and the
   namespace goes. The refusal is the API server's own flow control (API Priority and Fairness, on by default): a
   FlowSchema sends one ServiceAccount's `list` requests in the test's namespace to a PriorityLevelConfiguration
   with no seats of its own, none to borrow, and `Reject`. The server then runs one such request at a time (one is
   let through when nothing else of its level runs) and answers the others `429 Too Many Requests`, so delete's
   eight concurrent lists meet 429s; its counter `apiserver_flowcontrol_rejected_requests_total` for that
   FlowSchema shows they did;
2. a kind that cannot be listed at all (RBAC: the ServiceAccount may do everything but list Secrets) leaves what
   the namespace holds unknown: delete does not delete it, and fails (exit 7, naming the kind) instead of keeping
   it quietly; the namespace stays the install's (labelled, in the inventory), so the admin's re-run deletes it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from apply_support import kfctl, kubectl, wait_gone, write_local_kfdef
from reliability_support import inventory, kubectl_apply, token_kubeconfig

from kfctl.engine.labels import PART_OF

pytestmark = pytest.mark.e2e

NAME = "e2e-throttled"
SA = "deleter"


@dataclass(frozen=True)
class Names:
    """A test's own names, new on every run: no test meets another's namespace still terminating, and the
    API server's counter for the FlowSchema counts only this test's requests."""

    ns: str  # the install's namespace
    admin_ns: str  # the ServiceAccount's, so that the install's delete cannot take it
    flow: str  # the FlowSchema, PriorityLevelConfiguration, ClusterRole and ClusterRoleBinding


@pytest.fixture
def n() -> Names:
    run = uuid.uuid4().hex[:6]
    return Names(f"e2e-throttled-{run}", f"e2e-throttled-admin-{run}", f"e2e-throttled-{run}")


def bundle(n: Names) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n.ns}}]
    objs += [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": n.ns}} for i in range(3)
    ]
    return objs


def deleter(n: Names, role: str = "cluster-admin") -> list[dict[str, Any]]:
    """The ServiceAccount that runs delete, bound to `role`."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n.admin_ns}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA, "namespace": n.admin_ns}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": n.flow},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": n.admin_ns}],
        },
    ]


def no_seats(n: Names) -> list[dict[str, Any]]:
    """A priority level without seats that rejects what does not fit, and the deleter's lists in n.ns sent to it."""
    return [
        {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration",
            "metadata": {"name": n.flow},
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
            "metadata": {"name": n.flow},
            "spec": {
                "priorityLevelConfiguration": {"name": n.flow},
                "matchingPrecedence": 500,  # before the built-in service-accounts (9000) and global-default (9900)
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [
                    {
                        "subjects": [
                            {"kind": "ServiceAccount", "serviceAccount": {"name": SA, "namespace": n.admin_ns}}
                        ],
                        "resourceRules": [
                            {"verbs": ["list"], "apiGroups": ["*"], "resources": ["*"], "namespaces": [n.ns]}
                        ],
                    }
                ],
            },
        },
    ]


def all_but_listing_secrets(n: Names, kubeconfig: str) -> dict[str, Any]:
    """A ClusterRole with every verb on every served resource, but `list` of Secrets (RBAC only adds rights, so
    `list` is granted per group and resource, read from the server's discovery)."""
    by_group: dict[str, list[str]] = {}
    for name in kubectl(kubeconfig, "api-resources", "--verbs=list", "-o", "name").split():
        resource, _, group = name.partition(".")
        if (group, resource) != ("", "secrets"):
            by_group.setdefault(group, []).append(resource)
    verbs = ["get", "watch", "create", "update", "patch", "delete", "deletecollection"]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": n.flow},
        "rules": [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": verbs},
            {"nonResourceURLs": ["*"], "verbs": ["get"]},
            *({"apiGroups": [g], "resources": sorted(r), "verbs": ["list"]} for g, r in sorted(by_group.items())),
        ],
    }


def rejected(n: Names, kubeconfig: str) -> int:
    """How many requests the API server's flow control refused under our FlowSchema (its own counter)."""
    total = 0
    for line in kubectl(kubeconfig, "get", "--raw", "/metrics").splitlines():
        if line.startswith("apiserver_flowcontrol_rejected_requests_total{") and f'flow_schema="{n.flow}"' in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def install(n: Names, app: Path, kubeconfig: str) -> str:
    """The test's install, applied by the admin; returns a kubeconfig of the ServiceAccount that is to delete it."""
    write_local_kfdef(app, name=NAME, namespace=n.ns, apps={"settings": bundle(n)})
    run = kfctl("apply", str(app), "--wait-timeout", "2m", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    return token_kubeconfig(kubeconfig, namespace=n.admin_ns, service_account=SA, path=app.parent / "deleter")


def test_delete_removes_a_namespace_although_flow_control_refuses_some_of_its_lists(
    tmp_path: Path, kubeconfig: str, n: Names
) -> None:
    kubectl_apply(kubeconfig, deleter(n))
    app = tmp_path / "app"
    try:
        as_sa = install(n, app, kubeconfig)
        kubectl_apply(kubeconfig, no_seats(n))
        assert rejected(n, kubeconfig) == 0

        deleted = kfctl("delete", str(app), "--wait-timeout", "2m", kubeconfig=as_sa)

        refused = rejected(n, kubeconfig)
        said = [(e["event"], e.get("message", "")) for e in deleted.events if e["subject"] == f"Namespace {n.ns}"]
        print(f"\nflow control refused {refused} of delete's lists in {n.ns}; delete said of the namespace: {said}")
        assert deleted.code == 0, deleted.explain()
        assert said == [("Deleting", ""), ("Deleted", "")], deleted.explain()
        wait_gone(kubeconfig, "namespace", n.ns, timeout=120, deleted=deleted)
        # The API server did refuse lists of the namespace's look-inside: without that the test proves nothing.
        assert refused > 0, "the API server refused none of delete's lists; the FlowSchema did not take effect"
    finally:
        for kind, name in (("flowschema", n.flow), ("prioritylevelconfiguration", n.flow)):
            kubectl(kubeconfig, "delete", kind, name, "--ignore-not-found", check=False)
        cleanup(n, app, kubeconfig)


def test_a_namespace_whose_secrets_cannot_be_listed_is_not_deleted_and_delete_fails_naming_them(
    tmp_path: Path, kubeconfig: str, n: Names
) -> None:
    kubectl_apply(kubeconfig, [*deleter(n, role=n.flow), all_but_listing_secrets(n, kubeconfig)])
    app = tmp_path / "app"
    try:
        as_sa = install(n, app, kubeconfig)

        deleted = kfctl("delete", str(app), "--wait-timeout", "1m", kubeconfig=as_sa)

        assert deleted.code == 7, deleted.explain()
        said = [(e["event"], e.get("message", "")) for e in deleted.events if e["subject"] == f"Namespace {n.ns}"]
        assert [event for event, _ in said] == ["Failed"], said
        why = said[0][1]
        forbidden = f'secrets is forbidden: User "system:serviceaccount:{n.admin_ns}:{SA}" cannot list resource'
        assert why.startswith("cannot check what it holds (secrets: ") and forbidden in why, why
        assert why.endswith("; not deleted, as it may hold objects kfctl did not apply; re-run"), why
        assert deleted.error["exitCode"] == 7, deleted.error
        assert deleted.error["details"] == [f"Namespace {n.ns}: {why}"], deleted.error
        # Neither deleted nor released: still Active, still this install's, still recorded.
        ns = json.loads(kubectl(kubeconfig, "get", "namespace", n.ns, "-o", "json"))
        assert ns["status"]["phase"] == "Active" and not ns["metadata"].get("deletionTimestamp"), ns
        assert ns["metadata"]["labels"].get(PART_OF), ns["metadata"]["labels"]
        recorded = inventory(kubeconfig, namespace=n.ns, name=f"kfctl-inventory-{NAME}")
        assert recorded is not None and ("", "Namespace", "", n.ns) in recorded[1], recorded

        again = kfctl("delete", str(app), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert again.code == 0, again.explain()
        wait_gone(kubeconfig, "namespace", n.ns, timeout=120, deleted=again)
    finally:
        kubectl(kubeconfig, "delete", "clusterrole", n.flow, "--ignore-not-found", check=False)
        cleanup(n, app, kubeconfig)


def cleanup(n: Names, app: Path, kubeconfig: str) -> None:
    kubectl(kubeconfig, "delete", "clusterrolebinding", n.flow, "--ignore-not-found", check=False)
    kfctl("delete", str(app), "--wait-timeout", "1m", kubeconfig=kubeconfig)
    for ns in (n.ns, n.admin_ns):
        kubectl(kubeconfig, "delete", "namespace", ns, "--ignore-not-found", "--wait=false", check=False)
