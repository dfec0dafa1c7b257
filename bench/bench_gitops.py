"""B8: time to all-Ready of the default kind platform, `kfctl apply` against Flux and Argo CD reconciling
`kfctl export`.

The platform is `kfctl init --platform kind` (the default components: cert-manager, common, training-operator,
katib, kserve, notebook-controller, pipelines), generated once before any timing. Per run, fresh clusters in
an order that rotates from run to run:

- kfctl: `kfctl apply APPDIR --skip-generate` (dependency order, waits until every object is healthy,
  creates the generated Secrets, writes its inventory), wall seconds of the process.
- Flux: the export (`kfctl export --format flux --prune`) and the app directory committed to a git repository
  on 127.0.0.1 (kfctl_testbed.gitserver); Flux's real source-controller and kustomize-controller (e2e/build-binaries
  --flux) running against the cluster with its CRDs installed (untimed); then timed, what a user does: apply
  the GitRepository, once it has fetched apply the parent Kustomization that syncs the export (as `flux
  bootstrap` makes one), run `kfctl secrets apply` once the kubeflow namespace exists, until every
  Kustomization is Ready (each waits for its dependsOn and for its objects' health, `wait: true`). With Flux's
  default `--requeue-dependency=30s`, and again with 5s (a Kustomization whose dependencies are not Ready
  looks again only that often: it sets most of Flux's time).
- Argo CD: the same app directory exported by `kfctl export --format argocd --prune` into the same repository
  (one commit holds both exports: the same bytes); Argo CD v3.2.11's real application controller and
  repo-server with Redis (e2e/build-binaries --argocd, kfctl_testbed.argocd, resync every 20 s as
  e2e/test_gitops_argocd ran it until 2026-11-29) with its CRDs, settings and the export's argocd-cm.yaml set
  up untimed; then timed,
  what docs/gitops.md has a user do: apply the parent Application (the app-of-apps of the export's directory),
  run `kfctl secrets apply` once the kubeflow namespace exists, until the parent and every child Application
  are Synced and Healthy at the pushed commit (each wave's children created once the earlier waves' are).

As in B1, the operators whose binaries e2e/build-binaries --operators built run for real (the process
runtime), the rest are kwok's simulated pods; what cert-manager would do the stand-in does, on every cluster
alike.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlib import Samples, fresh_cluster, kfctl_argv, log, run_measured
from kfctl_testbed import argocd as argocd_support
from kfctl_testbed import flux as flux_support
from kfctl_testbed import gitserver, kube_rest
from kfctl_testbed.poll import poll

from kfctl import yamlio

NAME = "bench"
APP_PATH = f"clusters/{NAME}"
EXPORT_PATH = f"flux/{NAME}"
ARGOCD_PATH = f"argocd/{NAME}"
ARGOCD_PARENT = "platform"
REQUEUE = {"flux": "30s", "flux-5s": "5s"}  # side → kustomize-controller --requeue-dependency


@dataclass
class GitopsFigures:
    objects: int = 0
    kustomizations: int = 0
    kfctl: Samples = field(default_factory=Samples)
    flux: Samples = field(default_factory=Samples)  # Flux's defaults
    flux_fast: Samples = field(default_factory=Samples)  # --requeue-dependency=5s
    applications: int = 0  # the Argo CD export's child Applications
    argocd: Samples = field(default_factory=Samples)


def prepare(root: Path, server: gitserver.GitServer) -> tuple[Path, flux_support.Repo, dict[str, Any]]:
    """Init + generate + export the default kind platform into a repository the loopback server serves. Untimed."""
    repo = flux_support.new_repo(root, server, "platform")
    app = repo.work / APP_PATH
    app.parent.mkdir(parents=True)
    run_measured(kfctl_argv("init", str(app), "--platform", "kind")).check()
    run_measured(kfctl_argv("generate", str(app))).check()
    run_measured(
        kfctl_argv(
            "export", str(app), "--format", "flux", "--repo-url", repo.url, "--path", APP_PATH, "--prune",
            "--output-dir", str(repo.work / EXPORT_PATH),
        )
    ).check()  # fmt: skip
    run_measured(
        kfctl_argv(
            "export", str(app), "--format", "argocd", "--repo-url", repo.url, "--path", APP_PATH, "--prune",
            "--output-dir", str(repo.work / ARGOCD_PATH),
        )
    ).check()  # fmt: skip
    commit = repo.commit_and_push("platform", APP_PATH, EXPORT_PATH, ARGOCD_PATH)
    objects = sum(1 for p in (app / "rendered").glob("*.yaml") for o in yamlio.safe_load_all(p.read_text()) if o)
    names = [p.stem.removeprefix("kustomization-") for p in (repo.work / EXPORT_PATH).glob("kustomization-*.yaml")]
    docs = (yamlio.safe_load(p.read_text()) for p in sorted((repo.work / ARGOCD_PATH).glob("application-*.yaml")))
    applications = [str(d["metadata"]["name"]) for d in docs]
    return app, repo, {"objects": objects, "kustomizations": names, "applications": applications, "commit": commit}


def parent() -> str:
    return json.dumps(
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "platform-sync", "namespace": flux_support.NAMESPACE},
            "spec": {
                "interval": "10m",
                "path": f"./{EXPORT_PATH}",
                "prune": True,
                "sourceRef": {"kind": "GitRepository", "name": NAME},
            },
        }
    )


def flux_install(kc: str, app: Path, repo: flux_support.Repo, names: list[str], work: Path, requeue: str) -> float:
    """Flux's controllers and CRDs set up (untimed), then the user's steps until every Kustomization is Ready."""
    flux_support.install_crds(kc)
    api = kube_rest.Client(kc)
    try:
        with flux_support.run_flux(kc, work, requeue_dependency=requeue) as flux:
            source = (repo.work / EXPORT_PATH / f"gitrepository-{NAME}.yaml").read_text()
            start = time.perf_counter()
            flux_support.kubectl(kc, "apply", "--server-side", "-f", "-", stdin=source)
            poll(
                lambda: flux_support.is_ready(api.get(f"{flux_support.GITREPOSITORIES}/{NAME}") or {}),
                timeout=120,
                what=f"GitRepository {NAME} Ready",
            )
            flux_support.kubectl(kc, "apply", "--server-side", "-f", "-", stdin=parent())
            poll(lambda: api.get("/api/v1/namespaces/kubeflow") is not None, timeout=300, what="namespace kubeflow")
            run_measured(kfctl_argv("secrets", "apply", str(app), "--kubeconfig", kc)).check()
            flux_support.wait_all_ready(api, ["platform-sync", *names], timeout=1200, flux=flux)
            return time.perf_counter() - start
    finally:
        api.close()


def argocd_install(kc: str, app: Path, repo: flux_support.Repo, info: dict[str, Any], work: Path) -> float:
    """Argo CD's CRDs, settings (with the export's argocd-cm.yaml) and processes set up (untimed), then the
    user's steps until the parent and every child Application are Synced and Healthy at the pushed commit."""
    argocd_support.install(kc)
    cm = repo.work / ARGOCD_PATH / "argocd-cm.yaml"
    flux_support.kubectl(kc, "apply", "--server-side", "--field-manager=kfctl", "-f", str(cm))
    api = kube_rest.Client(kc)
    try:
        with argocd_support.run_argocd(kc, work, resync=20) as argocd:
            start = time.perf_counter()
            parent = argocd_support.parent_application(ARGOCD_PARENT, repo.url, ARGOCD_PATH)
            flux_support.kubectl(kc, "apply", "--server-side", "-f", "-", stdin=parent)
            poll(lambda: api.get("/api/v1/namespaces/kubeflow") is not None, timeout=300, what="namespace kubeflow")
            run_measured(kfctl_argv("secrets", "apply", str(app), "--kubeconfig", kc)).check()
            names = [ARGOCD_PARENT, *info["applications"]]
            argocd_support.wait_all(api, names, timeout=1200, argocd=argocd, revision=info["commit"])
            return time.perf_counter() - start
    finally:
        api.close()


def _require_binaries() -> None:
    bin_dir = flux_support.flux_bin_dir()
    missing = [b for b in flux_support.BINARIES if not (bin_dir / b).is_file()]
    if missing:
        raise SystemExit(f"B8 needs Flux's {', '.join(missing)} in {bin_dir}: run e2e/build-binaries --flux")
    argo_dir = argocd_support.argocd_bin_dir()
    missing = [b for b in argocd_support.BINARIES if not (argo_dir / b).is_file()]
    if missing:
        raise SystemExit(f"B8 needs Argo CD's {', '.join(missing)} in {argo_dir}: run e2e/build-binaries --argocd")


def measure(root: Path, *, runs: int) -> GitopsFigures:
    _require_binaries()
    figs = GitopsFigures()
    served = root / "gitops" / "served"
    served.mkdir(parents=True)
    with gitserver.serve(served) as server:
        app, repo, info = prepare(root / "gitops", server)
        figs.objects, figs.kustomizations = info["objects"], len(info["kustomizations"])
        figs.applications = len(info["applications"])
        log(
            f"B8: default kind platform, {figs.objects} objects, {figs.kustomizations} Kustomizations, "
            f"{figs.applications} Argo CD Applications"
        )
        sides = ["kfctl", "flux", "flux-5s", "argocd"]
        for i in range(runs):
            for side in sides[i % len(sides) :] + sides[: i % len(sides)]:
                with fresh_cluster(f"b8-{side}") as kc:
                    if side == "kfctl":
                        argv = kfctl_argv("apply", str(app), "--skip-generate", "-o", "json", "--kubeconfig", kc)
                        figs.kfctl.add(run_measured(argv).check().seconds)
                        log(f"run {i + 1}: kfctl apply {figs.kfctl.values[-1]:.1f}s")
                    elif side == "argocd":
                        with tempfile.TemporaryDirectory(prefix="kfctl-bench-argocd-") as work:
                            seconds = argocd_install(kc, app, repo, info, Path(work))
                        figs.argocd.add(seconds)
                        log(f"run {i + 1}: argocd {seconds:.1f}s")
                    else:
                        with tempfile.TemporaryDirectory(prefix="kfctl-bench-flux-") as work:
                            seconds = flux_install(kc, app, repo, info["kustomizations"], Path(work), REQUEUE[side])
                        (figs.flux if side == "flux" else figs.flux_fast).add(seconds)
                        log(f"run {i + 1}: {side} {seconds:.1f}s")
    return figs
