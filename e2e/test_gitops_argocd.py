"""`kfctl export --format argocd`, synced by Argo CD's real application controller from a git repository on
127.0.0.1.

On a cluster of the module's own (`module_cluster`: the process runtime runs the real operators on the kwok
nodes), with Argo CD's application controller and repo-server built from its Go module and run as processes
beside Debian's redis-server (kfctl_testbed.argocd), the tests go the way docs/gitops.md tells a user to:

1. `kfctl init` (the default kind platform), `generate`, `export --format argocd --prune --output-dir`; the app
   directory and the export committed and pushed to the loopback git server; the export's argocd-cm.yaml
   applied with server-side apply onto Argo CD's own argocd-cm (its health checks: a parent waits for a wave's
   children only when Argo CD can tell an Application's health); one parent Application (the app-of-apps)
   pointed at the export's directory; `kfctl secrets apply` once the kubeflow namespace exists. Every
   Application becomes Synced and Healthy at the pushed commit, and the parent created each wave's children
   only once the earlier waves' had synced (the API server's timestamps). Argo CD holds exactly the objects
   kfctl renders for each application, with the generated Secrets exactly what `kfctl plan` says `kfctl apply`
   applies; what cert-manager's cainjector writes into the webhooks (their caBundle) leaves them Synced.
2. The upgrade commit: an application added to the KfDef and one removed, re-generated, re-exported and pushed,
   after the user made a namespace, a ConfigMap and a Notebook (an instance of the removed application's CRD):
   the parent creates the new child, which syncs to healthy, and prunes the removed one, which deletes what it
   applied but the CRDs, Namespaces and PVCs the export marks kept (what `kfctl apply`'s prune keeps); the
   user's objects are the same objects after (their UIDs).
3. Deleting the parent (foreground, as `argocd app delete` does) deletes the children and with them, through
   the resources finalizer the export sets, what they applied, but for what kfctl's own prune keeps (CRDs,
   Namespaces, PVCs).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from gitops_support import (
    KEPT,
    ArgoPlatform,
    Key,
    applications,
    export_argocd,
    exported_to_argocd,
    live_objects,
    rendered_keys,
    run_kfctl,
    wave,
)
from harness import Cluster, poll
from kfctl_testbed import argocd as argocd_support
from kfctl_testbed import flux as flux_support
from kfctl_testbed.argocd import APPLICATIONS
from kfctl_testbed.flux import timestamp

from kfctl.objects import ObjectKey

pytestmark = pytest.mark.e2e

NAME = "e2e"  # the app directory's name, so the KfDef's: Applications are e2e-<application>
EXPORT_PATH = f"argocd/{NAME}"  # where the export is committed, synced by the parent Application
PARENT = "platform"  # the app-of-apps docs/gitops.md shows
REMOVED = "notebook-controller"  # the application the upgrade commit removes: no other application depends on it
ADDED = "tensorboard-controller"  # and the one it adds
USER_NS = "team-a"  # the user's own namespace: kfctl's platform does not make it
INSTALL_TIMEOUT = 900.0  # 157-317 s under load 12-14; over 600 s under load 20 beside upstream's platform synced


def managed_keys(app: dict[str, Any]) -> set[Key]:
    """(group, kind, namespace, name) of each object an Application manages, from its status.resources."""
    return {
        (r.get("group") or "", r["kind"], r.get("namespace") or "", r["name"])
        for r in (app.get("status") or {}).get("resources") or []
    }


@pytest.fixture(scope="module")
def platform(module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArgoPlatform]:
    argocd_support.require_argocd()  # fails, never skips, before anything is built for nothing
    root = tmp_path_factory.mktemp("gitops-argocd")
    with exported_to_argocd(
        root, module_cluster.kubeconfig, NAME, "--platform", "kind", export=EXPORT_PATH, parent=PARENT,
        timeout=INSTALL_TIMEOUT,
    ) as synced:  # fmt: skip
        yield synced


def test_argocd_syncs_every_application_to_healthy_wave_after_wave(platform: ArgoPlatform) -> None:
    children = platform.exported()
    live = platform.sync.applications
    waves: dict[int, list[str]] = {}
    for name, app in children.items():
        waves.setdefault(wave(app), []).append(name)
        assert live[name]["status"]["sync"]["revision"] == platform.commit, name
    assert sorted(waves) == list(range(len(waves))) and len(waves) >= 3, waves
    assert waves[0] == [f"{NAME}-cert-manager", f"{NAME}-common"]
    created = {n: timestamp(live[n]["metadata"]["creationTimestamp"]) for n in children}
    synced = {n: timestamp(live[n]["status"]["operationState"]["finishedAt"]) for n in children}
    t0 = min(created.values())
    timeline = "\n".join(
        f"  wave {wave(children[n])} {n}: created +{created[n] - t0:.0f} s, synced +{synced[n] - t0:.0f} s"
        for n in sorted(children, key=lambda n: (wave(children[n]), n))
    )
    print(f"\nArgo CD timeline (second resolution):\n{timeline}")
    # The parent creates a wave's Applications only once every earlier wave's are synced (and healthy).
    early = [
        f"{n} (wave {w}) created before {m} (wave {wave(children[m])}) synced"
        for w, ns in waves.items()
        for n in ns
        for m in children
        if wave(children[m]) < w and created[n] < synced[m]
    ]
    assert not early, f"{early}\n{timeline}"


def test_argocd_holds_exactly_what_kfctl_apply_would(platform: ArgoPlatform) -> None:
    by_app: dict[str, set[Key]] = {}
    for name, app in platform.exported().items():
        application = app["metadata"]["labels"]["kfctl.kubeflow.org/application"]
        mine = managed_keys(platform.sync.applications[name])
        assert not mine & by_app.get(application, set()), f"{name}: overlaps its application's other part"
        by_app.setdefault(application, set()).update(mine)
    everything: set[Key] = set()
    for application, held in sorted(by_app.items()):
        rendered = rendered_keys(platform.app_dir, application)
        assert held == rendered, (
            f"{application}: only Argo CD {sorted(held - rendered)}; only kfctl {sorted(rendered - held)}"
        )
        everything |= held
    plan = json.loads(run_kfctl("plan", str(platform.app_dir), "--skip-generate", "-o", "json").stdout)
    planned = {s["step"] for w in plan["waves"] for s in w if s["kind"] == "object"}
    assert {str(ObjectKey(*k)) for k in everything} | set(platform.sync.secrets) == planned
    # cert-manager's cainjector filled the webhooks' caBundle kfctl renders empty, and they stay Synced.
    webhook = platform.sync.api.get(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/katib.kubeflow.org"
    )
    assert webhook is not None and webhook["webhooks"][0]["clientConfig"].get("caBundle"), webhook


def users_objects() -> str:
    """What a user made between the two commits: a namespace of their own, a ConfigMap and a Notebook in it (a
    custom resource of the CRD of the application the commit removes)."""
    notebook = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "Notebook",
        "metadata": {"name": "users-notebook", "namespace": USER_NS},
        "spec": {"template": {"spec": {"containers": [{"name": "users-notebook", "image": "jupyter/base:e2e"}]}}},
    }
    return yaml.safe_dump_all(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": USER_NS}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "users-own", "namespace": USER_NS}},
            notebook,
        ]
    )


def test_an_upgrade_commit_adds_a_component_removes_one_and_keeps_the_users_objects(
    platform: ArgoPlatform, tmp_path: Path
) -> None:
    """A commit that adds an application and removes another: the parent creates the new child, which syncs to
    healthy, and prunes the removed one, whose resources finalizer deletes what it applied but the CRDs,
    Namespaces and PVCs the export marks kept, as `kfctl apply`'s prune keeps them; the user's namespace,
    ConfigMap and Notebook (an instance of the removed application's CRD) are the same objects after."""
    kubeconfig = platform.kubeconfig
    api = platform.sync.api
    mine = tmp_path / "users.yaml"
    mine.write_text(users_objects())
    flux_support.kubectl(kubeconfig, "apply", "-f", str(mine))
    users = {k: o["metadata"]["uid"] for k, o in live_objects(kubeconfig, mine).items()}
    removed = rendered_keys(platform.app_dir, REMOVED)
    kept = {k for k in removed if (k[0], k[1]) in KEPT}
    assert kept != removed and any(k[1] == "CustomResourceDefinition" for k in kept), removed
    before = tmp_path / f"{REMOVED}.yaml"
    shutil.copy(platform.app_dir / "rendered" / f"{REMOVED}.yaml", before)
    kfdef_path = platform.app_dir / "kfdef.yaml"
    kfdef = yaml.safe_load(kfdef_path.read_text())
    kfdef["spec"]["applications"] = [a for a in kfdef["spec"]["applications"] if a["name"] != REMOVED]
    kfdef["spec"]["applications"].append({"name": ADDED})
    kfdef_path.write_text(yaml.safe_dump(kfdef, sort_keys=False))
    run_kfctl("generate", str(platform.app_dir))
    export_argocd(platform.app, EXPORT_PATH)
    children = platform.exported()
    assert f"{NAME}-{REMOVED}" not in children and f"{NAME}-{ADDED}" in children
    commit = platform.app.commit_and_push(f"kfctl platform: {ADDED} instead of {REMOVED}", EXPORT_PATH)
    argocd_support.wait_for(
        lambda: api.get(f"{APPLICATIONS}/{NAME}-{REMOVED}") is None,
        api=api,
        argocd=platform.sync.argocd,
        timeout=300,
        what=f"Argo CD to prune Application {NAME}-{REMOVED}",
    )
    poll(
        lambda: set(live_objects(kubeconfig, before, missing_ok=True)) == kept,
        timeout=300,
        what=f"Argo CD to delete {REMOVED}'s objects but {sorted(kept)}",
    )
    found = argocd_support.wait_all(
        api, [PARENT, *children], timeout=INSTALL_TIMEOUT, argocd=platform.sync.argocd, revision=commit
    )
    assert rendered_keys(platform.app_dir, ADDED) <= managed_keys(found[f"{NAME}-{ADDED}"])
    rendered = set().union(*(rendered_keys(platform.app_dir, a) for a in applications(platform.app_dir)))
    assert set(live_objects(kubeconfig, platform.app_dir / "rendered")) == rendered  # nothing of the others went
    after = {k: o["metadata"]["uid"] for k, o in live_objects(kubeconfig, mine, missing_ok=True).items()}
    assert after == users, (users, after)
    print(
        f"\nArgo CD added {ADDED} ({len(rendered_keys(platform.app_dir, ADDED))} objects), pruned "
        f"{len(removed - kept)} object(s) of {REMOVED}, kept {sorted(kept)} and the user's {sorted(users)}"
    )


def test_deleting_the_parent_removes_the_platform_in_reverse_wave_order_but_what_kfctl_keeps(
    platform: ArgoPlatform,
) -> None:
    """Last: it removes the platform. Argo CD deletes a wave's children only once the later waves' are gone
    (controller/sort_delete.go), each child its objects through the resources finalizer kfctl exports."""
    children = platform.exported()
    api = platform.sync.api
    api.delete(f"{APPLICATIONS}/{PARENT}")
    tick = 0
    deleting: dict[str, int] = {}  # poll round in which a child was first seen with a deletionTimestamp (or gone)
    gone: dict[str, int] = {}

    def all_gone() -> bool:
        nonlocal tick
        tick += 1
        live = {a["metadata"]["name"]: a for a in api.list(APPLICATIONS)}
        for n in children:
            if n not in live:
                gone.setdefault(n, tick)
                deleting.setdefault(n, tick)
            elif live[n]["metadata"].get("deletionTimestamp"):
                deleting.setdefault(n, tick)
        return not live

    poll(all_gone, timeout=420, interval=0.5, what="Argo CD to delete the parent and every child Application")
    early = [
        f"{b} (wave {wave(children[b])}) deleted while {a} (wave {wave(children[a])}) was still there"
        for a in children
        for b in children
        if wave(children[a]) > wave(children[b]) and deleting[b] < gone[a]
    ]
    order = ", ".join(f"{n} {deleting[n]}-{gone[n]}" for n in sorted(children, key=lambda n: deleting[n]))
    print(f"\nArgo CD deleted the children (poll rounds, deletion started-gone): {order}")
    assert not early, early
    rendered = set().union(*(rendered_keys(platform.app_dir, a) for a in applications(platform.app_dir)))
    kept = {k for k in rendered if (k[0], k[1]) in KEPT}
    assert kept and any(k[1] == "CustomResourceDefinition" for k in kept)
    poll(
        lambda: set(live_objects(platform.kubeconfig, platform.app_dir / "rendered", missing_ok=True)) == kept,
        timeout=120,
        what="every object the children applied deleted but for the CRDs, Namespaces and PVCs kfctl keeps",
    )
