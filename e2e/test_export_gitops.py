"""`kfctl export` output is accepted by a real API server under Argo CD's and Flux's own CRDs.

e2e/crds/ holds the CRDs e2e/gen-gitops-crds generates with controller-gen from the engines' Go API types at the
releases e2e/versions.env pins (Argo CD v3.2.11's Application, ApplicationSet and AppProject; Flux
source-controller v1.7.0's and kustomize-controller v1.7.2's kinds); the first test regenerates them and finds
the files the same (it needs Go and fails, never skips, without it). They are created for real, then the export
of a kind platform goes through `kubectl apply --dry-run=server --validate=strict`, from stdout and from
--output-dir (with --prune, so the keep patches and finalizers are checked too). A deliberately broken copy must
fail the same dry run, which shows the schemas do check something. Flux's controllers reconcile the export for
real in e2e/test_gitops_flux.py, Argo CD's in e2e/test_gitops_argocd.py.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import poll
from kfctl_testbed import flux as flux_support

from kfctl import yamlio

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent
CRDS = Path(__file__).resolve().parent / "crds"
CRD_NAMES = (
    "applications.argoproj.io", "applicationsets.argoproj.io", "appprojects.argoproj.io", *flux_support.CRD_NAMES
)  # fmt: skip


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("kubectl")
    assert exe, "kubectl is needed for the server-side dry run"
    return subprocess.run(
        [exe, "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True, text=True, timeout=180
    )


def kfctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kfctl.cli.main", *args], capture_output=True, text=True, timeout=300, cwd=REPO
    )


def test_the_crds_are_what_the_engines_go_types_generate() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "e2e" / "gen-gitops-crds"), "--check"],
        capture_output=True,
        text=True,
        timeout=1800,  # cold: builds controller-gen and downloads the engines' API modules
    )
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def gitops_crds(kubeconfig: str) -> str:
    out = kubectl(kubeconfig, "apply", "--server-side", "--field-manager=kfctl-e2e", "-f", str(CRDS))
    assert out.returncode == 0, out.stderr
    # Polled: `kubectl wait --for=condition=Established` on a CRD just created fails while it has no conditions yet
    # (".status.conditions accessor error: <nil> is of the type <nil>", seen with the large ApplicationSet CRD).
    established = ("wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{n}" for n in CRD_NAMES))
    poll(
        lambda: kubectl(kubeconfig, *established).returncode == 0,
        timeout=120,
        interval=1,
        what="the engines' CRDs to be Established",
    )
    namespaces = "".join(
        f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {n}}}\n" for n in ("argocd", "flux-system")
    )
    out = kubectl(kubeconfig, "apply", "-f", "-", stdin=namespaces)
    assert out.returncode == 0, out.stderr
    return kubeconfig


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    app = tmp_path_factory.mktemp("export") / "platform"
    for args in (("init", str(app), "--platform", "kind"), ("generate", str(app))):
        out = kfctl(*args)
        assert out.returncode == 0, out.stderr
    return app


def dry_run(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return kubectl(kubeconfig, "apply", "--dry-run=server", "--validate=strict", *args, stdin=stdin)


@pytest.mark.parametrize("fmt", ["argocd", "flux"])
def test_export_passes_a_strict_server_side_dry_run(gitops_crds: str, app_dir: Path, tmp_path: Path, fmt: str) -> None:
    args = ["export", str(app_dir), "--format", fmt, "--repo-url", "https://git.example.com/ml/platform.git"]
    out = kfctl(*args, "--path", "clusters/e2e", "--revision", "refs/tags/v1.0.0", "--prune")
    assert out.returncode == 0, out.stderr
    docs: list[dict[str, Any]] = [d for d in yamlio.safe_load_all(out.stdout) if d]
    kinds = {d["kind"] for d in docs}
    assert kinds == ({"Application"} if fmt == "argocd" else {"GitRepository", "Kustomization"})
    assert {"platform-kserve", "platform-kserve-admitted"} <= {d["metadata"]["name"] for d in docs}
    result = dry_run(gitops_crds, "-f", "-", stdin=out.stdout)
    assert result.returncode == 0, result.stderr
    for d in docs:
        assert (
            f"{d['kind'].lower()}.{d['apiVersion'].split('/')[0]}/{d['metadata']['name']} created (server dry run)"
            in (result.stdout)
        ), result.stdout

    written = kfctl(*args, "--output-dir", str(tmp_path / "gitops"))
    assert written.returncode == 0, written.stderr
    result = dry_run(gitops_crds, "-k", str(tmp_path / "gitops"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("created (server dry run)") == len(docs)

    # The schemas bite: an unknown field and a wrong type in a copy are both refused.
    broken = copy.deepcopy(docs[-1])
    broken["spec"]["bogusField"] = True
    if fmt == "argocd":
        broken["spec"]["syncPolicy"]["automated"]["prune"] = "yes"
    else:
        broken["spec"]["sourceRef"]["kind"] = "HelmRepository"
    refused = dry_run(gitops_crds, "-f", "-", stdin=yaml.safe_dump(broken))
    assert refused.returncode != 0
    assert "bogusField" in refused.stderr, refused.stderr


def test_the_fleets_applicationset_passes_a_strict_server_side_dry_run(
    gitops_crds: str, app_dir: Path, tmp_path: Path
) -> None:
    """--fleet's applicationset.yaml (the parents' Go templates are strings to the schema, the rest is checked)."""
    out_dir = app_dir.parent / "argocd-fleet"
    written = kfctl(
        "export", str(app_dir), "--format", "argocd", "--repo-url", "https://git.example.com/ml/platform.git",
        "--path", app_dir.name, "--prune", "--output-dir", str(out_dir), "--fleet", "kubeflow.org/fleet=prod",
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    appset = out_dir / "applicationset.yaml"
    result = dry_run(gitops_crds, "-f", str(appset))
    assert result.returncode == 0, result.stderr
    assert "applicationset.argoproj.io/platform created (server dry run)" in result.stdout, result.stdout
    broken = yaml.safe_load(appset.read_text())
    broken["spec"]["template"]["spec"]["bogusField"] = True
    broken["spec"]["goTemplate"] = "yes"
    refused = dry_run(gitops_crds, "-f", "-", stdin=yaml.safe_dump(broken))
    assert refused.returncode != 0
    assert "bogusField" in refused.stderr, refused.stderr
