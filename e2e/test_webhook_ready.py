"""`kfctl apply` exits healthy only once the platform accepts work: with the real training operator, a TFJob
created the moment apply exits — no sleep, no retry — is admitted by the operator's webhook, on every fresh
install.

The training operator reports Ready before it registers its webhook handlers; the API server's call then fails
with the server's 404 ("the server could not find the requested resource"). apply now waits until the
webhook's server serves the webhook's path (a dry-run review through the API server's service proxy), and says
so by name while it waits. Each cycle installs the operator afresh (a new process, a new start-up race) and
deletes it after. KFCTL_E2E_WEBHOOK_CYCLES sets how many (3 in CI; the note's figure is from 20).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from apply_support import kfctl, kubectl
from harness import Cluster
from runtime_support import tfjob

pytestmark = pytest.mark.e2e

CYCLES = int(os.environ.get("KFCTL_E2E_WEBHOOK_CYCLES", "3"))
BACKEND = "webhook backend kubeflow/training-operator"


def test_a_tfjob_created_the_moment_apply_exits_is_admitted_on_every_fresh_install(
    fresh_cluster: Cluster, tmp_path: Path
) -> None:
    kubeconfig = fresh_cluster.kubeconfig
    app = tmp_path / "platform"
    assert kfctl("init", str(app), "--platform", "kind", "-c", "training-operator", kubeconfig=kubeconfig).code == 0
    job = tmp_path / "tfjob.yaml"
    job.write_text(yaml.safe_dump(tfjob("right-after-apply")))  # the runtime tests' TFJob
    accepted, waits = 0, []
    for cycle in range(CYCLES):
        run = kfctl("apply", str(app), "--wait-timeout", "5m", kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()
        created = subprocess.run(
            ["kubectl", "--kubeconfig", kubeconfig, "create", "-f", str(job)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert created.returncode == 0, f"cycle {cycle + 1}: {created.stderr}"
        accepted += 1
        # What apply waited for, by name, before it called the backend healthy (the handler, when it raced).
        waits.append(
            sorted({e.get("message", "") for e in run.events if e["event"] == "Waiting" and e["subject"] == BACKEND})
        )
        kubectl(kubeconfig, "delete", "-f", str(job), "--wait=true")
        gone = kfctl("delete", str(app), "--wait-timeout", "3m", kubeconfig=kubeconfig)
        assert gone.code == 0, gone.explain()
    handler_waits = sum(any("does not serve" in m for m in w) for w in waits)
    print(
        f"\n{accepted}/{CYCLES} TFJobs admitted right after apply; apply waited for the webhook's handler in "
        f"{handler_waits} of them ({BACKEND})"
    )
