"""Upstream's own platform test for the training operator, read from the kubeflow/manifests v1.11.0 release at test
time (never copied), run against the platform kfctl installs from its built-in catalog.

`tests/training_operator_test.sh` applies upstream's PyTorchJob (`tests/training_operator_job.yaml`) into a
namespace, waits for the real training operator to mark it Created, for its master and worker pods to be Ready and
for the job to Succeed. The v1.11.0 full platform does not install the training operator (its example comments
it out: Trainer replaced it), so this runs where it applies: the built-in platform's default components. kwok
plays the training pods, running 60 s (CLUSTER_UP_ARGS): the script waits for each pod to be Ready before it
waits for the job. (The Trainer test and PSS_enable.sh run against the full platform: test_full_platform.py.)
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from apply_support import kfctl, kubectl
from full_platform_support import FIXTURES, unpack_release
from harness import Cluster
from kfctl_testbed import upstream_mirror

pytestmark = pytest.mark.e2e

CLUSTER_UP_ARGS = ("--training-seconds", "60")
NAMESPACE = "e2e-upstream-training"


def test_upstreams_training_operator_test_passes_on_the_built_in_platform(
    module_cluster: Cluster, tmp_path: Path
) -> None:
    if not (FIXTURES / upstream_mirror.RELEASES["v1.11.0"]).is_file():
        pytest.skip(f"{FIXTURES} holds no kubeflow/manifests v1.11.0 (see ../shared/fixtures/README.md)")
    kubeconfig = module_cluster.kubeconfig
    release = unpack_release("v1.11.0", tmp_path / "release")
    app = tmp_path / "platform"
    assert kfctl("init", str(app), "--platform", "kind", kubeconfig=kubeconfig).code == 0
    run = kfctl("apply", str(app), "--wait-timeout", "5m", kubeconfig=kubeconfig, timeout=1200)
    assert run.code == 0, run.explain()
    kubectl(kubeconfig, "create", "namespace", NAMESPACE)
    script = subprocess.run(
        ["bash", "tests/training_operator_test.sh", NAMESPACE],
        cwd=release,
        env={**os.environ, "KUBECONFIG": kubeconfig},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert script.returncode == 0, script.stdout[-3000:] + script.stderr[-3000:]
    print(f"\ntests/training_operator_test.sh {NAMESPACE}:", script.stdout.strip().splitlines()[-1])
