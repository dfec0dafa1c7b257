"""`kfctl export --format flux`, reconciled by Flux's real controllers from a git repository on 127.0.0.1.

On a cluster of the module's own (`module_cluster`: the process runtime runs the real operators on the kwok
nodes), with Flux's source-controller and kustomize-controller built from their Go modules and run as
processes (flux_support), the tests go the way a user goes, in order:

1. `kfctl init` (the default kind platform), `generate`, `export --format flux --prune`; the app directory
   committed as the README says (kfdef.yaml, kustomize/, vendor/, rendered/, .gitignore) and the export beside
   it, pushed to the loopback git server (kfctl_testbed.gitserver: git's own smart HTTP); the export handed to Flux the
   way `flux bootstrap` hands it a cluster path: its GitRepository, then a parent Kustomization (prune on)
   syncing the export's directory; `kfctl secrets apply` once the kubeflow namespace exists (README: the
   generated credentials are in no file). Every Kustomization becomes Ready, each only after the ones its
   dependsOn names (all of its objects are created after their Ready transition); Flux's inventories hold
   exactly the objects kfctl renders for each application, and with the generated Secrets exactly what
   `kfctl plan` says `kfctl apply` applies.
2. Drift of a webhook's backend: KServe's controller scaled to 0. Flux puts it back, because the export gives
   the objects KServe's own webhooks admit (its ClusterServingRuntimes) a Kustomization of their own,
   `e2e-kserve-admitted`, after `e2e-kserve` (kfctl.app.gitops_parts): in one Kustomization their dry run
   fails on the webhook while its backend is down and Flux applies nothing, the controller never comes back.
3. `kfctl apply` of the same app directory refuses, before any write, every object as Flux's (exit 11, each
   named with its Kustomization, the hint pointing to git), instead of fighting the engine.
4. An application removed from the KfDef, re-generated, re-exported and pushed: Flux deletes its
   Kustomization and prunes what it applied, but for what kfctl's own prune keeps (the export marks CRDs,
   Namespaces, PVs and PVCs `kustomize.toolkit.fluxcd.io/prune: disabled`).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from apply_support import kfctl
from gitops_support import (
    KEPT,
    AppRepo,
    Key,
    app_repo,
    applications,
    kfdef_without,
    live_objects,
    rendered_keys,
    run_kfctl,
)
from harness import Cluster, poll
from kfctl_testbed import flux as flux_support
from kfctl_testbed import kube_rest
from kfctl_testbed.flux import FLUX_NAME_LABEL, GITREPOSITORIES, KUSTOMIZATIONS, Flux, Repo

from kfctl.objects import ObjectKey

pytestmark = pytest.mark.e2e

NAME = "e2e"  # the app directory's name, so the KfDef's metadata.name: Kustomizations are e2e-<application>
EXPORT_PATH = f"flux/{NAME}"  # where the export is committed, synced by the parent Kustomization
PARENT = "platform-sync"  # the parent Kustomization, as `flux bootstrap` makes one for a cluster path
REMOVED = "notebook-controller"  # the application the prune test removes: no other application depends on it
INSTALL_TIMEOUT = 900.0
GITOPS_HINT = (
    "a GitOps engine (Flux) reconciles these objects from git: change them there (kfctl generate, kfctl export, "
    "commit) rather than with kfctl apply, as --adopt would have both keep writing them. To hand an application "
    "over to kfctl, first remove it from the engine without deleting its objects (Flux: set prune: false on its "
    "Kustomization, then delete it), then kfctl apply --adopt"
)


def export(app: AppRepo) -> None:
    run_kfctl(
        "export", str(app.app_dir), "--format", "flux", "--repo-url", app.repo.url, "--path", app.path, "--prune",
        "--output-dir", str(app.repo.work / EXPORT_PATH),
    )  # fmt: skip


def exported_kustomizations(repo: Repo) -> dict[str, dict[str, Any]]:
    """Name → the Kustomization kfctl export wrote (one per application, two for one its own webhooks admit)."""
    docs = (yaml.safe_load(p.read_text()) for p in sorted((repo.work / EXPORT_PATH).glob("kustomization-*.yaml")))
    return {d["metadata"]["name"]: d for d in docs}


def parent_kustomization() -> str:
    """What `flux bootstrap` makes for the cluster path holding the export: a Kustomization of the export's
    directory, prune on, so that a Kustomization removed from git is deleted (and prunes what it applied)."""
    return yaml.safe_dump(
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": PARENT, "namespace": flux_support.NAMESPACE},
            "spec": {
                "interval": "10m",
                "path": f"./{EXPORT_PATH}",
                "prune": True,
                "sourceRef": {"kind": "GitRepository", "name": NAME},
            },
        }
    )


def request_reconcile(api: kube_rest.Client, path: str) -> None:
    """What `flux reconcile` does: without it Flux looks again only after the interval (the export's 10m)."""
    api.merge_patch(path, {"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": str(time.time())}}})


@dataclass
class Platform:
    cluster: Cluster
    api: kube_rest.Client
    flux: Flux
    app: AppRepo
    commit: str
    seconds: float  # from handing the export to Flux until every Kustomization is Ready
    kustomizations: dict[str, dict[str, Any]]  # as read once all were Ready
    secrets: list[str]  # the generated Secrets `kfctl secrets apply` created, as kfctl names them

    @property
    def app_dir(self) -> Path:
        return self.app.app_dir

    @property
    def repo(self) -> Repo:
        return self.app.repo


@pytest.fixture(scope="module")
def platform(module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    flux_support.require_flux_binaries()  # fails, never skips, before anything is built for nothing
    root = tmp_path_factory.mktemp("gitops-flux")
    kubeconfig = module_cluster.kubeconfig
    with app_repo(root, NAME, "--platform", "kind") as app:
        repo, app_dir = app.repo, app.app_dir
        export(app)
        commit = app.commit_and_push("kfctl platform: first export", EXPORT_PATH)
        flux_support.install_crds(kubeconfig)
        api = kube_rest.Client(kubeconfig)
        # Dependencies looked at every 5 s instead of Flux's 30 s: the same order, a shorter test (bench B8 times
        # Flux's defaults).
        with flux_support.run_flux(kubeconfig, root / "flux", requeue_dependency="5s") as flux:
            source = (repo.work / EXPORT_PATH / f"gitrepository-{NAME}.yaml").read_text()
            start = time.monotonic()
            # The one step a user takes by hand: the source, then (once it has fetched) the parent that syncs
            # the export from git. Applied together, the parent would wait out Flux's 30 s artifact retry.
            flux_support.kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=source)
            poll(
                lambda: flux_support.is_ready(api.get(f"{GITREPOSITORIES}/{NAME}") or {}),
                timeout=120,
                what="the GitRepository to fetch the pushed commit",
            )
            flux_support.kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=parent_kustomization())
            poll(lambda: api.get("/api/v1/namespaces/kubeflow"), timeout=300, what="Flux to create namespace kubeflow")
            made = run_kfctl("secrets", "apply", str(app_dir), "-o", "json", "--kubeconfig", kubeconfig).stdout
            names = [PARENT, *exported_kustomizations(repo)]
            found = flux_support.wait_all_ready(
                api, names, timeout=INSTALL_TIMEOUT, flux=flux, revision=f"main@sha1:{commit}"
            )
            seconds = time.monotonic() - start
            print(f"\nFlux: every Kustomization Ready {seconds:.1f} s after the export was handed to it")
            secrets = sorted(s["object"] for s in json.loads(made)["secrets"] if s["result"] == "created")
            yield Platform(module_cluster, api, flux, app, commit, seconds, found, secrets)
            assert not flux.non_loopback_sockets(), flux.non_loopback_sockets()
        api.close()


def parts_of(platform: Platform) -> dict[str, list[str]]:
    """Application → the names of its Kustomizations."""
    out: dict[str, list[str]] = {}
    for name, ks in exported_kustomizations(platform.repo).items():
        out.setdefault(ks["metadata"]["labels"]["kfctl.kubeflow.org/application"], []).append(name)
    return {app: sorted(names) for app, names in out.items()}


def test_flux_reconciles_every_kustomization_to_ready_after_its_dependencies(platform: Platform) -> None:
    source = platform.api.get(f"{GITREPOSITORIES}/{NAME}")
    assert source is not None and flux_support.is_ready(source), source
    assert source["status"]["artifact"]["revision"] == f"main@sha1:{platform.commit}"
    exported = exported_kustomizations(platform.repo)
    assert sorted(parts_of(platform)) == sorted(applications(platform.app_dir))
    assert parts_of(platform)["kserve"] == [f"{NAME}-kserve", f"{NAME}-kserve-admitted"]
    ready_at = {
        name: flux_support.timestamp(flux_support.condition(ks, "Ready")["lastTransitionTime"])
        for name, ks in platform.kustomizations.items()
    }
    depends = {name: [d["name"] for d in ks["spec"].get("dependsOn", [])] for name, ks in exported.items()}
    live = live_objects(platform.cluster.kubeconfig, platform.app_dir / "rendered")
    started = {}
    for name in exported:
        ks = platform.kustomizations[name]
        assert ks["status"]["lastAppliedRevision"] == f"main@sha1:{platform.commit}", name
        created = [
            flux_support.timestamp(live[k]["metadata"]["creationTimestamp"]) for k in flux_support.inventory_keys(ks)
        ]
        started[name] = min(created)
    t0 = min(started.values())
    timeline = "\n".join(
        f"  {n}: first object +{started[n] - t0:.0f} s, Ready +{ready_at[n] - t0:.0f} s, dependsOn {depends[n]}"
        for n in sorted(exported, key=lambda n: (started[n], n))
    )
    print(f"\nFlux timeline (second resolution):\n{timeline}")
    early = [
        f"{n} created an object before {d} was Ready"
        for n, ds in depends.items()
        for d in ds
        if started[n] < ready_at[d]
    ]
    assert not early, f"{early}\n{timeline}"
    assert depends[f"{NAME}-kserve"] == [f"{NAME}-cert-manager", f"{NAME}-common"]
    assert depends[f"{NAME}-kserve-admitted"] == [f"{NAME}-kserve"]


def live_by_key(platform: Platform, keys: set[Key]) -> dict[Key, dict[str, Any]]:
    """The live objects of these keys (from one `kubectl get -f rendered/`: every object kfctl renders)."""
    found = {
        k: o for k, o in live_objects(platform.cluster.kubeconfig, platform.app_dir / "rendered").items() if k in keys
    }
    assert set(found) == keys, sorted(keys - set(found))
    return found


def test_flux_applies_exactly_what_kfctl_apply_would(platform: Platform) -> None:
    everything: set[Key] = set()
    for app, names in parts_of(platform).items():
        inventories = [flux_support.inventory_keys(platform.kustomizations[n]) for n in names]
        applied = set().union(*inventories)
        assert sum(len(i) for i in inventories) == len(applied), f"{app}: its parts overlap"
        rendered = rendered_keys(platform.app_dir, app)
        assert applied == rendered, (
            f"{app}: only Flux {sorted(applied - rendered)}; only kfctl {sorted(rendered - applied)}"
        )
        everything |= applied
    unmarked = [
        k for k, o in live_by_key(platform, everything).items() if FLUX_NAME_LABEL not in o["metadata"]["labels"]
    ]
    assert not unmarked, f"objects Flux did not mark: {unmarked}"
    plan = json.loads(run_kfctl("plan", str(platform.app_dir), "--skip-generate", "-o", "json").stdout)
    planned = {s["step"] for wave in plan["waves"] for s in wave if s["kind"] == "object"}
    assert {str(ObjectKey(*k)) for k in everything} | set(platform.secrets) == planned
    assert platform.secrets == [  # generated by kfctl in the cluster: no file in git holds them
        "Secret kubeflow/katib-mysql-secrets",
        "Secret kubeflow/mlpipeline-minio-artifact",
        "Secret kubeflow/mysql-secret",
    ]


def test_flux_heals_a_webhook_backend_because_what_its_webhook_admits_waits_in_another_part(
    platform: Platform,
) -> None:
    kubeconfig = platform.cluster.kubeconfig
    deployment = "/apis/apps/v1/namespaces/kubeflow/deployments/kserve-controller-manager"
    flux_support.kubectl(kubeconfig, "-n", "kubeflow", "scale", "deployment/kserve-controller-manager", "--replicas=0")
    poll(lambda: (platform.api.get(deployment) or {})["status"].get("replicas", 0) == 0, timeout=60, what="no pod")
    for name in (f"{NAME}-kserve", f"{NAME}-kserve-admitted"):
        request_reconcile(platform.api, f"{KUSTOMIZATIONS}/{name}")
    poll(
        lambda: (platform.api.get(deployment) or {})["status"].get("availableReplicas") == 1,
        timeout=300,
        what="Flux to scale KServe's controller back to 1 (its drift corrected)",
    )
    for name in (f"{NAME}-kserve", f"{NAME}-kserve-admitted"):
        poll(
            lambda n=name: flux_support.is_ready(platform.api.get(f"{KUSTOMIZATIONS}/{n}") or {}),  # type: ignore[misc]
            timeout=300,
            what=f"{name} Ready again",
        )


def test_kfctl_apply_refuses_every_object_flux_owns_and_writes_nothing(platform: Platform) -> None:
    keys = {a: rendered_keys(platform.app_dir, a) for a in applications(platform.app_dir)}
    total = len(set().union(*keys.values()))
    run = kfctl("apply", str(platform.app_dir), "--skip-generate", kubeconfig=platform.cluster.kubeconfig)
    assert run.code == 11, run.explain()
    owners = sorted(
        {f"Flux Kustomization {flux_support.NAMESPACE}/{n}" for n in exported_kustomizations(platform.repo)}
    )
    assert run.error == {
        "kind": "ownership conflict",
        "exitCode": 11,
        "message": (
            f"{total} object(s) the KfDef would install exist already under another owner "
            f"({'; '.join(owners[:3])} …); nothing was written"
        ),
        "details": run.error["details"],
        "hint": GITOPS_HINT,
    }
    assert len(run.error["details"]) == total
    for app, names in parts_of(platform).items():
        for name in names:
            mine = flux_support.inventory_keys(platform.kustomizations[name])
            said = [d for d in run.error["details"] if d.endswith(f" ({app}): Flux Kustomization flux-system/{name}")]
            assert len(said) == len(mine), (name, said)
    print(f"\nkfctl apply: {run.error['message']}\n  {run.error['details'][0]}\n  …\nHint: {run.error['hint']}")
    assert not [e for e in run.events if e["event"] in ("Created", "Configured", "Corrected", "Pruned")], run.events
    # Nothing of kfctl's was written: no inventory, no rendered object with kfctl among its field managers.
    assert platform.api.get(f"/api/v1/namespaces/kubeflow/configmaps/kfctl-inventory-{NAME}") is None
    for key, obj in live_by_key(platform, set().union(*keys.values())).items():
        managers = {f.get("manager") for f in obj["metadata"].get("managedFields") or []}
        assert "kfctl" not in managers, (key, managers)


def test_an_application_removed_from_the_kfdef_is_pruned_by_flux_but_its_crds_stay(
    platform: Platform, tmp_path: Path
) -> None:
    kubeconfig = platform.cluster.kubeconfig
    removed = rendered_keys(platform.app_dir, REMOVED)
    kept = {k for k in removed if (k[0], k[1]) in KEPT}
    assert kept != removed and any(k[1] == "CustomResourceDefinition" for k in kept), removed
    before = tmp_path / f"{REMOVED}.yaml"
    shutil.copy(platform.app_dir / "rendered" / f"{REMOVED}.yaml", before)

    kfdef_without(platform.app_dir, [REMOVED])
    run_kfctl("generate", str(platform.app_dir))
    export(platform.app)
    assert f"{NAME}-{REMOVED}" not in exported_kustomizations(platform.repo)
    commit = platform.app.commit_and_push(f"kfctl platform: without {REMOVED}", EXPORT_PATH)
    request_reconcile(platform.api, f"{GITREPOSITORIES}/{NAME}")
    gone = f"{KUSTOMIZATIONS}/{NAME}-{REMOVED}"
    poll(lambda: platform.api.get(gone) is None, timeout=300, what=f"Flux to delete Kustomization {NAME}-{REMOVED}")
    parent = platform.api.get(f"{KUSTOMIZATIONS}/{PARENT}")
    assert parent is not None and parent["status"]["lastAppliedRevision"] == f"main@sha1:{commit}"
    poll(
        lambda: set(live_objects(kubeconfig, before, missing_ok=True)) == kept,
        timeout=300,
        what=f"Flux to prune {REMOVED} but for {sorted(kept)}",
    )
    # Nothing of the other applications went with it.
    live_by_key(platform, set().union(*(rendered_keys(platform.app_dir, a) for a in applications(platform.app_dir))))
    print(f"\nFlux pruned {len(removed - kept)} object(s) of {REMOVED}; kept {sorted(kept)}")
