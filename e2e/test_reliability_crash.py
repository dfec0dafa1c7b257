"""R1: kfctl killed with SIGKILL at ten points of an apply; a re-run converges and nothing of ours is untracked.

Each case kills a fresh install at one event of kfctl's JSON event stream (before the first object, after
the n-th object, while it waits on a Deployment or a custom resource, during a prune), then re-runs the same
apply. The re-run must succeed (exit 0 or 10), `kfctl status` must say everything is healthy, and every
object in the cluster carrying our ApplySet part-of label must be in the inventory (no orphan that a later
prune could never find) — with the UID the inventory records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apply_support import kfctl, write_local_kfdef
from reliability_support import Event, inventory, kfctl_until, labelled_objects, nth

pytestmark = pytest.mark.e2e


def bundle(i: int, *, version: int) -> list[dict[str, Any]]:
    ns = f"e2e-crash-{i}"
    group = f"crash{i}.e2e.kfctl.dev"
    app = {"app": "web"}
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "web", "namespace": ns}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "web", "namespace": ns}, "stringData": {"k": "v"}},
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"gadgets.{group}"},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                    }
                ],
            },
        },
        {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g1", "namespace": ns}, "spec": {}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "web", "namespace": ns},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "web", "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "web"},
            "subjects": [{"kind": "ServiceAccount", "name": "web", "namespace": ns}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": app},
                "template": {
                    "metadata": {"labels": app},
                    "spec": {
                        "serviceAccountName": "web",
                        "containers": [{"name": "c", "image": "example.invalid/w:1"}],
                    },
                },
            },
        },
    ]
    configmaps = ["cm-1", "cm-2", "cm-3"] if version == 1 else ["cm-1", "cm-4"]
    objects += [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": ns}, "data": {"n": n}}
        for n in configmaps
    ]
    if version == 1:  # version 2 drops these: they are pruned
        objects += [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "old", "namespace": ns},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "old"}},
                    "template": {
                        "metadata": {"labels": {"app": "old"}},
                        "spec": {"containers": [{"name": "c", "image": "example.invalid/old:1"}]},
                    },
                },
            },
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "old", "namespace": ns},
                "spec": {"selector": {"app": "old"}, "ports": [{"port": 80}]},
            },
        ]
    return objects


# (id, stage, when to kill): stage "first" kills the first apply; "prune" kills the apply of version 2 after
# version 1 was installed.
POINTS = [
    ("before-any-object", "first", nth("Inventory", 1)),
    ("after-1st-object", "first", nth("Created", 1)),
    ("after-4th-object", "first", nth("Created", 4)),
    ("after-8th-object", "first", nth("Created", 8)),
    ("waiting-on-the-custom-resource", "first", nth("Waiting", 1, subject="Gadget")),
    ("crd-healthy-before-its-resource", "first", nth("Healthy", 1, subject="CustomResourceDefinition")),
    ("waiting-on-the-deployment", "first", nth("Waiting", 1, subject="Deployment.apps")),
    ("after-3rd-healthy", "first", nth("Healthy", 3)),
    ("prune-first-delete-sent", "prune", nth("Deleting", 1)),
    ("prune-after-first-pruned", "prune", nth("Pruned", 1)),
]


def keys(objects: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    out = set()
    for o in objects:
        api = str(o["apiVersion"])
        meta = o["metadata"]
        out.add((api.split("/")[0] if "/" in api else "", o["kind"], meta.get("namespace", ""), meta["name"]))
    return out


@pytest.mark.parametrize(("index", "point"), list(enumerate(POINTS)), ids=[p[0] for p in POINTS])
def test_a_killed_apply_converges_on_re_run_and_leaves_nothing_untracked(
    index: int, point: tuple[str, str, Any], tmp_path: Path, kubeconfig: str
) -> None:
    _, stage, stop = point
    name = f"e2e-crash-{index}"
    ns = name
    wanted = bundle(index, version=1)
    write_local_kfdef(tmp_path, name=name, namespace=ns, apps={"crashy": wanted})
    try:
        if stage == "prune":
            first = kfctl("apply", str(tmp_path), "--wait-timeout", "2m", kubeconfig=kubeconfig)
            assert first.code == 0, first.explain()
            wanted = bundle(index, version=2)
            write_local_kfdef(tmp_path, name=name, namespace=ns, apps={"crashy": wanted})
        killed = kfctl_until("apply", str(tmp_path), "--wait-timeout", "2m", kubeconfig=kubeconfig, stop=stop)
        assert killed.killed_at is not None, f"the run ended before the kill point:\n{killed.explain()}"
        assert killed.code == -9, killed.explain()
        check_nothing_untracked(kubeconfig, ns, name)

        again = kfctl("apply", str(tmp_path), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert again.code == 0, f"killed at {killed.killed_at}\n{again.explain()}"
        assert not [e for e in again.events if e["event"] in ("Failed", "Blocked", "Stuck")], again.explain()
        status = kfctl("status", str(tmp_path), kubeconfig=kubeconfig)
        assert status.code == 0, status.explain()
        members = check_nothing_untracked(kubeconfig, ns, name)
        assert set(members) == keys(wanted), "after the re-run the inventory is exactly what is rendered"
        assert all(members.values()), f"every member has its UID recorded: {members}"
        print(f"\nR1 {point[0]}: killed at {describe(killed.killed_at)}; re-run exit {again.code}")
    finally:
        gone = kfctl("delete", str(tmp_path), "--wait-timeout", "2m", kubeconfig=kubeconfig)
        assert gone.code == 0, gone.explain()
        assert not gone.summary.get("kept"), f"the namespace holds nothing but ours: {gone.explain()}"


def check_nothing_untracked(kubeconfig: str, ns: str, name: str) -> dict[tuple[str, str, str, str], str]:
    inv = inventory(kubeconfig, namespace=ns, name=f"kfctl-inventory-{name}")
    labelled = labelled_objects(kubeconfig, inv[0]) if inv else set()
    members = inv[1] if inv else {}
    untracked = labelled - set(members)
    assert not untracked, f"objects carrying our label but missing from the inventory: {sorted(untracked)}"
    return members


def describe(event: Event | None) -> str:
    return f"{event['event']} {event['subject']}" if event else "-"
