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
2. An application removed from the KfDef, re-generated, re-exported and pushed: the parent prunes its child
   Application, which deletes what it applied but the CRDs, Namespaces and PVCs the export marks kept.
3. Deleting the parent (foreground, as `argocd app delete` does) deletes the children and with them, through
   the resources finalizer the export sets, what they applied, but for what kfctl's own prune keeps (CRDs,
   Namespaces, PVCs).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import Cluster, poll
from kfctl_testbed import argocd as argocd_support
from kfctl_testbed import flux as flux_support
from kfctl_testbed import gitserver, kube_rest
from kfctl_testbed.argocd import APPLICATIONS, ArgoCD
from kfctl_testbed.flux import Repo

from kfctl import yamlio
from kfctl.objects import ObjectKey

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent
NAME = "e2e"  # the app directory's name, so the KfDef's: Applications are e2e-<application>
APP_PATH = f"clusters/{NAME}"  # where the app directory sits in the repository (kfctl export --path)
EXPORT_PATH = f"argocd/{NAME}"  # where the export is committed, synced by the parent Application
PARENT = "platform"  # the app-of-apps docs/gitops.md shows
REMOVED = "notebook-controller"  # the application the prune test removes: no other application depends on it
INSTALL_TIMEOUT = 600.0
Key = tuple[str, str, str, str]  # group, kind, namespace, name
# Kinds kfctl's own prune keeps unless told, which the export marks Prune=false,Delete=false (group, kind).
KEPT = {
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("", "Namespace"),
    ("", "PersistentVolume"),
    ("", "PersistentVolumeClaim"),
}


def run_kfctl(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "kfctl.cli.main", *args], capture_output=True, text=True, timeout=600, cwd=REPO
    )
    assert proc.returncode == 0, f"kfctl {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def key_of(obj: dict[str, Any]) -> Key:
    api = str(obj["apiVersion"])
    meta = obj["metadata"]
    return (api.split("/")[0] if "/" in api else "", obj["kind"], meta.get("namespace") or "", meta["name"])


def rendered_keys(app_dir: Path, application: str) -> set[Key]:
    return {key_of(o) for o in yamlio.safe_load_all((app_dir / "rendered" / f"{application}.yaml").read_text()) if o}


def export(app_dir: Path, repo: Repo) -> None:
    run_kfctl(
        "export", str(app_dir), "--format", "argocd", "--repo-url", repo.url, "--path", APP_PATH, "--prune",
        "--output-dir", str(repo.work / EXPORT_PATH),
    )  # fmt: skip


def commit_and_push(app_dir: Path, repo: Repo, message: str) -> str:
    """The app directory's committed parts (README "GitOps"; its .gitignore keeps .cache/ out) and the export."""
    committed = ("kfdef.yaml", "kfdef.lock", "vendor", "kustomize", "rendered", ".gitignore")
    parts = [f"{APP_PATH}/{p}" for p in committed if (app_dir / p).exists() or p in ("kustomize", "rendered")]
    return repo.commit_and_push(message, *parts, EXPORT_PATH)


def exported(repo: Repo) -> dict[str, dict[str, Any]]:
    """Name → the Application kfctl export wrote."""
    docs = (yaml.safe_load(p.read_text()) for p in sorted((repo.work / EXPORT_PATH).glob("application-*.yaml")))
    return {d["metadata"]["name"]: d for d in docs}


def wave(app: dict[str, Any]) -> int:
    return int(app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])


def parent_application(repo_url: str) -> str:
    """The app-of-apps of docs/gitops.md: the export's directory, prune on, in Argo CD's namespace; its resources
    finalizer makes deleting it delete the children, the highest wave first."""
    return yaml.safe_dump(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {
                "name": PARENT,
                "namespace": argocd_support.NAMESPACE,
                "finalizers": ["resources-finalizer.argocd.argoproj.io"],
            },
            "spec": {
                "project": "default",
                "source": {"repoURL": repo_url, "targetRevision": "main", "path": EXPORT_PATH},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": argocd_support.NAMESPACE},
                "syncPolicy": {
                    "automated": {"prune": True},
                    "retry": {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"}},
                },
            },
        }
    )


def timestamp(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def managed_keys(app: dict[str, Any]) -> set[Key]:
    """(group, kind, namespace, name) of each object an Application manages, from its status.resources."""
    return {
        (r.get("group") or "", r["kind"], r.get("namespace") or "", r["name"])
        for r in (app.get("status") or {}).get("resources") or []
    }


@dataclass
class Platform:
    cluster: Cluster
    api: kube_rest.Client
    argocd: ArgoCD
    app_dir: Path
    repo: Repo
    commit: str
    seconds: float  # from handing the parent to Argo CD until every Application is Synced and Healthy
    applications: dict[str, dict[str, Any]]  # as read once all were
    secrets: list[str]  # the generated Secrets `kfctl secrets apply` created, as kfctl names them


@pytest.fixture(scope="module")
def argocd_binaries() -> Path:
    """Argo CD and kustomize, built by `e2e/build-binaries --argocd`, and redis-server (make setup): the tests
    fail, never skip, without them (checked before a cluster is started for nothing)."""
    return argocd_support.require_argocd()


@pytest.fixture(scope="module")
def platform(
    argocd_binaries: Path, module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Platform]:
    root = tmp_path_factory.mktemp("gitops-argocd")
    kubeconfig = module_cluster.kubeconfig
    (root / "served").mkdir()
    with gitserver.serve(root / "served") as server:
        repo = flux_support.new_repo(root, server, "platform")
        app_dir = repo.work / APP_PATH
        app_dir.parent.mkdir(parents=True)
        run_kfctl("init", str(app_dir), "--platform", "kind")
        run_kfctl("generate", str(app_dir))
        export(app_dir, repo)
        commit = commit_and_push(app_dir, repo, "kfctl platform: first export")
        argocd_support.install(kubeconfig)
        # docs/gitops.md: the export's health checks merged into Argo CD's own argocd-cm.
        flux_support.kubectl(
            kubeconfig, "apply", "--server-side", "--field-manager=kfctl", "-f",
            str(repo.work / EXPORT_PATH / "argocd-cm.yaml"),
        )  # fmt: skip
        api = kube_rest.Client(kubeconfig)
        with argocd_support.run_argocd(kubeconfig, root / "argocd") as argocd:
            start = time.monotonic()
            flux_support.kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=parent_application(repo.url))
            argocd_support.wait_for(
                lambda: api.get("/api/v1/namespaces/kubeflow") is not None,
                api=api,
                argocd=argocd,
                timeout=300,
                what="Argo CD to create namespace kubeflow",
            )
            made = run_kfctl("secrets", "apply", str(app_dir), "-o", "json", "--kubeconfig", kubeconfig).stdout
            names = [PARENT, *exported(repo)]
            found = argocd_support.wait_all(api, names, timeout=INSTALL_TIMEOUT, argocd=argocd, revision=commit)
            seconds = time.monotonic() - start
            print(f"\nArgo CD: every Application Synced and Healthy {seconds:.1f} s after the parent was applied")
            secrets = sorted(s["object"] for s in json.loads(made)["secrets"] if s["result"] == "created")
            yield Platform(module_cluster, api, argocd, app_dir, repo, commit, seconds, found, secrets)
            sockets = argocd.non_loopback_sockets()
            assert set(sockets) <= {argocd_support.ALL_INTERFACES_LISTENER}, sockets
        api.close()


def test_argocd_syncs_every_application_to_healthy_wave_after_wave(platform: Platform) -> None:
    children = exported(platform.repo)
    live = platform.applications
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


def test_argocd_holds_exactly_what_kfctl_apply_would(platform: Platform) -> None:
    by_app: dict[str, set[Key]] = {}
    for name, app in exported(platform.repo).items():
        application = app["metadata"]["labels"]["kfctl.kubeflow.org/application"]
        mine = managed_keys(platform.applications[name])
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
    assert {str(ObjectKey(*k)) for k in everything} | set(platform.secrets) == planned
    # cert-manager's cainjector filled the webhooks' caBundle kfctl renders empty, and they stay Synced.
    webhook = platform.api.get(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/katib.kubeflow.org"
    )
    assert webhook is not None and webhook["webhooks"][0]["clientConfig"].get("caBundle"), webhook


def test_an_application_removed_from_the_kfdef_is_pruned_with_its_objects_but_what_kfctl_keeps(
    platform: Platform, tmp_path: Path
) -> None:
    """A commit without an application: the parent prunes its child Application, whose resources finalizer
    deletes what it applied but the CRDs, Namespaces and PVCs the export marks kept; the others stay."""
    kubeconfig = platform.cluster.kubeconfig
    removed = rendered_keys(platform.app_dir, REMOVED)
    kept = {k for k in removed if (k[0], k[1]) in KEPT}
    assert kept != removed and any(k[1] == "CustomResourceDefinition" for k in kept), removed
    before = tmp_path / f"{REMOVED}.yaml"
    shutil.copy(platform.app_dir / "rendered" / f"{REMOVED}.yaml", before)
    kfdef_path = platform.app_dir / "kfdef.yaml"
    kfdef = yaml.safe_load(kfdef_path.read_text())
    kfdef["spec"]["applications"] = [a for a in kfdef["spec"]["applications"] if a["name"] != REMOVED]
    kfdef_path.write_text(yaml.safe_dump(kfdef, sort_keys=False))
    run_kfctl("generate", str(platform.app_dir))
    export(platform.app_dir, platform.repo)
    assert f"{NAME}-{REMOVED}" not in exported(platform.repo)
    commit = commit_and_push(platform.app_dir, platform.repo, f"kfctl platform: without {REMOVED}")
    argocd_support.wait_for(
        lambda: platform.api.get(f"{APPLICATIONS}/{NAME}-{REMOVED}") is None,
        api=platform.api,
        argocd=platform.argocd,
        timeout=300,
        what=f"Argo CD to prune Application {NAME}-{REMOVED}",
    )
    poll(
        lambda: live_keys(kubeconfig, before) == kept,
        timeout=300,
        what=f"Argo CD to delete {REMOVED}'s objects but {sorted(kept)}",
    )
    argocd_support.wait_all(
        platform.api, [PARENT, *exported(platform.repo)], timeout=300, argocd=platform.argocd, revision=commit
    )
    rendered = set().union(*(rendered_keys(platform.app_dir, a) for a in applications(platform.app_dir)))
    assert live_keys(kubeconfig, platform.app_dir / "rendered") == rendered  # nothing of the others went
    print(f"\nArgo CD pruned {len(removed - kept)} object(s) of {REMOVED}; kept {sorted(kept)}")


def applications(app_dir: Path) -> list[str]:
    kfdef = yaml.safe_load((app_dir / "kfdef.yaml").read_text())
    return [a["name"] for a in kfdef["spec"]["applications"] if a.get("enabled", True)]


def live_keys(kubeconfig: str, path: Path) -> set[Key]:
    """The keys of the objects of a rendered file or directory that exist in the cluster."""
    out = flux_support.kubectl(kubeconfig, "get", "-f", str(path), "--ignore-not-found", "-o", "json")
    doc: dict[str, Any] = json.loads(out) if out.strip() else {}
    items: list[dict[str, Any]] = doc["items"] if doc.get("kind") == "List" else [doc] if doc else []
    return {key_of(o) for o in items}


def test_deleting_the_parent_removes_the_platform_in_reverse_wave_order_but_what_kfctl_keeps(
    platform: Platform,
) -> None:
    """Last: it removes the platform. Argo CD deletes a wave's children only once the later waves' are gone
    (controller/sort_delete.go), each child its objects through the resources finalizer kfctl exports."""
    children = exported(platform.repo)
    platform.api.delete(f"{APPLICATIONS}/{PARENT}")
    tick = 0
    deleting: dict[str, int] = {}  # poll round in which a child was first seen with a deletionTimestamp (or gone)
    gone: dict[str, int] = {}

    def all_gone() -> bool:
        nonlocal tick
        tick += 1
        live = {a["metadata"]["name"]: a for a in platform.api.list(APPLICATIONS)}
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
        lambda: live_keys(platform.cluster.kubeconfig, platform.app_dir / "rendered") == kept,
        timeout=120,
        what="every object the children applied deleted but for the CRDs, Namespaces and PVCs kfctl keeps",
    )
