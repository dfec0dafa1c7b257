"""One run at a time per install, on a real API server: the second run waits for the first or stops naming it,
and a run killed with -9 is taken over at once when it ran on this machine (its process is gone), else once its
Lease expires. Runs are real `kfctl apply` processes.

The bundle holds a Deployment with ``minReadySeconds``, so an apply stays inside its lock for that long
(it waits for the Deployment to be Available) and the other run certainly meets it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from apply_support import REPO, Run, kfctl, kubectl, write_local_kfdef
from harness import poll

pytestmark = pytest.mark.e2e


def bundle(ns: str, *, ready_after: int) -> list[dict[str, Any]]:
    labels = {"app": "slow"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": ns},
            "data": {"a": "1"},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "slow", "namespace": ns},
            "spec": {
                "replicas": 1,
                "minReadySeconds": ready_after,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "x.invalid/c"}]},
                },
            },
        },
    ]


def start_apply(app_dir: Path, kubeconfig: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "kfctl.cli.main", "apply", str(app_dir), "-o", "json", "--kubeconfig", kubeconfig]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def lease_holder(kubeconfig: str, ns: str, install: str) -> str:
    out = kubectl(kubeconfig, "get", "lease", "-n", ns, f"kfctl-lock-{install}", "-o", "json", check=False)
    return str((json.loads(out).get("spec") or {}).get("holderIdentity") or "") if out else ""


def wait_until_held(kubeconfig: str, ns: str, install: str, timeout: float = 120) -> str:
    return poll(
        lambda: lease_holder(kubeconfig, ns, install), timeout=timeout, what=f"a run to take the lock of {install}"
    )


def inventory_members(kubeconfig: str, ns: str, install: str) -> list[dict[str, str]]:
    cm = json.loads(kubectl(kubeconfig, "get", "configmap", "-n", ns, f"kfctl-inventory-{install}", "-o", "json"))
    members: list[dict[str, str]] = json.loads(cm["data"]["objects.json"])
    return members


def finish(proc: subprocess.Popen[str]) -> tuple[int, list[dict[str, Any]], str]:
    out, err = proc.communicate(timeout=600)
    events = [json.loads(line) for line in out.splitlines() if line.startswith('{"event"')]
    return proc.returncode, events, err


def assert_converged(kubeconfig: str, ns: str, install: str) -> None:
    members = inventory_members(kubeconfig, ns, install)
    assert sorted((m["kind"], m["name"]) for m in members) == [
        ("ConfigMap", "settings"),
        ("Deployment", "slow"),
        ("Namespace", ns),
    ]
    for m in members:
        live = json.loads(
            kubectl(
                kubeconfig, "get", m["kind"].lower(), m["name"], *(["-n", ns] if m["namespace"] else []), "-o", "json"
            )
        )
        assert live["metadata"]["uid"] == m["uid"], m


def test_a_second_apply_waits_for_the_first_and_both_converge(tmp_path: Path, kubeconfig: str) -> None:
    ns, install = "e2e-lock-wait", "e2e-lock-wait"
    # The first holds the lock until its Deployment is ready, 20 s: the second must reach the lock before that.
    # With 6 s, at load 8, the second started after the first had ended and never waited (no Waiting event).
    write_local_kfdef(tmp_path, name=install, namespace=ns, apps={"slow": bundle(ns, ready_after=20)})
    first = start_apply(tmp_path, kubeconfig)
    holder = wait_until_held(kubeconfig, ns, install)
    assert holder.split("/")[1] == str(first.pid)
    second = kfctl("apply", str(tmp_path), "--lock-timeout", "120s", kubeconfig=kubeconfig)
    code, _, err = finish(first)
    assert code == 0, err
    assert second.code == 0, second.explain()
    waited = [e["message"] for e in second.events if e["event"] == "Waiting" and e["subject"] == "lock"]
    assert len(waited) == 1 and f"pid {first.pid})" in waited[0] and "`kfctl apply`" in waited[0], waited
    assert_converged(kubeconfig, ns, install)
    assert lease_holder(kubeconfig, ns, install) == ""  # removed at the end of the run


def test_a_second_apply_that_cannot_wait_stops_naming_the_holder(tmp_path: Path, kubeconfig: str) -> None:
    ns, install = "e2e-lock-busy", "e2e-lock-busy"
    write_local_kfdef(tmp_path, name=install, namespace=ns, apps={"slow": bundle(ns, ready_after=20)})
    first = start_apply(tmp_path, kubeconfig)
    wait_until_held(kubeconfig, ns, install)
    second = kfctl("apply", str(tmp_path), "--lock-timeout", "2s", kubeconfig=kubeconfig)
    assert second.code == 12, second.explain()
    assert second.error["message"].startswith("another kfctl run holds this install's lock: `kfctl apply` (host ")
    assert f", pid {first.pid}) since " in second.error["message"]
    assert second.error["message"].endswith(f"; Lease {ns}/kfctl-lock-{install}")
    code, _, err = finish(first)
    assert code == 0, err
    assert_converged(kubeconfig, ns, install)


# What a holder on another machine (or in another container) leaves in the Lease: a boot id not this one's.
ELSEWHERE = "00000000-0000-0000-0000-000000000000/pid:[4026531836]/0/4242/7031051"


@pytest.mark.parametrize("where", ["this-machine", "another-machine"])
def test_a_holder_killed_with_sigkill_is_taken_over_at_once_here_else_once_its_lease_expires(
    where: str, tmp_path: Path, kubeconfig: str
) -> None:
    ns = install = f"e2e-lock-kill-{where}"
    write_local_kfdef(tmp_path, name=install, namespace=ns, apps={"slow": bundle(ns, ready_after=30)})
    first = start_apply(tmp_path, kubeconfig)
    wait_until_held(kubeconfig, ns, install)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=30)
    killed_at = time.time()
    if where == "another-machine":  # as if it had run elsewhere: this machine cannot tell it ended
        record = f"kfctl.kubeflow.org/holder-process={ELSEWHERE}"
        kubectl(kubeconfig, "-n", ns, "annotate", "--overwrite", f"lease/kfctl-lock-{install}", record)
    second: Run = kfctl("apply", str(tmp_path), "--lock-timeout", "90s", kubeconfig=kubeconfig)
    assert second.code == 0, second.explain()
    took = [e for e in second.events if e["subject"] == "lock" and "took over" in e.get("message", "")]
    assert len(took) == 1 and f"pid {first.pid})" in took[0]["message"], second.events
    waited = took[0]["ts"] - killed_at  # event times are wall-clock seconds, like killed_at
    print(f"\nFIGURES lock takeover after kill -9 ({where}): the lock was taken over {waited:.1f}s after the kill")
    if where == "this-machine":  # its process is gone, and the Lease says which it was: no wait
        assert took[0]["message"].endswith("ended on this machine without freeing it"), took
        assert waited < 10
    else:  # not before the lease's 20 s were up on the second run's own clock, and not much later
        assert took[0]["message"].endswith("stopped renewing it"), took
        assert 20 <= waited < 90
    assert_converged(kubeconfig, ns, install)
