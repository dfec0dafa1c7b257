"""Helpers of the GitOps e2e tests (no tests here): kfctl run as the user runs it, an app directory in a git
repository served on 127.0.0.1 (kfctl_testbed.gitserver), committed as the README's "GitOps" says, and the
objects kfctl renders, by key.

`app_repo` is what every GitOps module opens its fixture with: a bare repository served by git's own smart
HTTP, a working copy of it, and `kfctl init` (plus `generate` unless told) into ``clusters/<name>`` there.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kfctl_testbed import argocd as argocd_support
from kfctl_testbed import flux as flux_support
from kfctl_testbed import gitserver, kube_rest
from kfctl_testbed.argocd import ArgoCD
from kfctl_testbed.flux import Repo

from kfctl import yamlio

REPO = Path(__file__).resolve().parent.parent
Key = tuple[str, str, str, str]  # group, kind, namespace, name
# Kinds kfctl's own prune keeps unless told, which the export marks for the engine to keep too (group, kind).
KEPT = {
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("", "Namespace"),
    ("", "PersistentVolume"),
    ("", "PersistentVolumeClaim"),
}
# What the README's "GitOps" says to commit of an app directory (its .gitignore keeps .cache/ out).
COMMITTED = ("kfdef.yaml", "kfdef.lock", "vendor", "kustomize", "rendered", ".gitignore")


def run_kfctl(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """kfctl of this checkout, as a user runs it; fails the test with its output unless it exits 0."""
    proc = subprocess.run(
        [sys.executable, "-m", "kfctl.cli.main", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO
    )
    assert proc.returncode == 0, f"kfctl {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def key_of(obj: dict[str, Any]) -> Key:
    api = str(obj["apiVersion"])
    meta = obj["metadata"]
    return (api.split("/")[0] if "/" in api else "", obj["kind"], meta.get("namespace") or "", meta["name"])


def rendered_keys(app_dir: Path, application: str) -> set[Key]:
    """The objects kfctl renders for one application (what `kfctl apply` applies of it), by key."""
    return {key_of(o) for o in yamlio.safe_load_all((app_dir / "rendered" / f"{application}.yaml").read_text()) if o}


def applications(app_dir: Path) -> list[str]:
    kfdef = yaml.safe_load((app_dir / "kfdef.yaml").read_text())
    return [a["name"] for a in kfdef["spec"]["applications"] if a.get("enabled", True)]


def items(text: str) -> list[dict[str, Any]]:
    """The objects of `kubectl get -o json` output: a List, or the object itself when there is only one."""
    doc = json.loads(text) if text.strip() else None
    if not doc:
        return []
    return list(doc["items"]) if doc.get("kind") == "List" else [doc]


def live_objects(kubeconfig: str, path: Path, *, missing_ok: bool = False) -> dict[Key, dict[str, Any]]:
    """The cluster's copy of each object of a rendered file or directory (`kubectl get -f`: fails if one is
    missing unless ``missing_ok``), by key."""
    flags = ["--ignore-not-found"] if missing_ok else []
    return {key_of(o): o for o in items(flux_support.kubectl(kubeconfig, "get", "-f", str(path), *flags, "-o", "json"))}


@dataclass(frozen=True)
class AppRepo:
    repo: Repo
    app_dir: Path  # repo.work / path
    path: str  # where the app directory sits in the repository (kfctl export --path)

    def commit_and_push(self, message: str, *others: str) -> str:
        """The app directory's committed parts (COMMITTED) and ``others`` (the export's directory)."""
        parts = [f"{self.path}/{p}" for p in COMMITTED if (self.app_dir / p).exists() or p in ("kustomize", "rendered")]
        return self.repo.commit_and_push(message, *parts, *others)


@contextlib.contextmanager
def app_repo(root: Path, name: str, *init: str, generate: bool = True) -> Iterator[AppRepo]:
    """A git repository served on 127.0.0.1 while the block runs, with `kfctl init clusters/<name> *init` (and
    `kfctl generate`) in its working copy; nothing committed yet."""
    (root / "served").mkdir(parents=True)
    with gitserver.serve(root / "served") as server:
        repo = flux_support.new_repo(root, server, "platform")
        path = f"clusters/{name}"
        app_dir = repo.work / path
        app_dir.parent.mkdir(parents=True)
        run_kfctl("init", str(app_dir), *init)
        if generate:
            run_kfctl("generate", str(app_dir))
        yield AppRepo(repo, app_dir, path)


def kfdef_without(app_dir: Path, removed: Sequence[str]) -> None:
    """The KfDef with the named applications taken out (a user's edit)."""
    path = app_dir / "kfdef.yaml"
    kfdef = yaml.safe_load(path.read_text())
    kfdef["spec"]["applications"] = [a for a in kfdef["spec"]["applications"] if a["name"] not in removed]
    path.write_text(yaml.safe_dump(kfdef, sort_keys=False))


# --- Argo CD --------------------------------------------------------------------------------------------------------


def export_argocd(app: AppRepo, output: str) -> None:
    """`kfctl export --format argocd --prune` of the app directory into ``output`` of the working copy."""
    run_kfctl(
        "export", str(app.app_dir), "--format", "argocd", "--repo-url", app.repo.url, "--path", app.path, "--prune",
        "--output-dir", str(app.repo.work / output),
    )  # fmt: skip


def exported_applications(directory: Path) -> dict[str, dict[str, Any]]:
    """Name → the Application kfctl export wrote into ``directory``."""
    docs = (yaml.safe_load(p.read_text()) for p in sorted(directory.glob("application-*.yaml")))
    return {d["metadata"]["name"]: d for d in docs}


def wave(app: dict[str, Any]) -> int:
    return int(app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])


@dataclass
class ArgoSync:
    api: kube_rest.Client
    argocd: ArgoCD
    seconds: float  # from handing the parent to Argo CD until every Application is Synced and Healthy
    applications: dict[str, dict[str, Any]]  # as read once all were
    secrets: list[str]  # the generated Secrets `kfctl secrets apply` created, as kfctl names them


@contextlib.contextmanager
def synced_by_argocd(
    kubeconfig: str,
    workdir: Path,
    *,
    argocd_cm: Path,
    application: str,
    names: Sequence[str],
    secrets_of: Path,
    revision: str,
    timeout: float,
    plugin_config: Path | None = None,
) -> Iterator[ArgoSync]:
    """As docs/gitops.md tells a user: Argo CD's own objects, the export's ``argocd_cm`` merged into its argocd-cm
    (server-side apply), its processes running (with ``plugin_config``: kfctl's plugin), ``application`` (YAML)
    applied, `kfctl secrets apply secrets_of` once namespace kubeflow exists; yields once every Application of
    ``names`` is Synced and Healthy at ``revision``. On leaving, no socket of Argo CD's but its metrics listener is
    off loopback."""
    argocd_support.install(kubeconfig)
    flux_support.kubectl(kubeconfig, "apply", "--server-side", "--field-manager=kfctl", "-f", str(argocd_cm))
    api = kube_rest.Client(kubeconfig)
    try:
        with argocd_support.run_argocd(kubeconfig, workdir, plugin_config=plugin_config) as argocd:
            start = time.monotonic()
            flux_support.kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=application)
            argocd_support.wait_for(
                lambda: api.get("/api/v1/namespaces/kubeflow") is not None,
                api=api,
                argocd=argocd,
                timeout=300,
                what="Argo CD to create namespace kubeflow",
            )
            made = run_kfctl("secrets", "apply", str(secrets_of), "-o", "json", "--kubeconfig", kubeconfig).stdout
            found = argocd_support.wait_all(api, list(names), timeout=timeout, argocd=argocd, revision=revision)
            seconds = time.monotonic() - start
            print(f"\nArgo CD: every Application Synced and Healthy {seconds:.1f} s after the first was applied")
            secrets = sorted(s["object"] for s in json.loads(made)["secrets"] if s["result"] == "created")
            yield ArgoSync(api, argocd, seconds, found, secrets)
            sockets = argocd.non_loopback_sockets()
            assert set(sockets) <= {argocd_support.ALL_INTERFACES_LISTENER}, sockets
    finally:
        api.close()


@dataclass
class ArgoPlatform:
    """A platform exported for Argo CD and synced by it (``exported_to_argocd``)."""

    kubeconfig: str
    app: AppRepo
    export: str  # the export's directory in the repository
    commit: str  # the commit every Application was Synced and Healthy at
    sync: ArgoSync

    @property
    def app_dir(self) -> Path:
        return self.app.app_dir

    def exported(self) -> dict[str, dict[str, Any]]:
        """Name → the Application kfctl export wrote (as committed last)."""
        return exported_applications(self.app.repo.work / self.export)


@contextlib.contextmanager
def exported_to_argocd(
    root: Path, kubeconfig: str, name: str, *init: str, export: str, parent: str, timeout: float
) -> Iterator[ArgoPlatform]:
    """`kfctl init clusters/<name> *init` and `generate` in a repository served on 127.0.0.1, `kfctl export --format
    argocd --prune` into ``export``, both committed and pushed, and Argo CD syncing it through one parent
    app-of-apps (``parent``) to every Application Synced and Healthy."""
    with app_repo(root, name, *init) as app:
        export_argocd(app, export)
        commit = app.commit_and_push(f"kfctl platform {name}: first export", export)
        with synced_by_argocd(
            kubeconfig,
            root / "argocd",
            argocd_cm=app.repo.work / export / "argocd-cm.yaml",
            application=argocd_support.parent_application(parent, app.repo.url, export),
            names=[parent, *exported_applications(app.repo.work / export)],
            secrets_of=app.app_dir,
            revision=commit,
            timeout=timeout,
        ) as sync:
            yield ArgoPlatform(kubeconfig, app, export, commit, sync)
