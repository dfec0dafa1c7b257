"""Upstream Kubeflow's full platform upgraded in place: v1.10.0 (28 applications) installed healthy, a user's
work on it, then the KfDef `kfctl init --upstream v1.11.0 --force` writes, `diff`, `apply`, and everything healthy
on the new release with the user's objects and the platform's data kept.

A user's work: the example's Profile (its namespace made by the real profile controller v1.10.0), a Notebook in
it (upstream's own test object from the v1.10.0 release's tests/; the real notebook controller makes its
StatefulSet) and the volumes and Secrets the platform itself created (Katib's and Pipelines' databases).

The oracles: the API server's UIDs before and after (the same objects, not deleted and recreated), the CRDs'
stored versions, what `diff` said against what `apply` wrote (object for object), and each application's health
as `kfctl status` reads it. Upstream's release notes ask users to delete some objects by hand before re-applying
(immutable selectors); `diff` names every such object and `apply --recreate-immutable` deletes and recreates
exactly those, never a CRD, Namespace, PVC or PV.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from apply_support import kfctl, kubectl
from full_platform_support import USER_NS, labelled, not_our_kubeconfig, played_webhooks, served, unpack_release
from harness import Cluster, poll
from kfctl_testbed import upstream_mirror

pytestmark = pytest.mark.e2e

NAME = "kubeflow"
NOTEBOOK = "tests/gh-actions/kf-objects/notebook.test.kubeflow-user-example.com.yaml"  # v1.10.0's place for it
# What must survive the upgrade as the same object (kind, namespace, name), beside the user's Notebook.
KEPT = [
    ("profile", "", "kubeflow-user-example-com"),
    ("namespace", "", USER_NS),
    ("persistentvolumeclaim", "kubeflow", "katib-mysql"),
    ("persistentvolumeclaim", "kubeflow", "mysql-pv-claim"),
    ("secret", "kubeflow", "mysql-secret"),
    ("secret", "kubeflow", "katib-mysql-secrets"),
]


def uid(kubeconfig: str, kind: str, namespace: str, name: str) -> str:
    where = ["-n", namespace] if namespace else []
    return kubectl(kubeconfig, "get", kind, name, *where, "-o", "jsonpath={.metadata.uid}")


def crds(kubeconfig: str) -> dict[str, tuple[str, list[str]]]:
    """Every CRD of the install: name → (uid, status.storedVersions)."""
    doc = json.loads(kubectl(kubeconfig, "get", "crd", "-l", f"kfctl.kubeflow.org/app={NAME}", "-o", "json"))
    return {c["metadata"]["name"]: (c["metadata"]["uid"], c["status"]["storedVersions"]) for c in doc["items"]}


def apply_healthy(app: Path, kubeconfig: str, *flags: str) -> dict[str, Any]:
    run = kfctl("apply", str(app), "--wait-timeout", "10m", *flags, kubeconfig=kubeconfig, timeout=1500)
    assert run.code == 0, run.explain()
    assert all(a["state"] == "ready" for a in run.summary["applications"]), run.summary["applications"]
    return {"summary": run.summary, "events": run.events}


def test_v1_10_full_platform_upgrades_to_v1_11_in_place_keeping_the_users_work(
    fresh_cluster: Cluster, tmp_path: Path, release_mirror: upstream_mirror.Mirror
) -> None:
    kubeconfig = fresh_cluster.kubeconfig
    app = tmp_path / NAME
    old = unpack_release("v1.10.0", tmp_path / "old")
    print("\nwebhooks the stand-in plays (their servers cannot be built here):", *played_webhooks(), sep="\n  ")
    with served(release_mirror) as flags:
        assert kfctl("init", str(app), "--upstream", "v1.10.0", *flags, kubeconfig=kubeconfig).code == 0
        generated = kfctl("generate", str(app), kubeconfig=kubeconfig)
        assert generated.code == 0, generated.explain()
    first = apply_healthy(app, kubeconfig)["summary"]
    print(f"v1.10.0: {first['objects']} objects in {len(first['applications'])} applications, {first['seconds']} s")

    # v1.10.0 has the training operator (v1.9.1, real): a PyTorchJob runs to its end in a Profile's namespace.
    smoke = kfctl("check", str(app), "--smoke", "--only", "smoke-pytorchjob", kubeconfig=kubeconfig, timeout=600)
    assert smoke.code == 0, smoke.explain()
    [pytorchjob] = json.loads(smoke.stdout)["checks"]
    assert re.fullmatch(
        r"PyTorchJob (kfctl-smoke-[0-9a-f]{8}-pytorchjob) ran to Succeeded in \d+s in Profile \1's namespace; "
        r"both are deleted",
        pytorchjob["message"],
    ), pytorchjob
    print("kfctl check --smoke on v1.10.0:", pytorchjob["message"])

    # The user's work on v1.10.0.
    poll(
        lambda: kubectl(kubeconfig, "get", "namespace", USER_NS, "-o", "name", check=False),
        timeout=120,
        what=f"the profile controller to make namespace {USER_NS}",
    )
    kubectl(kubeconfig, "apply", "-f", str(old / NOTEBOOK))
    poll(
        lambda: kubectl(kubeconfig, "get", "statefulset", "test", "-n", USER_NS, "-o", "name", check=False),
        timeout=120,
        what="the notebook controller to make the Notebook's StatefulSet",
    )
    kept = {k: uid(kubeconfig, *k) for k in [*KEPT, ("notebook", USER_NS, "test")]}
    assert all(kept.values()), kept
    crds_before = crds(kubeconfig)

    # The upgrade: the KfDef of the new release, written over the old one.
    with served(release_mirror) as flags:
        init = kfctl("init", str(app), "--upstream", "v1.11.0", "--force", *flags, kubeconfig=kubeconfig)
        assert init.code == 0, init.explain()
        generated = kfctl("generate", str(app), kubeconfig=kubeconfig)
        assert generated.code == 0, generated.explain()
    diff = kfctl("diff", str(app), kubeconfig=kubeconfig)
    assert diff.code == 0, diff.explain()
    report = json.loads(diff.stdout)
    totals = {k: sum(s[k] for s in report["summary"].values()) for k in ("create", "update", "prune", "recreate")}
    immutable = sorted(c["object"] for c in report["changes"] if c["action"] == "recreate")
    # Pruned for real, and what apply keeps without a --prune-* flag (CRDs, namespaces, volumes), which diff names.
    pruned = sorted(c["object"] for c in report["changes"] if c["action"] == "prune" and not c.get("reason"))
    kept_back = sorted(c["object"] for c in report["changes"] if c["action"] == "prune" and c.get("reason"))
    print(f"diff v1.10.0 → v1.11.0: {totals}; recreate (immutable fields): {immutable}; kept: {kept_back}")
    assert totals["update"] > 0 and totals["create"] > 0

    run = kfctl("apply", str(app), "--wait-timeout", "10m", "--recreate-immutable", kubeconfig=kubeconfig, timeout=1500)
    assert run.code == 0, run.explain()
    s = run.summary
    assert all(a["state"] == "ready" for a in s["applications"]), s["applications"]
    print(
        f"v1.11.0: {s['objects']} objects, {s['created']} created, {s['configured']} configured, "
        f"{s['pruned']} pruned, {s.get('recreated', 0)} recreated, {s['seconds']} s"
    )
    # What diff said would change is what apply changed, object for object.
    updated = {c["object"] for c in report["changes"] if c["action"] == "update"}
    written = {e["subject"] for e in run.events if e["event"] in ("Configured", "Corrected")}
    assert updated == written, (sorted(updated - written), sorted(written - updated))
    assert s["created"] == totals["create"] and s["pruned"] == len(pruned)
    assert s.get("recreated", 0) == len(immutable)

    after = {k: uid(kubeconfig, *k) for k in kept}
    assert after == kept, {k: (kept[k], after[k]) for k in kept if kept[k] != after[k]}
    crds_after = crds(kubeconfig)
    for name, (crd_uid, stored) in crds_before.items():
        if name in crds_after:  # a CRD the new release dropped is pruned only if no object of it is left
            assert crds_after[name][0] == crd_uid, name
            assert set(stored) <= set(crds_after[name][1]), name
    status = kfctl("status", str(app), kubeconfig=kubeconfig)
    assert status.code == 0, status.explain()

    gone = kfctl("delete", str(app), "--delete-storage", "--wait-timeout", "5m", kubeconfig=kubeconfig, timeout=900)
    assert gone.code == 0, gone.explain()
    assert labelled(kubeconfig, NAME) == []
    assert not_our_kubeconfig(kubeconfig)
