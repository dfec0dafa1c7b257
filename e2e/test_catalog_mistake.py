"""A mistake in the catalog's RBAC is caught by running the real operator, not by any schema or dry run.

A copy of the catalog whose training-operator ClusterRole lacks the rule for pods installs cleanly (every
object is valid), but the operator, running with exactly the RBAC kfctl installed for its ServiceAccount,
cannot list or create pods: the seed TFJob never gets its pods, and the operator's log says why.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from apply_support import REPO, kfctl
from harness import poll
from kfctl_testbed import kube_rest
from runtime_support import TFJOBS, create_tfjob, live_operator_pods, operator_logs, tfjob

pytestmark = pytest.mark.e2e

POD_RULE = '  - apiGroups: [""]\n    resources: [pods]\n    verbs: [create, delete, get, list, patch, update, watch]\n'


def catalog_without_pod_rule(root: Path) -> Path:
    for part in ("manifests", "overlays", "platforms"):
        shutil.copytree(REPO / part, root / part)
    rbac = root / "manifests" / "training-operator" / "rbac.yaml"
    text = rbac.read_text()
    assert text.count(POD_RULE) == 1, "the catalog's pod rule moved: update POD_RULE"
    rbac.write_text(text.replace(POD_RULE, ""))
    return root


def forbidden_lines(api: kube_rest.Client, runtime: Path) -> list[str]:
    """Forbidden lines in the logs of the operator pods that exist now (not those of earlier tests' installs)."""
    logs = operator_logs(runtime)
    return [
        line
        for pod in live_operator_pods(api)
        for line in logs.get(pod["metadata"]["name"], "").splitlines()
        if 'pods is forbidden: User "system:serviceaccount:kubeflow:training-operator"' in line
    ]


def test_a_clusterrole_missing_the_pod_rule_leaves_the_tfjob_without_pods_and_the_log_says_why(
    kubeconfig: str, pod_runtime: Path, tmp_path: Path
) -> None:
    repo = catalog_without_pod_rule(tmp_path / "repo")
    app = tmp_path / "app"
    run = kfctl("init", str(app), "--platform", "kind", "--components", "training-operator", kubeconfig=kubeconfig)
    assert run.code == 0, run.explain()
    kfdef = app / "kfdef.yaml"
    kfdef.write_text(kfdef.read_text().replace("uri: kfctl://catalog", f"uri: {repo}"))
    api = kube_rest.Client(kubeconfig)
    try:
        for args in (("generate", str(app)), ("apply", str(app), "--wait-timeout", "4m")):
            run = kfctl(*args, kubeconfig=kubeconfig)
            # Every object is valid: the install itself succeeds.
            assert run.code == 0, run.explain()
        create_tfjob(api, tfjob("rbac-seed"))
        lines = poll(
            lambda: forbidden_lines(api, pod_runtime),
            timeout=120,
            what="the training operator to log that its ServiceAccount may not use pods",
        )
        print(f"\nthe operator's log names the catalog's mistake:\n{lines[0]}", file=sys.stderr)
        assert 'cannot list resource "pods" in API group ""' in "\n".join(lines)
        pods = api.list(
            "/api/v1/namespaces/kubeflow/pods", query={"labelSelector": "training.kubeflow.org/job-name=rbac-seed"}
        )
        assert pods == []
    finally:
        api.delete(f"{TFJOBS}/rbac-seed")
        api.close()
        run = kfctl("delete", str(app), "--wait-timeout", "3m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
