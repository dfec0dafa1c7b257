"""The health checks `kfctl export --format argocd` writes into argocd-cm.yaml, evaluated by Argo CD itself.

`argocd admin settings resource-overrides health OBJ --argocd-cm-path argocd-cm.yaml` (the binary
`e2e/build-binaries --argocd` builds, v3.2.11) runs a check's Lua as the application controller does, on an
object and the exported snippet: a table of objects and the status and message Argo CD gives each. No cluster.
The checks at work on the real controller: e2e/test_gitops_argocd.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kfctl_testbed import localcluster

from kfctl.catalog.load import load_catalog
from kfctl.config.loader import load_kfdef
from kfctl.health.registry import health_of
from kfctl.health.waitrules import SHIPPED

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent


def run_kfctl(*args: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kfctl.cli.main", *args], capture_output=True, text=True, timeout=600, cwd=REPO
    )
    assert proc.returncode == 0, f"kfctl {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"


@pytest.fixture(scope="module")
def argocd_binaries() -> Path:
    """Argo CD, built by `e2e/build-binaries --argocd` (make setup): fails, never skips, without it."""
    return localcluster.require_built("--print-argocd-dir", "KFCTL_E2E_ARGOCD_DIR", ("argocd",), "Argo CD", "--argocd")


def argo_cds_verdict(bin_dir: Path, argocd_cm: Path, tmp_path: Path, obj: dict[str, Any]) -> list[str]:
    """What `argocd admin settings resource-overrides health` prints for ``obj`` with ``argocd_cm``'s checks."""
    (tmp_path / "obj.yaml").write_text(yaml.safe_dump(obj))
    argv = [str(bin_dir / "argocd"), "admin", "settings", "resource-overrides", "health", "obj.yaml"]
    argv += ["--argocd-cm-path", str(argocd_cm)]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def _app(sync: str | None, health: str | None, message: str | None = None, failed: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"operationState": {"phase": "Failed", "message": failed}} if failed else {}
    if sync:
        status["sync"] = {"status": sync}
    if health:
        status["health"] = {"status": health, **({"message": message} if message else {})}
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "a"}, "status": status}


def _obj(api: str, kind: str, status: dict[str, Any] | None = None, **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "o", "namespace": "kubeflow"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": api, "kind": kind, "metadata": meta, **({"status": status} if status else {})}


def _cond(kind: str, message: str, status: str = "True") -> dict[str, Any]:
    return {"type": kind, "status": status, "message": message}


@pytest.fixture(scope="module")
def exported_argocd_cm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("argocd-cm")
    run_kfctl("init", str(root / "app"), "--platform", "kind")
    run_kfctl("export", str(root / "app"), "--format", "argocd", "--repo-url", "u", "--output-dir", str(root / "out"))
    return root / "out" / "argocd-cm.yaml"


NOTEBOOK = "kubeflow.org/v1"
CRD = "apiextensions.k8s.io/v1"
WAITING = {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}


@pytest.mark.parametrize(
    ("obj", "verdict"),
    [
        pytest.param(_app(None, None), ("Progressing", "waiting for the Application to sync"), id="app-new"),
        pytest.param(_app("OutOfSync", "Healthy"), ("Progressing", "not synced yet"), id="app-not-synced"),
        pytest.param(
            _app("Synced", "Missing"), ("Progressing", "waiting for the Application to sync"), id="app-missing"
        ),
        pytest.param(_app("Synced", "Healthy"), ("Healthy", "synced and healthy"), id="app-healthy"),
        pytest.param(
            _app("Synced", "Degraded", "cert not issued"),
            ("Progressing", "degraded for now: cert not issued"),
            id="app-degraded-after-sync",
        ),
        pytest.param(
            _app("OutOfSync", "Degraded", "x", failed="one or more objects failed to apply"),
            ("Degraded", "one or more objects failed to apply"),
            id="app-sync-failed",
        ),
        pytest.param(_obj(CRD, "CustomResourceDefinition"), ("Progressing", "waiting for Established"), id="crd-new"),
        pytest.param(
            _obj(CRD, "CustomResourceDefinition", {"conditions": [_cond("NamesAccepted", "no conflicts found")]}),
            ("Progressing", "waiting for Established"),
            id="crd-not-established-yet",
        ),
        pytest.param(
            _obj(
                CRD,
                "CustomResourceDefinition",
                {"conditions": [_cond("Established", "the initial names have been accepted")]},
            ),
            ("Healthy", "the initial names have been accepted"),
            id="crd-established",
        ),
        pytest.param(
            _obj(
                CRD,
                "CustomResourceDefinition",
                {
                    "conditions": [
                        _cond("NamesAccepted", '"tfjobs" is already in use', "False"),
                        _cond("Established", "x", "False"),
                    ]
                },
            ),
            ("Degraded", '"tfjobs" is already in use'),
            id="crd-names-refused",
        ),
        pytest.param(_obj("kubeflow.org/v1", "Profile"), ("Healthy", "no failure reported"), id="profile-made"),
        pytest.param(
            _obj("kubeflow.org/v1", "Profile", {"conditions": [{"type": "Failed", "message": "namespace is taken"}]}),
            ("Degraded", "namespace is taken"),
            id="profile-failed",
        ),
        pytest.param(_obj(NOTEBOOK, "Notebook"), ("Progressing", "waiting for the notebook's pod"), id="nb-new"),
        pytest.param(_obj(NOTEBOOK, "Notebook", {"readyReplicas": 1}), ("Healthy", "ready"), id="nb-ready"),
        pytest.param(
            _obj(NOTEBOOK, "Notebook", {"readyReplicas": 0}, **{"kubeflow-resource-stopped": "2026-01-01T00:00:00Z"}),
            ("Suspended", "stopped"),
            id="nb-stopped",
        ),
        pytest.param(
            _obj(NOTEBOOK, "Notebook", {"readyReplicas": 0, "containerState": WAITING}),
            ("Degraded", "ImagePullBackOff: Back-off pulling image"),
            id="nb-image-pull",
        ),
        pytest.param(
            _obj("trainer.kubeflow.org/v1alpha1", "TrainJob", {"conditions": [_cond("Complete", "done")]}),
            ("Healthy", "done"),
            id="trainjob-complete",
        ),
        pytest.param(
            _obj("trainer.kubeflow.org/v1alpha1", "TrainJob", {"conditions": [_cond("Failed", "OOMKilled")]}),
            ("Degraded", "OOMKilled"),
            id="trainjob-failed",
        ),
        pytest.param(
            _obj("kubeflow.org/v1", "PyTorchJob", {"conditions": [_cond("Running", "r"), _cond("Succeeded", "s")]}),
            ("Healthy", "s"),
            id="pytorchjob-succeeded",
        ),
        pytest.param(
            _obj("kubeflow.org/v1beta1", "Experiment", {"conditions": [_cond("Succeeded", "s", "False")]}),
            ("Progressing", "waiting for the Experiment"),
            id="experiment-running",
        ),
    ],
)
def test_argo_cd_evaluates_the_exported_health_checks(
    argocd_binaries: Path, exported_argocd_cm: Path, tmp_path: Path, obj: dict[str, Any], verdict: tuple[str, str]
) -> None:
    """Argo CD's own `argocd admin settings resource-overrides health` on the argocd-cm.yaml the export writes."""
    assert argo_cds_verdict(argocd_binaries, exported_argocd_cm, tmp_path, obj) == [
        f"STATUS: {verdict[0]}",
        f"MESSAGE: {verdict[1]}",
    ]


# A KfDef's own wait rules (spec.waitRules): the export writes each as a health check of its kind.
WAIT_RULES = [
    {
        "apiGroup": "db.example.com",
        "kind": "Database",
        "ready": [{"condition": "Deployed"}],
        "failed": [{"condition": "Failed"}, {"field": "status.phase", "equals": "Error"}],
    },
    {"apiGroup": "example.com", "kind": "Pool", "ready": [{"field": "status.readyReplicas", "equals": 3}]},
]


@pytest.fixture(scope="module")
def exported_with_wait_rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("argocd-cm-rules")
    run_kfctl("init", str(root / "app"), "--platform", "kind")
    kfdef = yaml.safe_load((root / "app" / "kfdef.yaml").read_text())
    kfdef["spec"]["waitRules"] = WAIT_RULES
    (root / "app" / "kfdef.yaml").write_text(yaml.safe_dump(kfdef, sort_keys=False))
    run_kfctl("export", str(root / "app"), "--format", "argocd", "--repo-url", "u", "--output-dir", str(root / "out"))
    return root / "out" / "argocd-cm.yaml"


DB = "db.example.com/v1"


@pytest.mark.parametrize(
    ("obj", "verdict"),
    [
        pytest.param(_obj(DB, "Database"), ("Progressing", "waiting for Deployed"), id="db-new"),
        pytest.param(_obj(DB, "Database", {"conditions": [_cond("Deployed", "up")]}), ("Healthy", "up"), id="db-up"),
        pytest.param(
            _obj(DB, "Database", {"phase": "Error", "conditions": [_cond("Deployed", "up")]}),
            ("Degraded", "status.phase is Error"),
            id="db-failed-field-first",
        ),
        pytest.param(
            _obj(DB, "Database", {"conditions": [_cond("Failed", "disk full")]}),
            ("Degraded", "disk full"),
            id="db-fail",
        ),
        pytest.param(
            _obj(DB, "Database", {"conditions": [_cond("Deployed", "no", "False")]}),
            ("Progressing", "waiting for Deployed"),
            id="db-deploying",
        ),
        pytest.param(
            _obj("example.com/v1", "Pool", {"readyReplicas": 3}),
            ("Healthy", "status.readyReplicas is 3"),
            id="number-as-text",
        ),
        pytest.param(
            _obj("example.com/v1", "Pool", {"readyReplicas": 2}),
            ("Progressing", "waiting for status.readyReplicas=3"),
            id="number-not-yet",
        ),
    ],
)
def test_argo_cd_evaluates_a_kfdefs_wait_rules_as_kfctl_does(
    argocd_binaries: Path, exported_with_wait_rules: Path, tmp_path: Path, obj: dict[str, Any], verdict: tuple[str, str]
) -> None:
    """The same objects, judged by kfctl (kfctl.health.waitrules) and by Argo CD on the exported check, agree."""
    assert argo_cds_verdict(argocd_binaries, exported_with_wait_rules, tmp_path, obj) == [
        f"STATUS: {verdict[0]}",
        f"MESSAGE: {verdict[1]}",
    ]
    kfdef = load_kfdef(exported_with_wait_rules.parent.parent / "app" / "kfdef.yaml", load_catalog())
    kfctl = health_of(obj, age_seconds=60.0, wait_rules=SHIPPED.with_overrides(kfdef.wait_rules))
    assert {"ready": "Healthy", "failed": "Degraded", "progressing": "Progressing"}[kfctl.state] == verdict[0], kfctl
